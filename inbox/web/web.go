// Package web is the web face of the caller's durable inbox: a page that
// lists the questions waiting on a person and a form for each, generated
// from the question's JSON Schema through question.Field (the model the
// terminal prompts are built from too). People log in with a token from a
// people file; sessions are HMAC-signed cookies; every form carries a CSRF
// token and is refused from another origin. The page learns of new,
// answered, expired and withdrawn questions through server-sent events, and
// people can be told of new questions and reminders by email.
//
// Answers go through inbox.Resume with the resolver chain the inbox was
// given: what facts or policy answer never reaches a person.
//
// ServerPage serves the same pages for a server's own paused tasks
// (askpoint serve's /inbox/): each principal sees their tasks and answers
// the agent directly.
package web

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/question"
)

//go:embed assets
var assets embed.FS

// Via is how the web inbox names itself in decision records.
const Via = "web inbox"

// Config configures a web inbox.
type Config struct {
	Inbox  *inbox.Inbox
	People []Person
	// PublicURL is where people reach the inbox (scheme://host:port): the
	// base of the links in emails, and the only origin whose forms are
	// taken.
	PublicURL string
	// ExtraHosts are other Host header values accepted (e.g.
	// localhost:8430 beside 127.0.0.1:8430).
	ExtraHosts []string
	// Resolvers answer the questions that follow a person's answer before
	// a person is asked again (facts, policy); the inbox is always last.
	Resolvers []client.Resolver
	// Options are passed to inbox.Resume (a dialer with the agents'
	// tokens, the round cap...).
	Options []client.Option
	// Dial connects to an agent to read a task (the history view, the
	// refresh); default grpcdial.Dial.
	Dial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
	// Card fetches an agent's card, whose question extension params say
	// how many attempts a question gets (a first ask does not carry it);
	// default: the card at AGENT_URL/.well-known/agent-card.json.
	Card func(ctx context.Context, agentURL string) (*a2a.AgentCard, error)
	// Mailer, when set, emails people with an address of new questions and
	// of the agents' reminders.
	Mailer *Mailer
	// PushAgents are the only agents whose push notifications /push takes
	// (agent URL -> its own push token, "" for PushToken), each with its
	// token; none: /push takes no notifications. See inbox.PushOptions.
	PushAgents map[string]string
	// PushToken is the push token of the agents listed with "".
	PushToken string
	// Watch is how often the inbox file is looked at for changes made by
	// any process (default 500ms).
	Watch time.Duration
	// Refresh is how often open questions' tasks are read from their agents,
	// so that a question withdrawn without a push leaves the list (default
	// 15s; negative: never).
	Refresh time.Duration
	// AnswerTimeout bounds sending an answer and following the task until
	// it pauses or ends (default 2m).
	AnswerTimeout time.Duration
	// MaxStreams caps the live pages (event streams) one person holds open
	// (default DefaultMaxStreams).
	MaxStreams int
	Logger     *slog.Logger
	Now        func() time.Time
}

// Server is a web inbox.
type Server struct {
	cfg   Config
	ib    *inbox.Inbox
	sess  *sessions
	tmpl  *template.Template
	log   *slog.Logger
	now   func() time.Time
	hosts map[string]bool
	orig  string // the accepted origin

	mu      sync.Mutex
	version string
	tag     string        // a short digest of version, what pages and event streams compare
	changed chan struct{} // closed and replaced at each change
	done    chan struct{}
	failed  map[string]int  // failures to send a notice, by item and kind
	queued  map[string]bool // notices waiting to be sent

	caps map[string]int // agent URL -> maxAttempts from its card (0: unknown)

	streams *streamCap

	mail chan notice
	wg   sync.WaitGroup
}

type notice struct {
	item *inbox.Item
	kind string // "new" or "reminder-N"
	rem  *inbox.Reminder
}

