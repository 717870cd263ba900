//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// attackerAgent is an agent someone else runs: askpoint serve, with a
// paused task of its own, behind a server that records every request
// (and the bearer tokens they carry) and serves the attacker's page at
// /attack.
type attackerAgent struct {
	url   string // the agent's URL, through the recorder
	task  *a2a.Task
	seen  *apitest.AuthLog
	page  string // set by the test before the browser opens /attack
	pageM sync.Mutex
}

func startAttacker(t *testing.T, bin string) *attackerAgent {
	t.Helper()
	srv, err := startServer(t, bin, "attacker", filepath.Join(t.TempDir(), "attacker.db"))
	if err != nil {
		t.Fatal(err)
	}
	c := crashClient(t.Context(), t, srv.url)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(srv.url)
	proxy := httputil.NewSingleHostReverseProxy(target)
	tr := &http.Transport{}
	proxy.Transport = tr
	a := &attackerAgent{task: res.(*a2a.Task), seen: &apitest.AuthLog{}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/attack" {
			a.pageM.Lock()
			page := a.page
			a.pageM.Unlock()
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page)
			return
		}
		a.seen.Add(r)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); tr.CloseIdleConnections() })
	a.url = hs.URL + "/expense"
	return a
}

// setPage makes /attack a page that POSTs body to target the way any web
// page can without the target's consent: no-cors, no custom header, a
// Blob body (so no Content-Type).
func (a *attackerAgent) setPage(t *testing.T, target string, body []byte) {
	t.Helper()
	js, _ := json.Marshal(string(body))
	tgt, _ := json.Marshal(target)
	a.pageM.Lock()
	defer a.pageM.Unlock()
	a.page = fmt.Sprintf(`<!doctype html><title>cute cats</title><script>
window.sent = fetch(%s, {method: "POST", mode: "no-cors", body: new Blob([%s])}).then(() => "sent", e => "failed: " + e);
</script>`, tgt, js)
}

// Issue 30, finding 1: with its default flags (loopback, no --token, no
// --agent) askpoint inbox --web took a push from a page on another origin
// in the person's own browser: it read the card of the agent the push
// named, with the person's bearer token ($ASKPOINT_TOKEN), and listed the
// attacker's question, whose answer (and the token again) would go to the
// attacker. Now the push door takes notifications only from the agents
// the person names (--agent), with their push token, so the token never
// goes to a URL a push supplied.
func TestWebInboxTakesNoPushFromAPageOnAnotherOrigin(t *testing.T) {
	ctx := browser(t)
	bin := buildAskpoint(t)
	const bearer = "callers-bearer-secret-0123456789"
	t.Setenv("ASKPOINT_TOKEN", bearer)
	evil := startAttacker(t, bin)
	body, err := json.Marshal(a2a.StreamResponse{Event: evil.task})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"default flags", nil},
		// The attacker names an agent the person configured, and the
		// attacker's own task: still no token header, and no JSON.
		{"with --agent", []string{"--agent", evil.url}},
	} {
		t.Run(c.name, func(t *testing.T) {
			inboxPath := filepath.Join(t.TempDir(), "inbox.db")
			web := startWebInbox(t, bin, inboxPath, c.flags...)
			before := len(evil.seen.All())
			evil.setPage(t, web.url+"/push?agent="+url.QueryEscape(evil.url), body)
			run(t, ctx, "the attacker's page", chromedp.Navigate(strings.TrimSuffix(evil.url, "/expense")+"/attack"))
			// The fetch settles once the inbox has answered: what it
			// did with the push is done by then.
			if got := value(t, ctx, "the page's push", chromedp.Evaluate[string](`window.sent`, chromedp.EvalAwaitPromise)); got != "sent" {
				t.Fatalf("the page's fetch: %s", got)
			}
			for _, r := range evil.seen.All()[before:] {
				if strings.Contains(r, bearer) {
					t.Errorf("the attacker's agent received the person's bearer token: %s", r)
				}
			}
			ib, err := inbox.Open(t.Context(), inboxPath)
			if err != nil {
				t.Fatal(err)
			}
			defer ib.Close()
			items, err := ib.List(t.Context(), inbox.ListOptions{All: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				t.Errorf("the page's push filed item %d from %s: %q", it.ID, it.AgentURL, it.Text)
			}
		})
	}
}

