package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// ServerPageConfig configures the server's own page: the paused tasks of
// the logged-in principal, answered in place, without a caller's inbox.
type ServerPageConfig struct {
	// Base is the path the page is served under (e.g. "/inbox").
	Base string
	// PublicURL is the server's address (scheme://host:port), the one
	// origin whose forms are taken.
	PublicURL  string
	ExtraHosts []string
	// Tokens maps principals to their bearer tokens, which are also the
	// page's login; empty: callers are anonymous (the server is loopback
	// only) and the page logs everyone in as the anonymous principal.
	Tokens map[string]string
	// Agents lists the server's agents; Handler returns one's request
	// handler; WithPrincipal says on whose behalf a call is made.
	Agents        func() []string
	Handler       func(name string) (a2asrv.RequestHandler, bool)
	WithPrincipal func(ctx context.Context, principal string) context.Context
	// MaxAttempts is the server's cap on answers per question.
	MaxAttempts int
	// AcquireStream, when set, takes one of the principal's stream slots
	// (askpoint.Server.AcquireStream: the server's cap, counted with the
	// principal's A2A streams) for each live page's event stream; ctx
	// carries the principal (WithPrincipal). Otherwise each principal may
	// hold DefaultMaxStreams of them.
	AcquireStream func(ctx context.Context) (release func(), err error)
	// Stats, when set, gives how questions fare (a header row, then one
	// row per agent and question kind: askpoint stats' table), shown at
	// BASE/stats; nil when the server runs without metrics.
	Stats func() (header []string, rows [][]string)
	// StatsPrincipals may see Stats: the figures are the whole server's,
	// every principal's questions. Without Tokens the anonymous principal
	// (the only one) sees them.
	StatsPrincipals []string
	Logger          *slog.Logger
	Now             func() time.Time
}

// anonymous is the principal of a server without tokens.
const anonymous = ""

// ServerPage is the server's own page.
type ServerPage struct {
	cfg   ServerPageConfig
	sess  *sessions
	tmpl  *template.Template
	log   *slog.Logger
	hosts map[string]bool
	orig  string
	open  bool // no tokens: everyone is the anonymous principal
	done  chan struct{}
	once  sync.Once

	streams *streamCap // when cfg.AcquireStream is not set
	mu      sync.Mutex
	watches map[string]*pageWatch // by principal, while they have live pages
	wg      sync.WaitGroup        // the watches' polls
	closed  bool
}

// Close ends the pages' event streams, so that a server's graceful
// shutdown does not wait on them.
func (sp *ServerPage) Close() {
	sp.mu.Lock()
	sp.closed = true // no watch starts after this
	sp.mu.Unlock()
	sp.once.Do(func() { close(sp.done) })
	sp.wg.Wait()
}

// NewServerPage checks cfg and returns the page.
func NewServerPage(cfg ServerPageConfig) (*ServerPage, error) {
	if cfg.Agents == nil || cfg.Handler == nil || cfg.WithPrincipal == nil {
		return nil, errors.New("web: the server page needs the server's agents, handlers and principals")
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("web: the public URL %q must be http(s)://host:port", cfg.PublicURL)
	}
	cfg.Base = "/" + strings.Trim(cfg.Base, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = question.DefaultMaxAttempts
	}
	var people []Person
	for p, tok := range cfg.Tokens {
		people = append(people, Person{Name: p, Token: tok})
	}
	open := len(people) == 0
	if open {
		people = []Person{{Name: anonymous}}
	}
	sort.Slice(people, func(i, j int) bool { return people[i].Name < people[j].Name })
	tmpl, err := parseTemplates(cfg.Base)
	if err != nil {
		return nil, err
	}
	sp := &ServerPage{cfg: cfg, sess: newSessions(people, u.Scheme+"://"+u.Host, cfg.Base, cfg.Now), tmpl: tmpl, log: cfg.Logger,
		hosts: map[string]bool{u.Host: true}, orig: u.Scheme + "://" + u.Host, open: open, done: make(chan struct{}),
		streams: newStreamCap(0), watches: map[string]*pageWatch{}}
	for _, h := range cfg.ExtraHosts {
		sp.hosts[h] = true
	}
	return sp, nil
}

