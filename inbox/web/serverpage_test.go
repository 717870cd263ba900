package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

const aliceToken, bobToken = "alice-token-0123456789", "bob-token-0123456789ab"

// The server's own page shows each principal their own paused tasks, with
// the same form, and answers the agent directly with the decision record.
func TestServerPageAnswersThePrincipalsOwnPausedTasks(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
	}})
	alice := env.ClientAs(t, "expense", a2a.TransportProtocolJSONRPC, aliceToken)
	res, err := alice.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)

	base := startServerPage(t, env, nil)
	form := base + "/inbox/t/expense/" + string(task.ID)
	loginAs := func(token string) *http.Client { return loginAt(t, base, token) }
	anon := &http.Client{}
	res2, err := anon.Get(form)
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.Request.URL.Path != "/inbox/login" {
		t.Errorf("without a login the form led to %s; want /inbox/login", res2.Request.URL)
	}

	bob := loginAs(bobToken)
	if _, page := get(t, bob, base+"/inbox/"); strings.Contains(page, string(task.ID)) {
		t.Error("bob's page lists alice's task")
	}
	if code, _ := get(t, bob, form); code != http.StatusNotFound {
		t.Errorf("bob opening alice's task: %d, want 404", code)
	}

	hc := loginAs(aliceToken)
	_, page := get(t, hc, base+"/inbox/")
	if !strings.Contains(page, string(task.ID)) || !strings.Contains(page, "attempt 1 of 3") {
		t.Fatalf("alice's page lacks her paused task:\n%s", page)
	}
	_, page = get(t, hc, form)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `value="CC-4410"`) {
		t.Fatalf("the form:\n%s", page)
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	post := func(v url.Values) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, form, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	if r := post(url.Values{"csrf": {m[1]}, "typed.costCentre": {"engineering"}}); r.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("engineering: %s, want 422 (refused before it is sent)", r.Status)
	}
	if r := post(url.Values{"field.costCentre": {"CC-4410"}}); r.StatusCode != http.StatusForbidden {
		t.Errorf("without the CSRF token: %s, want 403", r.Status)
	}
	if r := post(url.Values{"csrf": {m[1]}, "field.costCentre": {"CC-4410"}, "justification": {"client visit"}}); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("the answer: %s, want 303", r.Status)
	}
	done, err := alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("alice's task: %v (%v); want completed", done.Status.State, err)
	}
	var d *question.Decision
	for _, msg := range done.History {
		if got, ok, _ := question.DecisionOf(msg); ok {
			d = got
		}
	}
	if d == nil || d.By.Name != "alice" || d.By.Via != "server page" || d.Decision != question.DecisionAnswered || d.Justification != "client visit" {
		t.Errorf("decision record %+v; want alice answered via the server page, justified", d)
	}
}