// The web inbox's push door as the person configures it: an agent named
// with --agent pushes its question with the push token the inbox printed
// (none was given), and the question is listed; the same notification
// without the token, or naming another agent, is refused.
func TestWebInboxTakesPushesFromItsAgentsWithTheirToken(t *testing.T) {
	bin := buildAskpoint(t)
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"), "--allow-private-webhooks")
	if err != nil {
		t.Fatal(err)
	}
	agent := srv.url + "/expense"
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	web := startWebInbox(t, bin, inboxPath, "--agent", agent)
	web.log.WaitFor("push token (agents send it as", 10*time.Second)
	m := regexp.MustCompile(`push token \(agents send it as A2A-Notification-Token\): ([0-9a-f]{32})`).FindStringSubmatch(web.log.String())
	if m == nil {
		t.Fatalf("askpoint inbox --web --agent without --token printed no push token:\n%s", web.log)
	}
	token := m[1]
	pushURL := web.url + "/push?agent=" + url.QueryEscape(agent)

	c := crashClient(t.Context(), t, srv.url)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
	if err != nil {
		t.Fatal(err)
	}
	unpushed := res.(*a2a.Task)
	body, _ := json.Marshal(a2a.StreamResponse{Event: unpushed})
	if code := apitest.PostNotification(t, t.Context(), pushURL, "", body); code != http.StatusUnauthorized {
		t.Errorf("a push without the token: %d, want 401", code)
	}
	if code := apitest.PostNotification(t, t.Context(), web.url+"/push?agent="+url.QueryEscape(srv.url+"/other"), token, body); code != http.StatusForbidden {
		t.Errorf("a push naming an agent not given with --agent: %d, want 403", code)
	}

	res, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: pushURL, Token: token}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pushed := res.(*a2a.Task)
	ib, err := inbox.Open(t.Context(), inboxPath)
	if err != nil {
		t.Fatal(err)
	}
	defer ib.Close()
	var items []*inbox.Item
	apitest.Eventually(t, "the pushed question is in the inbox", 30*time.Second, func() bool {
		items, err = ib.List(t.Context(), inbox.ListOptions{All: true})
		return err == nil && len(items) > 0
	})
	if len(items) != 1 || items[0].TaskID != string(pushed.ID) || items[0].AgentURL != agent || items[0].Source != inbox.SourcePush {
		t.Errorf("items %+v; want the pushed task's question from %s, and nothing of the refused pushes", items, agent)
	}
}