// Handler serves the page under Base.
func (sp *ServerPage) Handler() http.Handler {
	// The same guard, login and CSRF checks as the web inbox.
	s := &Server{sess: sp.sess, tmpl: sp.tmpl, log: sp.log, hosts: sp.hosts, orig: sp.orig, now: sp.cfg.Now}
	mux := http.NewServeMux()
	b := sp.cfg.Base
	mux.HandleFunc("GET "+b+"/login", func(w http.ResponseWriter, r *http.Request) {
		if sp.open {
			sp.sess.issue(w, &sp.sess.people[0])
			http.Redirect(w, r, b+"/", http.StatusSeeOther)
			return
		}
		s.loginPage(w, r)
	})
	mux.HandleFunc("POST "+b+"/login", s.loginPost)
	mux.HandleFunc("POST "+b+"/logout", s.authed(s.logout))
	mux.HandleFunc("GET "+b+"/{$}", s.authed(sp.list))
	mux.HandleFunc("GET "+b+"/stats", s.authed(sp.stats))
	mux.HandleFunc("GET "+b+"/items", s.authed(sp.rowsFragment))
	mux.HandleFunc("GET "+b+"/events", s.authed(sp.events))
	mux.HandleFunc("GET "+b+"/t/{agent}/{task}", s.authed(sp.form))
	mux.HandleFunc("GET "+b+"/tasks/{agent}/{task}", s.authed(sp.history))
	mux.HandleFunc("GET "+b+"/t/{agent}/{task}/state", s.authed(sp.state))
	mux.HandleFunc("POST "+b+"/t/{agent}/{task}", s.authed(sp.answer))
	mux.HandleFunc("POST "+b+"/t/{agent}/{task}/check", s.authed(sp.check))
	mux.Handle("GET "+b+"/static/", http.StripPrefix(b+"/static/", http.FileServerFS(staticFS())))
	inner := s.guard(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// authed sends people without a session to /login: this page's.
		if strings.HasPrefix(r.URL.Path, b+"/") || r.URL.Path == b {
			rw := &loginRedirect{ResponseWriter: w, base: b}
			inner.ServeHTTP(rw, r)
			return
		}
		http.NotFound(w, r)
	})
}

// loginRedirect rewrites the web inbox's redirects to /login (and /) onto
// the page's base.
type loginRedirect struct {
	http.ResponseWriter
	base string
}

func (l *loginRedirect) WriteHeader(code int) {
	if loc := l.Header().Get("Location"); code == http.StatusSeeOther && strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, l.base+"/") {
		if rest, ok := strings.CutPrefix(loc, "/login?next="); ok {
			loc = l.base + "/login?next=" + rest
		} else {
			loc = l.base + loc
		}
		l.Header().Set("Location", loc)
	}
	l.ResponseWriter.WriteHeader(code)
}

func (l *loginRedirect) Flush() {
	if f, ok := l.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// paused lists the principal's tasks that wait for an answer, as items
// (in the answered view, the tasks that no longer do).
func (sp *ServerPage) paused(ctx context.Context, principal string, lq listQuery) ([]row, error) {
	pctx := sp.cfg.WithPrincipal(ctx, principal)
	var out []row
	now := sp.cfg.Now()
	for _, name := range sp.cfg.Agents() {
		h, ok := sp.cfg.Handler(name)
		if !ok {
			continue
		}
		req := &a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired, PageSize: 100}
		if lq.View == viewAnswered {
			req.Status = ""
		}
		res, err := h.ListTasks(pctx, req)
		if err != nil {
			return nil, fmt.Errorf("list the paused tasks of agent %s: %w", name, err)
		}
		for _, t := range res.Tasks {
			if (lq.View == viewAnswered) == (t.Status.State == a2a.TaskStateInputRequired) {
				continue
			}
			link := sp.cfg.Base + "/t/" + url.PathEscape(name) + "/" + url.PathEscape(string(t.ID))
			taskLink := sp.cfg.Base + "/tasks/" + url.PathEscape(name) + "/" + url.PathEscape(string(t.ID))
			if lq.View == viewAnswered {
				it := &inbox.Item{AgentURL: name, TaskID: string(t.ID), Request: firstRequest(t)}
				if q := lastQuestion(t); q != nil {
					it.Question, it.Text = q, q.Text
				}
				r := newRow(it, now, 0)
				r.Expires, r.Left, r.Attempt = time.Time{}, "", ""
				r.Link, r.TaskLink, r.Answered = taskLink, taskLink, stateName(t.Status.State)
				out = append(out, r)
				continue
			}
			if t.Status.Message == nil {
				continue
			}
			it := inbox.FromStatus(name, string(t.ID), t.ContextID, t.Status.Message)
			it.Request = firstRequest(t)
			if e := it.Expires(); !e.IsZero() && !e.After(now) {
				continue
			}
			r := newRow(it, now, sp.maxAttempts(it.Question))
			r.Link, r.TaskLink = link, taskLink
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Item.TaskID < out[j].Item.TaskID })
	return lq.apply(out), nil
}

