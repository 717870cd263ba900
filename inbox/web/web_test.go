package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/quotedprintable"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/apitest"
)

const frankToken = "frank-token-0123456789"

// smtpServer is a tiny SMTP server on 127.0.0.1 that keeps what it is sent.
type smtpServer struct {
	ln   net.Listener
	got  chan string // each message's DATA, dot-unstuffed
	wg   sync.WaitGroup
	addr string
}

func startSMTP(t *testing.T) *smtpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &smtpServer{ln: ln, got: make(chan string, 16), addr: ln.Addr().String()}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.session(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *smtpServer) session(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	say := func(line string) { _, _ = io.WriteString(c, line+"\r\n") }
	say("220 test SMTP ready")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			say("250 test")
		case strings.HasPrefix(cmd, "MAIL FROM:"), strings.HasPrefix(cmd, "RCPT TO:"), cmd == "RSET", cmd == "NOOP":
			say("250 ok")
		case cmd == "DATA":
			say("354 go ahead")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			s.got <- b.String()
			say("250 queued")
		case cmd == "QUIT":
			say("221 bye")
			return
		default:
			say("502 not here")
		}
	}
}

func (s *smtpServer) next(t *testing.T, what string) (headers, body string) {
	t.Helper()
	select {
	case m := <-s.got:
		h, b, _ := strings.Cut(m, "\r\n\r\n")
		raw, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(b)))
		if err != nil {
			t.Fatalf("%s: the body is not quoted-printable: %v", what, err)
		}
		return h, strings.ReplaceAll(string(raw), "\r\n", "\n")
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s arrived at the SMTP server", what)
	}
	return "", ""
}

type inboxEnv struct {
	srv *web.Server
	url string
	ib  *inbox.Inbox
}

// startInbox serves a web inbox over a new inbox file for frank (with an
// email address) and erin (without).
func startInbox(t *testing.T, mailer *web.Mailer) *inboxEnv {
	return startInboxWith(t, func(c *web.Config) { c.Mailer = mailer })
}

// startInboxWith is startInbox with the config adjusted.
func startInboxWith(t *testing.T, adjust func(*web.Config)) *inboxEnv {
	t.Helper()
	ib, err := inbox.Open(t.Context(), filepath.Join(t.TempDir(), "inbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ib.Close() })
	people, err := web.ParsePeople([]byte(`{"frank": {"token": "` + frankToken + `", "email": "frank@example.com"}, "erin": "erin-token-0123456789"}`))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := web.Config{Inbox: ib, People: people, PublicURL: base, Watch: 50 * time.Millisecond, Refresh: -1}
	adjust(&cfg)
	srv, err := web.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); srv.Run(ctx) }()
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(func() { cancel(); <-ran; hs.Close() })
	return &inboxEnv{srv: srv, url: base, ib: ib}
}