// Issue 30, finding 4: the page a login returns to (?next=) stays on the
// inbox. Chromium drops tabs and newlines from a URL and reads a
// backslash as a slash, and Go's redirect cleans "/./" away, so for a
// person already logged in /login?next=/%09/HOST and /login?next=/./%5CHOST
// went to another origin. (After the login form itself, the pages' CSP
// form-action kept Chromium from following such a redirect: the person
// was left on the login page.)
func TestWebInboxLoginReturnsOnlyToItsOwnPages(t *testing.T) {
	ctx := browser(t)
	bin := buildAskpoint(t)
	web := startWebInbox(t, bin, filepath.Join(t.TempDir(), "inbox.db"))
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><title>elsewhere</title><p id="elsewhere">another site</p>`)
	}))
	defer elsewhere.Close()
	host := strings.TrimPrefix(elsewhere.URL, "http://")
	nexts := []string{"/\t/" + host + "/", "/./\\" + host + "/", "/\n/" + host + "/", "/\\" + host + "/", "//" + host + "/", "/\\/" + host + "/", "http://" + host + "/"}
	loginURL := func(next string) string { return web.url + "/login?next=" + url.QueryEscape(next) }

	login(t, ctx, web.url)
	for _, next := range nexts {
		// Navigate returns once the page it ends on has loaded.
		run(t, ctx, "logged in, /login?next="+strconv.Quote(next), chromedp.Navigate(loginURL(next)))
		if loc := value(t, ctx, "location", chromedp.Location()); !strings.HasPrefix(loc, web.url+"/") {
			t.Errorf("logged in, /login?next=%q took the browser to %s; want a page of the inbox at %s", next, loc, web.url)
		}
	}

	// The login form returns to the inbox's list instead.
	for _, next := range append(nexts, "/?from=email") {
		run(t, ctx, "log out", chromedp.Navigate(web.url+"/"), chromedp.WaitVisible(css("#items")), chromedp.Click(css(".who button")), chromedp.WaitVisible(css("#token")))
		run(t, ctx, "the login page, next="+strconv.Quote(next), chromedp.Navigate(loginURL(next)), chromedp.WaitVisible(css("#token")))
		want := web.url + "/"
		if next == "/?from=email" {
			want = web.url + next // the inbox's own pages are returned to, with their query
		}
		c, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := chromedp.Do(c, chromedp.SendKeys(css("#token"), frankToken), chromedp.Submit(css("#login")), chromedp.WaitVisible(css("#items, #elsewhere")))
		cancel()
		loc := value(t, ctx, "location", chromedp.Location())
		if err != nil || loc != want {
			t.Errorf("after the login with next=%q the browser is at %s (%v); want %s", next, loc, err, want)
		}
	}
}

// Issue 30, finding 5, black-box: askpoint serve's /inbox/events takes one
// of the principal's stream slots, counted with their A2A streams against
// the server's cap (32 by default), so a caller cannot open them without
// bound; before, 600 anonymous ones used 116% CPU and 445 MB.
func TestServerPageLivePagesTakeTheServersStreamSlots(t *testing.T) {
	bin := buildAskpoint(t)
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Jar: jar, Transport: tr}
	// A server without tokens logs everyone in as the anonymous principal.
	res, err := hc.Get(srv.url + "/inbox/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	open := func() int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.url+"/inbox/events", nil)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != http.StatusOK {
			res.Body.Close()
		}
		return res.StatusCode // a 200's body stays open: the stream holds its slot
	}
	const slots = 32
	for i := range slots {
		if code := open(); code != http.StatusOK {
			t.Fatalf("live page %d of %d: %d, want 200", i+1, slots, code)
		}
	}
	if code := open(); code != http.StatusTooManyRequests {
		t.Errorf("live page %d (the server's cap is %d streams per principal): %d, want 429", slots+1, slots, code)
	}
	c := crashClient(t.Context(), t, srv.url)
	for _, err := range c.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))}) {
		if err == nil || !strings.Contains(err.Error(), "429") {
			t.Errorf("an A2A stream while the live pages hold the %d slots: %v; want it refused by the same cap", slots, err)
		}
		break
	}
}

// Issue 30, finding 6: an agent's answer pattern never runs in the
// browser. The page compiled it with new RegExp and ran it at each
// keystroke, and a pattern that backtracks (^(a+)+$ against a run of a's
// and one more character) hung the tab; the inbox checks the field with
// Go's regexp instead, and the page shows its answer in the same words.
func TestWebInboxChecksAgentPatternsOffThePage(t *testing.T) {
	ctx := browser(t)
	bin := buildAskpoint(t)
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	ib, err := inbox.Open(t.Context(), inboxPath)
	if err != nil {
		t.Fatal(err)
	}
	q := &question.Question{ID: "q-code", Text: "Which code?", Expires: time.Now().Add(time.Hour),
		Schema: []byte(`{"type":"object","required":["code"],"properties":{"code":{"type":"string","pattern":"^(a+)+$"}}}`)}
	it, _, err := ib.Add(t.Context(), inbox.FromStatus("http://127.0.0.1:9/agent", "t-code", "ctx", q.Message()))
	ib.Close()
	if err != nil {
		t.Fatal(err)
	}
	web := startWebInbox(t, bin, inboxPath)
	login(t, ctx, web.url)
	typed := strings.Repeat("a", 36) + "!"
	run(t, ctx, "type a value the pattern backtracks on",
		chromedp.Navigate(fmt.Sprintf("%s/q/%d", web.url, it.ID)),
		chromedp.WaitVisible(css("#field-code input")),
		chromedp.SendKeys(css("#field-code input"), typed),
		chromedp.WaitVisible(css("#field-code ul.errors li")),
	)
	want := strconv.Quote(typed) + " is not in the expected format"
	if got := value(t, ctx, "the field's error", chromedp.Text(css("#field-code ul.errors"))); got != want {
		t.Errorf("next to the field: %q, want %q", got, want)
	}
	if n := value(t, ctx, "the page still runs", chromedp.Evaluate[int](`1 + 1`)); n != 2 {
		t.Errorf("1 + 1 = %d", n)
	}
	// A value that matches clears the error.
	run(t, ctx, "a value that matches",
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#field-code input").value = ""`),
		chromedp.SendKeys(css("#field-code input"), "aaa"),
		chromedp.WaitNotPresent(css("#field-code ul.errors li")),
	)
}