// firstRequest is the message that started the task: the first of its
// history, when it is the caller's.
func firstRequest(t *a2a.Task) *a2a.Message {
	if len(t.History) > 0 && t.History[0].Role == a2a.MessageRoleUser {
		return t.History[0]
	}
	return nil
}

// lastQuestion is the last question the task's agent asked.
func lastQuestion(t *a2a.Task) *question.Question {
	for i := len(t.History) - 1; i >= 0; i-- {
		if m := t.History[i]; m.Role == a2a.MessageRoleAgent {
			if q, ok, err := question.FromMessage(m); ok && err == nil {
				return q
			}
		}
	}
	return nil
}

func (sp *ServerPage) maxAttempts(q *question.Question) int {
	if q != nil && q.MaxAttempts > 0 {
		return q.MaxAttempts
	}
	return sp.cfg.MaxAttempts
}

func (sp *ServerPage) page(sess *session, title, live string, body any) page {
	who := sess.person.Name
	if who == anonymous {
		who = "anonymous"
	}
	return page{Title: title, Person: who, CSRF: sp.sess.csrf(sess), Body: body, Live: live}
}

func (sp *ServerPage) render(w http.ResponseWriter, status int, name string, data any) {
	(&Server{tmpl: sp.tmpl, log: sp.log}).render(w, status, name, data)
}

func (sp *ServerPage) fail(w http.ResponseWriter, what string, err error) {
	sp.log.Error("server page: "+what, slog.Any("error", err))
	http.Error(w, "could not "+what+"; see the server's log", http.StatusInternalServerError)
}

func (sp *ServerPage) list(w http.ResponseWriter, r *http.Request, sess *session) {
	lq := readListQuery(r)
	all, err := sp.paused(r.Context(), sess.person.Name, listQuery{View: lq.View})
	if err != nil {
		sp.fail(w, "list the paused tasks", err)
		return
	}
	v := listedView(all, lq)
	v.Heading, v.Intro = "Waiting on you", "Your tasks that wait for an answer. The list updates by itself."
	title := "Paused tasks"
	if lq.View == viewAnswered {
		v.Heading, v.Intro, title = "Answered", "Your tasks that no longer wait for an answer: answered, declined, canceled or ended.", "Answered tasks"
	}
	if sp.seesStats(sess) {
		v.StatsLink = sp.cfg.Base + "/stats"
	}
	pg := sp.page(sess, title, "list", v)
	pg.Notice = sp.sess.notice(r, sess)
	sp.render(w, http.StatusOK, "list.html", pg)
}

func (sp *ServerPage) rowsFragment(w http.ResponseWriter, r *http.Request, sess *session) {
	rows, err := sp.paused(r.Context(), sess.person.Name, readListQuery(r))
	if err != nil {
		sp.fail(w, "list the paused tasks", err)
		return
	}
	sp.render(w, http.StatusOK, "rows", rows)
}

// seesStats says whether the person may see BASE/stats.
func (sp *ServerPage) seesStats(sess *session) bool {
	return sp.open || slices.Contains(sp.cfg.StatsPrincipals, sess.person.Name)
}

// history is BASE/tasks/AGENT/TASK: the task's messages and who decided
// what, read from the agent as the principal.
func (sp *ServerPage) history(w http.ResponseWriter, r *http.Request, sess *session) {
	name, _, t := sp.task(w, r, sess)
	if t == nil {
		return
	}
	v := taskView{TaskID: string(t.ID), Agent: name}
	fillTask(&v, t)
	sp.render(w, http.StatusOK, "task.html", sp.page(sess, "Task "+string(t.ID), "", v))
}

// pagePoll is how often a principal's paused tasks are read while they
// have a live page open.
const pagePoll = 2 * time.Second

// pageWatch is the one read of a principal's paused tasks, every pagePoll,
// that all their live pages share: the store keeps no list of watchers, so
// the page looks, but once per principal however many pages are open.
type pageWatch struct {
	pages   int // live pages following it
	tag     string
	changed chan struct{} // closed and replaced at each change
	stop    context.CancelFunc
}

