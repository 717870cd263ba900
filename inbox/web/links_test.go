package web_test

import (
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/question"
)

var (
	openLink   = regexp.MustCompile(`Open it without logging in \(this link works once, until [^)]+\): (\S+)`)
	optionLink = regexp.MustCompile(`(?m)^  ([^:]+): (\S+\?pick=\S+)$`)
)

// Issue 32, point 9: the notice email opens its question in two taps. Its
// link opens the form logged in, for that one question only, once, until
// it expires; for a yes/no or single choice, a link per option answers
// with one confirming click. Opening a link uses nothing up (a mail
// scanner's fetch answers nothing); the click's POST does, and is refused
// from another origin like every other door. On a phone and a laptop.
func TestTheEmailsLinkOpensItsOneQuestionOnceAndAnOptionLinkAnswers(t *testing.T) {
	mail := startSMTP(t)
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	env := approvalEnv(t, false)
	in := startInboxWith(t, func(c *web.Config) {
		c.Mailer = &web.Mailer{Addr: mail.addr, From: "inbox@example.com"}
		c.Now = clock
	})
	ctx := newBrowser(t)

	type sent struct{ form, yes, no string }
	next := func(what string) sent {
		t.Helper()
		_, body := mail.next(t, what)
		var s sent
		if m := openLink.FindStringSubmatch(body); m != nil {
			s.form = m[1]
		}
		for _, m := range optionLink.FindAllStringSubmatch(body, -1) {
			switch m[1] {
			case "Yes, pay":
				s.yes = m[2]
			case "No":
				s.no = m[2]
			}
		}
		if s.form == "" || s.yes == "" || s.no == "" || !strings.HasPrefix(s.form, in.url+"/l/") {
			t.Fatalf("%s: the email lacks its links:\n%s", what, body)
		}
		return s
	}

	// The form's link, on a phone: the question's form, logged in.
	first, c := deferTo(t, env, in.ib, "approval", "Pay invoice INV-7: 80 EUR to ACME")
	links := next("the first notice")
	do(t, ctx, "open the link", viewport(390, 844), chromedp.Navigate(links.form), chromedp.WaitVisible(sel("#go")))
	shot(t, ctx, "link-confirm-390")
	do(t, ctx, "the one click", chromedp.Click(sel("#go")), chromedp.WaitVisible(sel("#answer")))
	if loc := val(t, ctx, "location", chromedp.Location()); loc != in.url+"/q/"+itoa(first.ID) {
		t.Errorf("the link's click led to %s; want the question's form", loc)
	}
	if w := js[int64](t, ctx, "scrollWidth", `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the form the link opens is %d px wide on a phone", w)
	}
	// That session is for this question only; the link is used up.
	do(t, ctx, "the list", chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#token")))
	do(t, ctx, "the link again", chromedp.Navigate(links.form), chromedp.WaitVisible(sel(".problem")))
	if got := val(t, ctx, "the used link", chromedp.Text(sel("h1"))); got != "This link no longer works" {
		t.Errorf("a used link shows %q", got)
	}

	// An option's link, on a laptop: one confirming click answers.
	second, _ := deferTo(t, env, in.ib, "approval", "Pay invoice INV-8: 90 EUR to ACME")
	links = next("the second notice")
	hc := &http.Client{}
	if code, _ := get(t, hc, links.yes); code != http.StatusOK {
		t.Fatalf("a scanner's GET of the option link: %d", code)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, links.yes, nil)
	req.Header.Set("Origin", "http://evil.example")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("the option link posted from another origin: %d, want 403", res.StatusCode)
	}
	do(t, ctx, "open the yes link", viewport(1280, 900), chromedp.Navigate(links.yes), chromedp.WaitVisible(sel("#go")))
	if got := val(t, ctx, "the button", chromedp.Text(sel("#go"))); got != "Send “Yes, pay”" {
		t.Errorf("the option link's button reads %q", got)
	}
	shot(t, ctx, "link-option-1280")
	do(t, ctx, "confirm", chromedp.Click(sel("#go")), chromedp.WaitVisible(sel("#state")))
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(second.TaskID)})
	if err != nil {
		t.Fatal(err)
	}
	if d := lastDecisionOf(t, task); task.Status.State != a2a.TaskStateCompleted || d.By.Name != "frank" || d.Decision != question.DecisionAnswered {
		t.Errorf("after the option link: %s, decision %+v; want completed, answered by frank", task.Status.State, d)
	}

	// A link past its time opens nothing.
	deferTo(t, env, in.ib, "approval", "Pay invoice INV-9: 70 EUR to ACME")
	links = next("the third notice")
	offset.Store(int64(25 * time.Hour))
	if code, _ := get(t, hc, links.form); code != http.StatusGone {
		t.Errorf("a link a day old: %d, want 410", code)
	}
}