// New checks cfg and returns the server; Run starts its watcher.
func New(cfg Config) (*Server, error) {
	if cfg.Inbox == nil {
		return nil, errors.New("web: no inbox")
	}
	if len(cfg.People) == 0 {
		return nil, errors.New("web: nobody can log in: give a people file")
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("web: the public URL %q must be http(s)://host:port with no path", cfg.PublicURL)
	}
	cfg.PublicURL = u.Scheme + "://" + u.Host
	if cfg.Watch <= 0 {
		cfg.Watch = 500 * time.Millisecond
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = 15 * time.Second
	}
	if cfg.AnswerTimeout <= 0 {
		cfg.AnswerTimeout = 2 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Card == nil {
		cfg.Card = func(ctx context.Context, agentURL string) (*a2a.AgentCard, error) {
			return agentcard.NewResolver(&http.Client{}).Resolve(ctx, strings.TrimSuffix(agentURL, "/"))
		}
	}
	if cfg.Dial == nil {
		cfg.Dial = func(ctx context.Context, agentURL string) (*a2aclient.Client, error) {
			return grpcdial.Dial(ctx, agentURL, client.DialOptions{})
		}
	}
	s := &Server{
		cfg: cfg, ib: cfg.Inbox, log: cfg.Logger, now: cfg.Now,
		sess:    newSessions(cfg.People, cfg.PublicURL, "", cfg.Now),
		hosts:   map[string]bool{u.Host: true},
		orig:    cfg.PublicURL,
		changed: make(chan struct{}),
		done:    make(chan struct{}),
		failed:  map[string]int{},
		queued:  map[string]bool{},
		caps:    map[string]int{},
		mail:    make(chan notice, 64),
		streams: newStreamCap(cfg.MaxStreams),
	}
	for _, h := range cfg.ExtraHosts {
		s.hosts[h] = true
	}
	if s.tmpl, err = parseTemplates(""); err != nil {
		return nil, err
	}
	return s, nil
}

// parseTemplates parses the pages for a site served under base ("" for
// the root).
func parseTemplates(base string) (*template.Template, error) {
	t, err := template.New("").Funcs(funcs).Funcs(template.FuncMap{"base": func() string { return base }}).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("web: templates: %w", err)
	}
	return t, nil
}

// Run watches the inbox until ctx ends: it tells open pages of changes,
// sends the notices, and reads open questions' tasks now and then. Live
// pages (their event streams) end when Run returns.
func (s *Server) Run(ctx context.Context) {
	defer close(s.done)
	if s.cfg.Mailer != nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.sendMail(ctx) }()
	}
	defer s.wg.Wait()
	tick := time.NewTicker(s.cfg.Watch)
	defer tick.Stop()
	var refresh <-chan time.Time
	if s.cfg.Refresh > 0 {
		rt := time.NewTicker(s.cfg.Refresh)
		defer rt.Stop()
		refresh = rt.C
	}
	s.look(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.look(ctx)
		case <-refresh:
			s.refresh(ctx)
			s.look(ctx)
		}
	}
}

// look compares the inbox with what was last seen; on a change it wakes the
// live pages and queues notices of new questions.
func (s *Server) look(ctx context.Context) {
	v, err := s.ib.Version(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("web inbox: cannot read the inbox", slog.Any("error", err))
		}
		return
	}
	items, err := s.open(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("web inbox: cannot list the inbox", slog.Any("error", err))
		}
		return
	}
	s.learnCaps(ctx, items)
	var b strings.Builder
	b.WriteString(v)
	for _, it := range items {
		fmt.Fprintf(&b, "|%d", it.ID)
	}
	sig := b.String()
	s.mu.Lock()
	if sig != s.version {
		s.version, s.tag = sig, versionTag(sig)
		close(s.changed)
		s.changed = make(chan struct{})
	}
	s.mu.Unlock()
	if s.cfg.Mailer != nil {
		for _, it := range items {
			s.queue(ctx, notice{item: it, kind: "new"})
		}
	}
}

// learnCaps reads, once per agent, how many attempts its questions get
// (the question extension's maxAttempts param on its card), so that a
// first ask can say "attempt 1 of 3".
func (s *Server) learnCaps(ctx context.Context, items []*inbox.Item) {
	for _, it := range items {
		s.mu.Lock()
		_, known := s.caps[it.AgentURL]
		s.mu.Unlock()
		if known || it.AgentURL == "" {
			continue
		}
		n := 0
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		card, err := s.cfg.Card(cctx, it.AgentURL)
		cancel()
		if err != nil {
			s.log.Debug("web inbox: no agent card", slog.String("agent", it.AgentURL), slog.Any("error", err))
		} else {
			for _, e := range card.Capabilities.Extensions {
				if e.URI == question.ExtensionURI {
					if f, ok := e.Params["maxAttempts"].(float64); ok && f >= 1 {
						n = int(f)
					}
				}
			}
		}
		s.mu.Lock()
		s.caps[it.AgentURL] = n
		s.mu.Unlock()
	}
}