// watch joins the principal's watch, starting it for their first live
// page; leave ends it after the last.
func (sp *ServerPage) watch(principal string) (current func() (string, <-chan struct{}), leave func()) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	pw := sp.watches[principal]
	if pw == nil {
		ctx, cancel := context.WithCancel(context.Background())
		pw = &pageWatch{changed: make(chan struct{}), stop: cancel}
		sp.watches[principal] = pw
		if !sp.closed {
			sp.wg.Add(1)
			go func() { defer sp.wg.Done(); sp.poll(ctx, principal, pw) }()
		}
	}
	pw.pages++
	var once sync.Once
	current = func() (string, <-chan struct{}) {
		sp.mu.Lock()
		defer sp.mu.Unlock()
		return pw.tag, pw.changed
	}
	return current, func() {
		once.Do(func() {
			sp.mu.Lock()
			defer sp.mu.Unlock()
			if pw.pages--; pw.pages == 0 {
				pw.stop()
				delete(sp.watches, principal)
			}
		})
	}
}

// poll reads the principal's paused tasks until ctx ends, and tells the
// watch's pages when they change. The tag is "" while there are none.
func (sp *ServerPage) poll(ctx context.Context, principal string, pw *pageWatch) {
	tick := time.NewTicker(pagePoll)
	defer tick.Stop()
	for {
		if rows, err := sp.paused(ctx, principal, listQuery{}); err == nil {
			var b strings.Builder
			for _, row := range rows {
				b.WriteString(row.Item.TaskID + "/" + row.Item.Key + "|")
			}
			tag := ""
			if len(rows) > 0 {
				tag = versionTag(b.String())
			}
			sp.mu.Lock()
			if tag != pw.tag {
				pw.tag = tag
				close(pw.changed)
				pw.changed = make(chan struct{})
			}
			sp.mu.Unlock()
		} else if ctx.Err() == nil {
			sp.log.Warn("server page: cannot list the paused tasks for a live page", slog.Any("error", err))
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return
		case <-sp.done:
			return
		}
	}
}