// login returns an HTTP client with frank's session.
func (e *inboxEnv) login(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	req, _ := http.NewRequest(http.MethodPost, e.url+"/login", strings.NewReader(url.Values{"token": {frankToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.url)
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/" {
		t.Fatalf("login: %s at %s; want the list at /", res.Status, res.Request.URL)
	}
	return hc
}

func get(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	res, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// A question that reaches the inbox by push is emailed to the person with
// its text, its expiry and a link to its form that works once logged in;
// the agent's reminder is emailed too.
func TestEmailTellsOfANewQuestionWithAWorkingLinkAndOfTheReminder(t *testing.T) {
	mail := startSMTP(t)
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.QuestionExpiry = 3 * time.Second
		c.Reminders = []float64{0.5}
		c.AllowPrivateWebhooks = true
	}})
	agent := env.AgentURL("expense")
	const pushToken = "push-token-0123456789"
	in := startInboxWith(t, func(c *web.Config) {
		c.Mailer = &web.Mailer{Addr: mail.addr, From: "inbox@example.com"}
		c.PushAgents, c.PushToken = map[string]string{agent: ""}, pushToken
	})
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: in.url + "/push?agent=" + url.QueryEscape(agent), Token: pushToken}},
	})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)

	headers, body := mail.next(t, "email of the new question")
	for _, want := range []string{"Which cost centre should this expense be charged to? CC-4410 or CC-4420.", "It expires at", "Answer it here: " + in.url + "/q/", string(task.ID)} {
		if !strings.Contains(body, want) {
			t.Errorf("the email lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(headers, "To: frank@example.com") || !strings.Contains(headers, "Subject: Question from") {
		t.Errorf("headers:\n%s\nwant To: frank@example.com and a subject naming the question", headers)
	}
	link := regexp.MustCompile(`Answer it here: (\S+)`).FindStringSubmatch(body)
	if link == nil {
		t.Fatalf("no link in %s", body)
	}
	// The link leads to the login, then to the question's form.
	anon := &http.Client{}
	res2, err := anon.Get(link[1])
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.Request.URL.Path != "/login" || res2.Request.URL.Query().Get("next") != strings.TrimPrefix(link[1], in.url) {
		t.Errorf("without a session the link led to %s; want the login, returning to the form", res2.Request.URL)
	}
	hc := in.login(t)
	code, page := get(t, hc, link[1])
	if code != http.StatusOK || !strings.Contains(page, "Which cost centre should this expense be charged to?") || !strings.Contains(page, `value="CC-4410"`) {
		t.Errorf("the link gave %d:\n%s\nwant the question's form with its options", code, page)
	}

	_, body = mail.next(t, "email of the reminder")
	if !strings.Contains(body, "Reminder 1 of 1") || !strings.Contains(body, "Which cost centre") || !strings.Contains(body, link[1]) {
		t.Errorf("reminder email:\n%s\nwant reminder 1 of 1, the question and the same link", body)
	}
	// Each notice goes out once.
	select {
	case m := <-mail.got:
		t.Errorf("a third email arrived: %s", m)
	default:
	}
}

// Without a session nothing is shown or taken; with one, a form posted
// without the session's CSRF token or from another origin is refused and
// changes nothing.
func TestLoginAndCSRFGuardEveryForm(t *testing.T) {
	in := startInbox(t, nil)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	agent := env.AgentURL("expense")
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	_, err := client.Run(t.Context(), c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")),
		client.WithAgentURL(agent), client.WithResolvers(inbox.Person{Inbox: in.ib}))
	d, ok := err.(*inbox.DeferredError)
	if !ok {
		t.Fatalf("Run = %v; want the question deferred to the inbox", err)
	}
	form := in.url + "/q/" + itoa(d.Item.ID)

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, u := range []string{in.url + "/", form, in.url + "/tasks/" + d.Item.TaskID} {
		res, err := noRedirect.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
			t.Errorf("GET %s without a session: %s to %q; want 303 to /login", u, res.Status, res.Header.Get("Location"))
		}
	}
	for _, u := range []string{in.url + "/items", in.url + "/events"} {
		if code, _ := get(t, noRedirect, u); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d, want 401", u, code)
		}
	}
	post := func(hc *http.Client, origin string, v url.Values) int {
		req, _ := http.NewRequest(http.MethodPost, form, strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(noRedirect, in.url, url.Values{"field.costCentre": {"CC-4410"}}); code != http.StatusUnauthorized {
		t.Errorf("an answer without a session: %d, want 401", code)
	}
	if code, _ := get(t, &http.Client{}, strings.Replace(in.url, "127.0.0.1", "localhost", 1)+"/login"); code != http.StatusMisdirectedRequest {
		t.Errorf("a request for another host name: %d, want 421 (the inbox answers for its own host only)", code)
	}

	hc := in.login(t)
	_, page := get(t, hc, form)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the form carries no CSRF token:\n%s", page)
	}
	csrf := m[1]
	hc.CheckRedirect = noRedirect.CheckRedirect
	if code := post(hc, in.url, url.Values{"field.costCentre": {"CC-4410"}}); code != http.StatusForbidden {
		t.Errorf("an answer without the CSRF token: %d, want 403", code)
	}
	if code := post(hc, "http://evil.example", url.Values{"csrf": {csrf}, "field.costCentre": {"CC-4410"}}); code != http.StatusForbidden {
		t.Errorf("an answer from another origin, with the token: %d, want 403", code)
	}
	it, err := in.ib.Get(t.Context(), d.Item.ID)
	if err != nil || it.State != inbox.StateOpen {
		t.Fatalf("after the refused posts the item is %v (%v); want it open", it.State, err)
	}
	if code := post(hc, in.url, url.Values{"csrf": {csrf}, "field.costCentre": {"CC-4410"}}); code != http.StatusSeeOther {
		t.Errorf("the same answer from the inbox's own page: %d, want 303 to the task", code)
	}
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(d.Item.TaskID)})
	if err != nil || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task after the answer: %v (%v); want completed", task.Status.State, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// An expired question and a withdrawn one (its task canceled by someone