// maxAttempts is the question's cap on attempts: its own, else its agent's.
func (s *Server) maxAttempts(it *inbox.Item) int {
	if it.Question != nil && it.Question.MaxAttempts > 0 {
		return it.Question.MaxAttempts
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps[it.AgentURL]
}

// open lists the items that wait on a person now: open and not expired.
func (s *Server) open(ctx context.Context) ([]*inbox.Item, error) {
	items, err := s.ib.List(ctx, inbox.ListOptions{ByTask: true})
	if err != nil {
		return nil, err
	}
	now := s.now()
	out := items[:0]
	for _, it := range items {
		if e := it.Expires(); !e.IsZero() && !e.After(now) {
			continue
		}
		out = append(out, it)
	}
	return out, nil
}

// refresh reads each open question's task from its agent, so that a
// question that was withdrawn (the task was canceled or moved on without a
// push reaching this inbox) leaves the list.
func (s *Server) refresh(ctx context.Context) {
	items, err := s.open(ctx)
	if err != nil {
		return
	}
	clients := map[string]*a2aclient.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Destroy()
		}
	}()
	for _, it := range items {
		if it.AgentURL == "" || ctx.Err() != nil {
			continue
		}
		c, ok := clients[it.AgentURL]
		if !ok {
			dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			var err error
			c, err = s.cfg.Dial(dctx, it.AgentURL)
			cancel()
			if err != nil {
				s.log.Debug("web inbox: refresh: cannot reach agent", slog.String("agent", it.AgentURL), slog.Any("error", err))
				clients[it.AgentURL] = nil
				continue
			}
			clients[it.AgentURL] = c
		}
		if c == nil {
			continue
		}
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		t, err := c.GetTask(gctx, &a2a.GetTaskRequest{ID: a2a.TaskID(it.TaskID)})
		cancel()
		if err != nil {
			s.log.Debug("web inbox: refresh: cannot read task", slog.String("task", it.TaskID), slog.Any("error", err))
			continue
		}
		if _, _, err := s.ib.Observe(ctx, it.AgentURL, t); err != nil {
			s.log.Warn("web inbox: refresh: cannot record the task's state", slog.String("task", it.TaskID), slog.Any("error", err))
		}
	}
}

// wait returns the current version's tag and a channel closed at the
// next change.
func (s *Server) wait() (string, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tag, s.changed
}

// versionTag is what a page and its event stream know a version by: short,
// and saying nothing of the items.
func versionTag(version string) string {
	sum := sha256.Sum256([]byte(version))
	return hex.EncodeToString(sum[:8])
}

// Handler serves the inbox.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.loginPost)
	mux.HandleFunc("POST /logout", s.authed(s.logout))
	mux.HandleFunc("GET /{$}", s.authed(s.listPage))
	mux.HandleFunc("GET /items", s.authed(s.listFragment))
	mux.HandleFunc("GET /events", s.authed(s.events))
	mux.HandleFunc("GET /q/{id}", s.authed(s.formPage))
	mux.HandleFunc("GET /q/{id}/state", s.authed(s.itemState))
	mux.HandleFunc("POST /q/{id}", s.authed(s.answerPost))
	mux.HandleFunc("POST /q/{id}/check", s.authed(s.checkPost))
	mux.HandleFunc("GET /tasks/{task}", s.authed(s.taskPage))
	mux.HandleFunc("GET /l/{token}", s.linkPage)
	mux.HandleFunc("POST /l/{token}", s.linkPost)
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(staticFS())))
	mux.Handle("POST /push", inbox.NewPushHandler(s.ib, inbox.PushOptions{
		Token:  s.cfg.PushToken,
		Agents: s.cfg.PushAgents,
		// What the agent itself says is recorded, never what a
		// notification claims (issue 23, finding 1).
		Verify: func(ctx context.Context, agentURL, taskID string) (*a2a.Task, error) {
			c, err := s.cfg.Dial(ctx, agentURL)
			if err != nil {
				return nil, err
			}
			defer c.Destroy()
			return c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
		},
		OnReminder: func(it *inbox.Item, r inbox.Reminder) {
			if s.cfg.Mailer != nil {
				s.queue(context.Background(), notice{item: it, kind: "reminder-" + strconv.Itoa(r.N), rem: &r})
			}
		},
	}))
	return s.guard(mux)
}