// events tells a live page when the principal's paused tasks change
// (serveEvents), in one of the principal's stream slots.
func (sp *ServerPage) events(w http.ResponseWriter, r *http.Request, sess *session) {
	var (
		release func()
		err     error
	)
	if sp.cfg.AcquireStream != nil {
		release, err = sp.cfg.AcquireStream(sp.cfg.WithPrincipal(r.Context(), sess.person.Name))
	} else {
		release, err = sp.streams.acquire(sess.person.Name)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	defer release()
	current, leave := sp.watch(sess.person.Name)
	defer leave()
	serveEvents(w, r, sp.done, current)
}

// task reads the path's task for the principal.
func (sp *ServerPage) task(w http.ResponseWriter, r *http.Request, sess *session) (string, a2asrv.RequestHandler, *a2a.Task) {
	name := r.PathValue("agent")
	h, ok := sp.cfg.Handler(name)
	if !ok {
		http.Error(w, fmt.Sprintf("this server has no agent %q", name), http.StatusNotFound)
		return "", nil, nil
	}
	t, err := h.GetTask(sp.cfg.WithPrincipal(r.Context(), sess.person.Name), &a2a.GetTaskRequest{ID: a2a.TaskID(r.PathValue("task"))})
	if errors.Is(err, a2a.ErrTaskNotFound) {
		http.Error(w, fmt.Sprintf("you have no task %q at agent %s", r.PathValue("task"), name), http.StatusNotFound)
		return "", nil, nil
	}
	if err != nil {
		sp.fail(w, "read the task", err)
		return "", nil, nil
	}
	return name, h, t
}

func (sp *ServerPage) formOf(name string, t *a2a.Task, inputs, typed map[string]string, errs []question.FieldError) *form {
	link := sp.cfg.Base + "/t/" + url.PathEscape(name) + "/" + url.PathEscape(string(t.ID))
	it := &inbox.Item{AgentURL: name, TaskID: string(t.ID), State: inbox.StateOpen}
	if t.Status.State == a2a.TaskStateInputRequired && t.Status.Message != nil {
		it = inbox.FromStatus(name, string(t.ID), t.ContextID, t.Status.Message)
	}
	it.Request = firstRequest(t)
	f := &form{Item: it, Q: it.Question, Text: it.Text, About: about(it), Expires: it.Expires(), Action: link, StateURL: link + "/state",
		Request: requestText(it.Request), Subject: subjectOf(it.Question),
		TaskLink: sp.cfg.Base + "/tasks/" + url.PathEscape(name) + "/" + url.PathEscape(string(t.ID))}
	if it.Question != nil {
		f.StateURL += "?q=" + url.QueryEscape(it.Question.ID)
	}
	now := sp.cfg.Now()
	if !f.Expires.IsZero() {
		f.Left = client.HumanDuration(f.Expires.Sub(now))
	}
	switch {
	case t.Status.State != a2a.TaskStateInputRequired:
		f.Closed = "the task is " + stateName(t.Status.State)
		if t.Status.Message != nil {
			f.Closed += " (" + text.Parts(t.Status.Message.Parts, "\n") + ")"
		}
	case !f.Expires.IsZero() && !f.Expires.After(now):
		f.Closed = "expired at " + f.Expires.UTC().Format(time.RFC3339)
	}
	if it.Question == nil {
		f.TextOnly = true
		f.Typed = inputs[""]
		return f
	}
	fillFields(f, it.Question, inputs, typed, errs, sp.maxAttempts(it.Question))
	return f
}

func (sp *ServerPage) form(w http.ResponseWriter, r *http.Request, sess *session) {
	name, _, t := sp.task(w, r, sess)
	if t == nil {
		return
	}
	f := sp.formOf(name, t, nil, nil, nil)
	f.Notice = sp.sess.notice(r, sess)
	sp.render(w, http.StatusOK, "form.html", sp.page(sess, cmp.Or(titleOf(f.Text), "Task "+string(t.ID)), "item", f))
}

func (sp *ServerPage) state(w http.ResponseWriter, r *http.Request, sess *session) {
	name, _, t := sp.task(w, r, sess)
	if t == nil {
		return
	}
	f := sp.formOf(name, t, nil, nil, nil)
	w.Header().Set("Content-Type", "application/json")
	key := ""
	if f.Q != nil {
		key = f.Q.ID
	}
	// The page's question is the one it was rendered with; a re-ask is a
	// new question, and the page offers to show it.
	open := f.Closed == "" && (r.URL.Query().Get("q") == "" || r.URL.Query().Get("q") == key)
	out := map[string]any{"open": open, "closed": f.Closed}
	if f.Closed == "" && !open {
		out["closed"], out["next"] = "the agent asks again", f.Action
	}
	_ = json.NewEncoder(w).Encode(out)
}

// check is what a form's field holds, checked as the answer will be
// (fieldCheck).
func (sp *ServerPage) check(w http.ResponseWriter, r *http.Request, sess *session) {
	name, _, t := sp.task(w, r, sess)
	if t == nil {
		return
	}
	f := sp.formOf(name, t, nil, nil, nil)
	if f.Q == nil {
		http.Error(w, "the task asks no question with fields", http.StatusConflict)
		return
	}
	fieldCheck(w, r, f.Q)
}

// answer sends the form's answer (checked as the agent will check it) to
// the agent as the principal, with the decision record.
func (sp *ServerPage) answer(w http.ResponseWriter, r *http.Request, sess *session) {
	name, h, t := sp.task(w, r, sess)
	if t == nil {
		return
	}
	inputs, typed := formInputs(r.PostForm)
	inputs[""] = r.PostForm.Get("answer")
	justification := strings.TrimSpace(r.PostForm.Get("justification"))
	f := sp.formOf(name, t, nil, nil, nil)
	title := cmp.Or(titleOf(f.Text), "Task "+string(t.ID))
	again := func(status int, errs []question.FieldError, problem string) {
		g := sp.formOf(name, t, inputs, typed, errs)
		g.Justify, g.Problem = justification, problem
		sp.render(w, status, "form.html", sp.page(sess, title, "item", g))
	}
	if f.Closed != "" {
		again(http.StatusConflict, nil, "This question no longer takes answers ("+f.Closed+"). Nothing was sent.")
		return
	}
	q := f.Q
	who := question.Decider{Kind: question.DeciderPerson, Name: sess.person.Name, Via: "server page"}
	if who.Name == anonymous {
		who.Name = "anonymous"
	}
	rec := question.Decision{Version: question.DecisionVersion, By: who, Justification: justification, At: sp.cfg.Now().UTC().Truncate(time.Millisecond)}
	msg := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser, TaskID: t.ID, ContextID: t.ContextID}
	obj := map[string]any{}
	action := r.PostForm.Get("action")
	switch action {
	case question.ActionDecline, question.ActionCancel:
		reason := strings.TrimSpace(r.PostForm.Get("reason"))
		if rec.Justification == "" {
			rec.Justification = reason
		}
		if q == nil {
			if action == question.ActionCancel {
				break
			}
			again(http.StatusUnprocessableEntity, nil, "A question asked in text only cannot be declined; answer it or cancel the task.")
			return
		}
		obj["action"] = action
		if reason != "" {
			obj["reason"] = reason
		}
	case "", "answer":
		if q == nil {
			text := strings.TrimSpace(inputs[""])
			if text == "" {
				again(http.StatusUnprocessableEntity, nil, "An answer is needed.")
				return
			}
			msg.Parts = a2a.ContentParts{a2a.NewTextPart(text)}
			break
		}
		fields, errs := parseAnswer(q, inputs, typed)
		if len(errs) > 0 {
			again(http.StatusUnprocessableEntity, errs, "")
			return
		}
		rec.Justification = justificationOf(q, justification, fields)
		for k, v := range fields {
			obj[k] = v
		}
		rec.Decision = q.DecisionFor("", fields)
	default:
		http.Error(w, fmt.Sprintf("unknown action %q (answer, decline or cancel)", action), http.StatusBadRequest)
		return
	}
	pctx := sp.cfg.WithPrincipal(r.Context(), sess.person.Name)
	if q == nil && action == question.ActionCancel {
		if _, err := h.CancelTask(pctx, &a2a.CancelTaskRequest{ID: t.ID}); err != nil {
			again(http.StatusBadGateway, nil, "The task could not be canceled: "+err.Error())
			return
		}
		http.Redirect(w, r, sp.cfg.Base+"/?"+sp.sess.noticeQuery(sess, "Task "+string(t.ID)+" was canceled."), http.StatusSeeOther)
		return
	}
	if q != nil {
		rec.QuestionID, rec.QuestionDigest = q.ID, question.Digest(q)
		if rec.Decision == "" {
			rec.Decision = q.DecisionFor(action, nil)
		}
		obj["questionId"] = q.ID
		p := a2a.NewDataPart(obj)
		p.MediaType = question.MediaTypeJSON
		msg.Parts = a2a.ContentParts{p}
		msg.Extensions = []string{question.ExtensionURI}
	} else {
		rec.QuestionID, rec.QuestionDigest, rec.Decision = t.Status.Message.ID, question.DigestText(f.Text), question.DecisionAnswered
	}
	msg.Metadata = map[string]any{question.DecisionKey: rec.Metadata(), client.MetaAnsweredBy: client.ByPerson, client.MetaPerson: who.Name}
	res, err := h.SendMessage(pctx, &a2a.SendMessageRequest{Message: msg})
	if err != nil {
		sp.log.Info("server page: the answer was refused", slog.String("task", string(t.ID)), slog.Any("error", err))
		again(http.StatusConflict, nil, "The agent refused the answer: "+err.Error())
		return
	}
	sp.log.Info("server page: answered", slog.String("principal", who.Name), slog.String("task", string(t.ID)), slog.String("decision", rec.Decision))
	if done, ok := res.(*a2a.Task); ok && done.Status.State == a2a.TaskStateInputRequired {
		http.Redirect(w, r, f.Action, http.StatusSeeOther) // the agent asks again: its new question
		return
	}
	state := "answered"
	if done, ok := res.(*a2a.Task); ok {
		state = "now " + stateName(done.Status.State)
	}
	http.Redirect(w, r, sp.cfg.Base+"/?"+sp.sess.noticeQuery(sess, "Task "+string(t.ID)+" is "+state+"."), http.StatusSeeOther)
}

// stats is BASE/stats: how questions fare on this server.
func (sp *ServerPage) stats(w http.ResponseWriter, r *http.Request, sess *session) {
	data := statsView{Off: sp.cfg.Stats == nil}
	if !sp.seesStats(sess) {
		http.Error(w, "the figures are the whole server's, every principal's questions: they are shown to the principals the server names for them, not to "+sess.person.Name, http.StatusForbidden)
		return
	}
	if sp.cfg.Stats != nil {
		data.Header, data.Rows = sp.cfg.Stats()
	}
	sp.render(w, http.StatusOK, "stats.html", sp.page(sess, "How questions fare", "", data))
}

// statsView is BASE/stats: askpoint stats' table.
type statsView struct {
	Off    bool
	Header []string
	Rows   [][]string
}