// startServerPage serves env's server page at /inbox for alice and bob,
// with cfg adjusted, and returns the base URL (scheme://host:port).
func startServerPage(t *testing.T, env *apitest.Env, adjust func(*web.ServerPageConfig)) string {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	cfg := web.ServerPageConfig{
		Base: "/inbox", PublicURL: base, Tokens: map[string]string{"alice": aliceToken, "bob": bobToken},
		Agents: env.Server.Agents, Handler: env.Server.RequestHandler, WithPrincipal: askpoint.WithPrincipal,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	sp, err := web.NewServerPage(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = sp.Handler()
	hs.Start()
	t.Cleanup(func() { sp.Close(); hs.Close() })
	return base
}

// loginAt logs in to the server page at base with token; the client
// follows no redirect.
func loginAt(t *testing.T, base, token string) *http.Client {
	t.Helper()
	s := serverPageSite(base)
	s.token = token
	jar, _ := cookiejar.New(nil)
	return s.loginWith(t, jar)
}

// Issue 30, finding 4, at every login door: the web inbox's and the
// server page's, after the login form and for a person logged in
// already. What a browser could read as another origin (a tab or newline
// it drops, a backslash it reads as a slash, "/./" that the redirect
// cleans away) returns to the site's own list; a page of the site is
// returned to as it is.
func TestEveryLoginReturnsOnlyToItsOwnSite(t *testing.T) {
	in := startInbox(t, nil)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	bad := []string{"/\t/evil.example/", "/./\\evil.example/", "/\n/evil.example/", "/\r/evil.example/", "/\\evil.example/",
		"//evil.example/", "/\\/evil.example/", "http://evil.example/", "/.\\./evil.example", "/\x00/evil.example", ""}
	for _, c := range []struct {
		s    site
		page string
	}{
		{inboxSite(in), "/q/1?from=email"},
		{serverPageSite(startServerPage(t, env, nil)), "/inbox/t/expense/t-1?from=email"},
	} {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		for _, next := range append(bad, c.page) {
			want := c.s.home
			if next == c.page {
				want = c.page
			}
			code, got := c.s.post(t, hc, "/login", url.Values{"token": {c.s.token}, "next": {next}})
			if code != http.StatusSeeOther || got != want {
				t.Errorf("%s: the login with next=%q: %d to %q, want 303 to %q", c.s.name, next, code, got, want)
			}
			res, err := hc.Get(c.s.base + "/login?next=" + url.QueryEscape(next))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := res.Header.Get("Location"); got != want {
				t.Errorf("%s: logged in, /login?next=%q returns to %q, want %q", c.s.name, next, got, want)
			}
		}
	}
}

// listCounter counts the ListTasks calls of the server's handlers.
type listCounter struct {
	a2asrv.RequestHandler
	n *atomic.Int64
}

// countingLists is env's request handlers, each counting its ListTasks
// calls in n.
func countingLists(env *apitest.Env, n *atomic.Int64) func(string) (a2asrv.RequestHandler, bool) {
	return func(name string) (a2asrv.RequestHandler, bool) {
		h, ok := env.Server.RequestHandler(name)
		if !ok {
			return nil, false
		}
		return listCounter{RequestHandler: h, n: n}, true
	}
}

func (c listCounter) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	c.n.Add(1)
	return c.RequestHandler.ListTasks(ctx, req)
}

// Issue 30, finding 5: the server page's live pages (BASE/events) are
// streams like any other. They share one read of the principal's paused
// tasks, however many are open: before, each read every agent's tasks
// every two seconds on its own (200 used most of a core). And they take
// the principal's stream slots, counted with their A2A streams against
// the server's cap: before, they were not counted at all.
func TestLivePagesShareOneReadAndTakeThePrincipalsStreamSlots(t *testing.T) {
	const slots = 12
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
		c.MaxStreamsPerPrincipal = slots
	}})
	var lists atomic.Int64
	base := startServerPage(t, env, func(c *web.ServerPageConfig) {
		c.Handler = countingLists(env, &lists)
		c.AcquireStream = env.Server.AcquireStream
	})
	alice := env.ClientAs(t, "expense", a2a.TransportProtocolJSONRPC, aliceToken)
	ask := func() *a2a.Task {
		t.Helper()
		res, err := alice.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task)
	}
	first := ask()
	hc := loginAt(t, base, aliceToken)

	pages := make([]*eventStream, slots)
	for i := range pages {
		pages[i] = openEvents(t, hc, base+"/inbox", "", "")
	}
	for i, p := range pages {
		p.next(t, fmt.Sprintf("live page %d's first event", i))
	}
	before := lists.Load()
	ask()
	for i, p := range pages {
		p.next(t, fmt.Sprintf("live page %d told of the second task", i))
	}
	agents := int64(len(env.Server.Agents()))
	if reads := lists.Load() - before; reads > 3*agents {
		t.Errorf("%d live pages made %d ListTasks calls (%d agents) to learn of one new task; want one shared read of each agent per look", slots, reads, agents)
	}

	streamStatus := func(hc *http.Client) int { return streamStatus(t, hc, base+"/inbox/events") }
	if code := streamStatus(hc); code != http.StatusTooManyRequests {
		t.Errorf("alice's live page number %d (the server's cap is %d streams): %d, want 429", slots+1, slots, code)
	}
	for _, err := range alice.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: first.ID}) {
		if err == nil || !strings.Contains(err.Error(), "429") {
			t.Errorf("alice's SubscribeToTask while her live pages hold the server's %d stream slots: %v; want it refused by the cap", slots, err)
		}
		break
	}
	bob := loginAt(t, base, bobToken)
	if code := streamStatus(bob); code != http.StatusOK {
		t.Errorf("bob's first live page while alice holds her %d: %d, want 200 (the cap is per principal)", slots, code)
	}
	pages[0].stop()
	apitest.Eventually(t, "a live page closed gives its slot back", 10*time.Second, func() bool { return streamStatus(hc) == http.StatusOK })
}

// A list page with a filter reads each agent's tasks once: the rows the
// filter keeps and the agents it offers come from the same read (before,
// the page read every agent twice, once filtered and once whole, to name
// the agents).
func TestAFilteredListPageReadsEachAgentOnce(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
	}})
	var lists atomic.Int64
	base := startServerPage(t, env, func(c *web.ServerPageConfig) { c.Handler = countingLists(env, &lists) })
	ask := func(agent, text string) a2a.TaskID {
		t.Helper()
		c := env.ClientAs(t, agent, a2a.TransportProtocolJSONRPC, aliceToken)
		res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("%s: %v, want a paused task", agent, res)
		}
		return task.ID
	}
	expense := ask("expense", "File my taxi receipt from Tuesday, 42 euros")
	script := ask("script", "ask")
	hc := loginAt(t, base, aliceToken)

	before := lists.Load()
	code, page := get(t, hc, base+"/inbox/?agent=expense")
	if code != http.StatusOK {
		t.Fatalf("the list filtered to expense: %d\n%s", code, page)
	}
	if reads, agents := lists.Load()-before, int64(len(env.Server.Agents())); reads != agents {
		t.Errorf("the filtered list made %d ListTasks calls for %d agents, want one an agent", reads, agents)
	}
	if !strings.Contains(page, `id="task-`+string(expense)+`"`) || strings.Contains(page, `id="task-`+string(script)+`"`) {
		t.Errorf("the list filtered to expense does not show expense's task alone:\n%s", page)
	}
	if !strings.Contains(page, `<option value="expense" selected>`) || !strings.Contains(page, `<option value="script">`) {
		t.Errorf("the filter does not offer both agents with expense chosen:\n%s", page)
	}
}