// else, no push reaching the inbox) leave the list.
func TestExpiredAndWithdrawnQuestionsLeaveTheList(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.QuestionExpiry = 2 * time.Second }})
	agent := env.AgentURL("expense")
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	in := startInboxWith(t, func(c *web.Config) { c.Refresh = 100 * time.Millisecond })
	ib, base := in.ib, in.url
	hc := in.login(t)

	ask := func() *inbox.Item {
		_, err := client.Run(t.Context(), c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")),
			client.WithAgentURL(agent), client.WithResolvers(inbox.Person{Inbox: ib}))
		d, ok := err.(*inbox.DeferredError)
		if !ok {
			t.Fatalf("Run = %v; want the question in the inbox", err)
		}
		return d.Item
	}
	listed := func(it *inbox.Item) bool {
		_, page := get(t, hc, base+"/items")
		return strings.Contains(page, `data-item="`+itoa(it.ID)+`"`)
	}
	expiring := ask()
	if !listed(expiring) {
		t.Fatal("the new question is not listed")
	}
	apitest.Eventually(t, "the expired question leaves the list", 10*time.Second, func() bool { return !listed(expiring) })

	env2 := apitest.Start(t, apitest.Options{Quiet: true})
	agent = env2.AgentURL("expense")
	c = env2.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	withdrawn := ask()
	if !listed(withdrawn) {
		t.Fatal("the second question is not listed")
	}
	if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: a2a.TaskID(withdrawn.TaskID)}); err != nil {
		t.Fatal(err)
	}
	apitest.Eventually(t, "the withdrawn question leaves the list", 10*time.Second, func() bool { return !listed(withdrawn) })
	it, err := ib.Get(t.Context(), withdrawn.ID)
	if err != nil || it.State != inbox.StateClosed || !strings.Contains(it.Note, "canceled") {
		t.Errorf("the withdrawn item: %+v (%v); want it closed, saying the task was canceled", it, err)
	}
}

// Issue 30, finding 1: /push is one more door of the web inbox, with the
// push handler's guard (only its agents, with their token, as JSON) and
// the origin rule of every other door: a browser's request from another
// site is refused even with the right token. Without agents it takes
// nothing.
func TestThePushDoorTakesOnlyItsAgentsAndNoOtherSite(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	agent := env.AgentURL("expense")
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(a2a.StreamResponse{Event: res.(*a2a.Task)})
	const pushToken = "push-token-0123456789"
	push := func(in *inboxEnv, header, value string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, in.url+"/push?agent="+url.QueryEscape(agent), bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(inbox.TokenHeader, pushToken)
		if header != "" {
			req.Header.Set(header, value)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	listed := func(in *inboxEnv) int {
		items, err := in.ib.List(t.Context(), inbox.ListOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		return len(items)
	}

	closed := startInbox(t, nil)
	if code := push(closed, "", ""); code != http.StatusForbidden || listed(closed) != 0 {
		t.Errorf("a push to an inbox started without agents: %d, %d items; want 403 and none", code, listed(closed))
	}
	in := startInboxWith(t, func(c *web.Config) { c.PushAgents, c.PushToken = map[string]string{agent: ""}, pushToken })
	if code := push(in, "Origin", "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a push from a page on another origin, with the token: %d, want 403", code)
	}
	if code := push(in, "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Errorf("a push a browser says is cross-site, with the token: %d, want 403", code)
	}
	if n := listed(in); n != 0 {
		t.Fatalf("refused pushes filed %d items", n)
	}
	if code := push(in, "", ""); code != http.StatusNoContent || listed(in) != 1 {
		t.Errorf("the agent's own push: %d, %d items; want 204 and its question", code, listed(in))
	}
}