// guard refuses requests for another host (DNS rebinding) and, for every
// state-changing request, from another origin; it sets the headers every
// page gets.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hosts[r.Host] {
			http.Error(w, fmt.Sprintf("this inbox answers for %s only, not for host %q", s.orig, r.Host), http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		// Every door, /push too: an agent's push comes from no page.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if why := s.crossOrigin(r); why != "" {
				s.log.Info("web inbox: cross-origin request refused", slog.String("path", r.URL.Path), slog.String("why", why))
				http.Error(w, "refused: "+why, http.StatusForbidden)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// crossOrigin says why a state-changing request comes from elsewhere ("" if
// it does not): a browser's Sec-Fetch-Site other than same-origin, or an
// Origin (else Referer) other than the inbox's.
func (s *Server) crossOrigin(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "the request comes from another site (" + site + ")"
	}
	if o := r.Header.Get("Origin"); o != "" {
		if o != s.orig && !s.hosts[strings.TrimPrefix(strings.TrimPrefix(o, "http://"), "https://")] {
			return "the request comes from origin " + o + ", not " + s.orig
		}
		return ""
	}
	if ref := r.Header.Get("Referer"); ref != "" {
		u, err := url.Parse(ref)
		if err != nil || !s.hosts[u.Host] {
			return "the request comes from another page than this inbox's"
		}
	}
	return ""
}

// maxBodyBytes bounds what every door takes in a request (a form, a
// push notification).
const maxBodyBytes = 1 << 20

// formError answers a form that cannot be read.
func formError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		http.Error(w, fmt.Sprintf("the form is larger than %d bytes", maxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "the form cannot be read: "+err.Error(), http.StatusBadRequest)
}

type authedHandler func(w http.ResponseWriter, r *http.Request, sess *session)

// authed lets logged-in people through; others go to the login page (or
// get 401 for what a script fetches). A POST must carry the session's
// CSRF token.
func (s *Server) authed(h authedHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sess.check(r)
		if sess == nil {
			page := !strings.HasSuffix(r.URL.Path, "/state") && r.URL.Path != "/items" && r.URL.Path != "/events"
			if r.Method == http.MethodGet && page {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "log in first", http.StatusUnauthorized)
			return
		}
		if sess.item != 0 && !s.scopeAllows(r, sess) {
			// An email's link opened this session for one question.
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			http.Error(w, "this session was opened by an email's link for one question only; log in for the rest", http.StatusForbidden)
			return
		}
		if r.Method == http.MethodPost {
			if err := r.ParseForm(); err != nil {
				formError(w, err)
				return
			}
			if !s.sess.csrfOK(sess, r.PostForm.Get("csrf")) {
				http.Error(w, "refused: the form's CSRF token is missing or not this session's; reload the page", http.StatusForbidden)
				return
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		h(w, r, sess)
	}
}

// render writes a page; a failing template is logged and answered 500.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("web inbox: template failed", slog.String("template", name), slog.Any("error", err))
		http.Error(w, "the page could not be rendered; see the inbox's log", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if sess := s.sess.check(r); sess != nil && sess.item == 0 {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login.html", page{Title: "Log in", Body: map[string]any{"Next": safeNext(r.URL.Query().Get("next"))}})
}

func (s *Server) loginPost(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		formError(w, err)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	done, wait := s.sess.attempt(clientAddr(r))
	if done == nil {
		s.log.Warn("web inbox: login refused: too many failed logins", slog.String("remote", r.RemoteAddr))
		secs := int(wait.Seconds()) + 1
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		s.render(w, http.StatusTooManyRequests, "login.html", page{Title: "Log in", Body: map[string]any{"Next": next,
			"Error": fmt.Sprintf("Too many failed logins from your address: try again in %d seconds.", secs)}})
		return
	}
	p := s.sess.login(r.PostForm.Get("token"))
	done(p != nil)
	if p == nil {
		s.log.Info("web inbox: login refused", slog.String("remote", r.RemoteAddr))
		s.render(w, http.StatusUnauthorized, "login.html", page{Title: "Log in", Body: map[string]any{"Next": next, "Error": "That token is not known here."}})
		return
	}
	s.sess.issue(w, p)
	s.log.Info("web inbox: logged in", slog.String("person", p.Name))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// clientAddr is the address a request came from, without its port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, sess *session) {
	s.sess.end(w, sess)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// safeNext keeps a redirect after login on this site: next when it is a
// plain path of it, else "/". A browser reads a backslash as a slash and
// drops tabs and newlines, and http.Redirect cleans "/./" away, so
// "/\t/host" and "/./\host" would reach another origin as "//host":
// neither is a plain path.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.ContainsRune(next, '\\') || strings.IndexFunc(next, unicode.IsControl) >= 0 {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return next
}

// events is the live list's and the form's event stream (serveEvents),
// one of the person's MaxStreams.
func (s *Server) events(w http.ResponseWriter, r *http.Request, sess *session) {
	release, err := s.streams.acquire(sess.person.Name)
	if err != nil {
		http.Error(w, err.Error(), http.StatusTooManyRequests)
		return
	}
	defer release()
	serveEvents(w, r, s.done, s.wait)
}
