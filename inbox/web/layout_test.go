package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/question"
)

// Issue 32, point 2: two "Which cost centre…" questions, a 42 EUR taxi and
// a 180 EUR hotel, are told apart in the list and on the form by the
// request that started each task; an approval shows its subject.
func TestTheListAndTheFormShowTheRequestAndTheSubject(t *testing.T) {
	ctx := newBrowser(t)
	env := approvalEnv(t, false)
	in := startInbox(t, nil)
	taxi, _ := deferTo(t, env, in.ib, "expense", "File my taxi receipt from Tuesday, 42 euros")
	hotel, _ := deferTo(t, env, in.ib, "expense", "File my hotel bill from 2026-11-20, 180 euros")
	pay, _ := deferTo(t, env, in.ib, "approval", "Pay invoice INV-7: 80 EUR to ACME")
	browserLogin(t, ctx, in.url+"/", frankToken)
	for _, sz := range sizes {
		do(t, ctx, "the list at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#items tr")))
		for _, c := range []struct {
			it   *inbox.Item
			want string
		}{
			{taxi, "Request: File my taxi receipt from Tuesday, 42 euros"},
			{hotel, "Request: File my hotel bill from 2026-11-20, 180 euros"},
			{pay, "Subject: Amount 80, Currency EUR, Invoice INV-7, Payee ACME"},
		} {
			row := val(t, ctx, "the row", chromedp.Text(sel("#task-"+c.it.TaskID)))
			if !strings.Contains(row, c.want) {
				t.Errorf("%s: the row of %q lacks %q:\n%s", sz.name, c.it.Text, c.want, row)
			}
		}
		shot(t, ctx, "context-list-"+sz.name)
	}
	do(t, ctx, "the hotel's form", chromedp.Navigate(in.url+"/q/"+itoa(hotel.ID)), chromedp.WaitVisible(sel("#request")))
	if got := val(t, ctx, "the request", chromedp.Text(sel("#request blockquote"))); got != "File my hotel bill from 2026-11-20, 180 euros" {
		t.Errorf("the hotel's form shows the request %q", got)
	}
	do(t, ctx, "the approval's form", chromedp.Navigate(in.url+"/q/"+itoa(pay.ID)), chromedp.WaitVisible(sel("#subject")))
	if got := val(t, ctx, "the subject", chromedp.Text(sel("#subject dd"))); got != "Amount 80, Currency EUR, Invoice INV-7, Payee ACME" {
		t.Errorf("the approval's form shows the subject %q", got)
	}
}

// Issue 32, point 4: no page scrolls sideways on a 390 px phone (the list
// was 807-1209 px wide, task pages 462-504, the stats page had no
// viewport tag and no styling: 980), and at 1280 px one long value does
// not squeeze the question column (it was 70 px). Measured in the browser:
// the document's scrollWidth, and the column's width.
func TestNoPageScrollsSidewaysOnAPhone(t *testing.T) {
	ctx := newBrowser(t)
	env := approvalEnv(t, false)
	in := startInbox(t, nil)
	taxi, _ := deferTo(t, env, in.ib, "expense", "File my taxi receipt from Tuesday, 42 euros")
	long := strings.Repeat("participant-task-0123456789abcdef", 4)
	wide, _, err := in.ib.Add(t.Context(), inbox.FromStatus("http://127.0.0.1:9/a-rather-long-agent-name/that-goes-on-and-on", "t-wide-"+long, "ctx", (&question.Question{
		ID: "q-wide", Text: "Which cost centre should the planning workflow's expense be charged to?", Expires: time.Now().Add(time.Hour),
		About:  map[string]string{"participantTask": long},
		Schema: []byte(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","enum":["CC-4410","CC-4420"]}}}`),
	}).Message()))
	if err != nil {
		t.Fatal(err)
	}
	done, c := deferTo(t, env, in.ib, "approval", "Pay invoice INV-7: 80 EUR to ACME")
	browserLogin(t, ctx, in.url+"/", frankToken)
	do(t, ctx, "decline the approval", chromedp.Navigate(in.url+"/q/"+itoa(done.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Click(sel("#refuse summary")), chromedp.SendKeys(sel("#reason"), "Not ours"), chromedp.Click(sel("#decline")),
		chromedp.WaitVisible(sel("#state")))
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(done.TaskID)}); err != nil {
		t.Fatal(err)
	}

	tenv := approvalEnv(t, true)
	base := startServerPage(t, tenv, func(c *web.ServerPageConfig) {
		c.Stats = func() ([]string, [][]string) {
			return []string{"AGENT", "KIND", "ASKED", "ANSWERED", "BY PERSON", "BY POLICY", "EXPIRED", "DECLINED", "MEDIAN WAIT"},
				[][]string{{"expense", "amount,costCentre,date", "12", "10", "7", "3", "1", "1", "4m12s"}}
		}
		c.StatsPrincipals = []string{"alice"}
	})

	pages := []struct{ name, url string }{
		{"list", in.url + "/"},
		{"form", in.url + "/q/" + itoa(taxi.ID)},
		{"wide-form", in.url + "/q/" + itoa(wide.ID)},
		{"task", in.url + "/tasks/" + done.TaskID},
	}
	measure := func(sz string, w int64, name, url string) {
		t.Helper()
		do(t, ctx, name+" at "+sz, chromedp.Navigate(url), chromedp.WaitReady(sel("main")))
		if got := js[int64](t, ctx, "scrollWidth", `document.documentElement.scrollWidth`); got > w {
			t.Errorf("%s at %s px is %d px wide: it scrolls sideways", name, sz, got)
		}
		shot(t, ctx, "layout-"+name+"-"+sz)
	}
	for _, sz := range sizes {
		do(t, ctx, "size "+sz.name, viewport(sz.w, sz.h))
		for _, p := range pages {
			measure(sz.name, sz.w, p.name, p.url)
		}
		if sz.w == 1280 {
			do(t, ctx, "the list", chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#items tr")))
			if w := js[float64](t, ctx, "the question column", `document.querySelector('#items tr[data-key="q-wide"] td.q').getBoundingClientRect().width`); w < 280 {
				t.Errorf("at 1280 px the long about squeezes the question column to %.0f px; want at least 280", w)
			}
		}
	}
	browserLogin(t, ctx, base+"/inbox/", aliceToken)
	for _, sz := range sizes {
		do(t, ctx, "size "+sz.name, viewport(sz.w, sz.h))
		measure(sz.name, sz.w, "stats", base+"/inbox/stats")
		if js[string](t, ctx, "viewport tag", `(document.querySelector('meta[name=viewport]') || {}).content || ""`) == "" {
			t.Errorf("the stats page has no viewport tag")
		}
		if js[string](t, ctx, "styles", `getComputedStyle(document.body).backgroundColor`) == "rgba(0, 0, 0, 0)" {
			t.Errorf("the stats page has no styling")
		}
	}
}
