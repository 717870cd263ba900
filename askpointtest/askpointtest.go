// Package askpointtest tests what an agent's author builds, against a real
// askpoint server: a SQLite file in the test's temporary directory, the
// three A2A bindings on 127.0.0.1 on a free port (askpoint.Server.Serve),
// and a2a-go clients for its agents. Everything stops when the test ends.
//
//	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "pay", Agent: agent, Card: card})
//	task := env.Send(t, "pay", "Pay invoice INV-7: 80 EUR to ACME")
//	q := env.Question(t, task)            // the open question, or the test fails
//	task = env.Answer(t, task, "yes")     // as a person types it; a struct is sent as data
//	env.WaitState(t, string(task.ID), a2a.TaskStateCompleted)
//
// What a server does on its own timers, a test drives: with Options.Clock
// the server runs on a clock the test moves (Clock.Advance), and expiries,
// reminders and hold releases happen when it says. A step that panics
// fails its task at once (a server tries it again), and the server's
// warnings and errors, a step's error and panic among them, go to the
// test's log. Options.Tokens requires bearer tokens, GRPCClient speaks
// gRPC, and Run runs one step of an agent without a server at all.
//
// An agent that needs its own URL before it is built (a relay or a
// workflow gives it to its sub-agents for their push notifications) is
// served in two steps: Listen gives the URL, Serve starts the server.
// Push notifications reach every server this package started in the test
// binary, so a relay's sub-agent may be on this server or another one.
//
//	env := askpointtest.Listen(t)
//	assistant, err := relay.Agent(relay.Config{SubAgentURL: sub.AgentURL("expense"),
//		CallbackURL: env.AgentURL("assistant"), Logger: env.Logger()})
//	env.Serve(t, askpoint.AgentSpec{Name: "assistant", Agent: assistant, Card: card})
package askpointtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/store/sqlite"
)

// Env is one server under test. Its methods that take a testing.TB fail
// the test on an error; the others return it.
type Env struct {
	// URL is the server's base URL (http://127.0.0.1:PORT); agent NAME is
	// at URL/NAME.
	URL string
	// DBPath is the SQLite file, "" until Serve.
	DBPath string
	// Server is the running server, nil until Serve.
	Server *askpoint.Server

	*core
	token string // the caller's bearer token (As), "" for the default
}

// core is what every view of one server (As) shares.
type core struct {
	ln         net.Listener
	opts       Options
	logger     *slog.Logger
	eng        *engine.Engine
	agents     []string // served, in order
	stopServe  context.CancelFunc
	served     chan error
	closeStore func() error
	removeDir  string // Open's directory
	stopped    bool

	mu      sync.Mutex
	clients map[clientKey]*a2aclient.Client
	tasks   map[a2a.TaskID]string // task -> agent, for the tasks this Env sent
}

type clientKey struct {
	agent, token string
	grpc         bool
}

// Options tune a server.
type Options struct {
	// Config adjusts the server's configuration before it is built
	// (expiries, reminders, limits). Its Store is set by the harness, and
	// so are Now with Clock and Tokens with Tokens. WebhookHosts left nil
	// lets push notifications reach every server of this package in the
	// test binary; set, it names the only other addresses they may reach
	// (an empty slice: none but the server's own).
	Config func(*askpoint.Config)
	// Quiet drops the server's warnings and errors, which otherwise go to
	// the test's log (to standard error for a server Open started): a
	// step's error, a panic with its stack, a push that failed.
	Quiet bool
	// Tokens are the server's bearer tokens (Config.Tokens: token to
	// principal, 16 characters or more): every request must then carry
	// one. With one token, Send, Answer, Client and the rest use it; with
	// several, say which with As (or ClientAs).
	Tokens map[string]string
	// Clock is the server's clock (Config.Now), moved by Clock.Advance.
	// Nil: the real clock.
	Clock *Clock
}

// Start serves specs on a new server with default options.
func Start(t testing.TB, specs ...askpoint.AgentSpec) *Env {
	t.Helper()
	env := Listen(t)
	env.Serve(t, specs...)
	return env
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options, specs ...askpoint.AgentSpec) *Env {
	t.Helper()
	env := ListenWith(t, opts)
	env.Serve(t, specs...)
	return env
}

// Listen reserves the server's address, so that its URL (and its agents'
// URLs) are known before its agents are built; call Serve next.
func Listen(t testing.TB) *Env {
	t.Helper()
	return ListenWith(t, Options{})
}

// ListenWith is Listen with options.
func ListenWith(t testing.TB, opts Options) *Env {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("askpointtest: listen on 127.0.0.1: %v", err)
	}
	var w io.Writer
	if !opts.Quiet {
		w = testLog{t}
	}
	env := newEnv(ln, opts, w)
	t.Cleanup(env.stop)
	return env
}

func newEnv(ln net.Listener, opts Options, logTo io.Writer) *Env {
	logger := slog.New(slog.DiscardHandler)
	if logTo != nil {
		logger = slog.New(slog.NewTextHandler(logTo, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	return &Env{URL: "http://" + ln.Addr().String(), core: &core{
		ln: ln, opts: opts, logger: logger,
		clients: map[clientKey]*a2aclient.Client{}, tasks: map[a2a.TaskID]string{},
	}}
}

// AgentURL is the base URL of the agent named name.
func (e *Env) AgentURL(name string) string { return e.URL + "/" + strings.Trim(name, "/") }

// Logger is the server's logger: its warnings and errors go to the test's
// log (standard error for Open) unless Options.Quiet. Give it to a relay
// or a workflow the server serves (relay.Config.Logger) so that their
// lines land there too.
func (e *Env) Logger() *slog.Logger { return e.logger }

// Serve builds the server with a new SQLite file, registers specs and
// serves them. It may be called once.
func (e *Env) Serve(t testing.TB, specs ...askpoint.AgentSpec) {
	t.Helper()
	// Cleanups run last first: the stop Listen registered would come after
	// the directory's removal, while the server still writes to it.
	dir := t.TempDir()
	t.Cleanup(e.stop)
	if err := e.serve(dir, specs); err != nil {
		t.Fatal(err)
	}
}

// Open starts a server as Start does, outside a test: for a TestMain that
// shares one server among a package's tests, or a program's own checks. Its
// SQLite file is in a new temporary directory that Close removes; its
// warnings and errors go to standard error unless Options.Quiet.
func Open(opts Options, specs ...askpoint.AgentSpec) (*Env, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("askpointtest: listen on 127.0.0.1: %w", err)
	}
	dir, err := os.MkdirTemp("", "askpointtest-")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("askpointtest: %w", err)
	}
	var w io.Writer
	if !opts.Quiet {
		w = os.Stderr
	}
	e := newEnv(ln, opts, w)
	e.removeDir = dir
	if err := e.serve(dir, specs); err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// Close stops a server Open started and removes its directory. A server
// started in a test stops when the test ends.
func (e *Env) Close() { e.stop() }

// serve builds the server on a new SQLite file in dir and serves specs.
func (e *Env) serve(dir string, specs []askpoint.AgentSpec) error {
	if e.Server != nil {
		return errors.New("askpointtest: Serve was called twice")
	}
	return e.serveAt(filepath.Join(dir, "askpoint.db"), specs)
}

// Restart stops the server and starts a new one on the same SQLite file
// and the same address, serving specs: the agents of the next process,
// the same ones or a new version of them. Nothing of the first server's
// memory survives; what it stored does, so a test shows that a task paused
// before the restart resumes after it. The Env's clients, tasks and token
// carry over.
func (e *Env) Restart(t testing.TB, specs ...askpoint.AgentSpec) {
	t.Helper()
	if e.Server == nil {
		t.Fatal("askpointtest: Restart before Serve")
	}
	addr, path, dir := e.ln.Addr().String(), e.DBPath, e.removeDir
	e.removeDir = "" // Open's directory holds the file: keep it
	e.stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("askpointtest: listen on %s again: %v", addr, err)
	}
	c := e.core
	c.ln, c.stopped, c.removeDir = ln, false, dir
	c.eng, c.agents, c.stopServe, c.served, c.closeStore = nil, nil, nil, nil, nil
	e.Server = nil
	if err := e.serveAt(path, specs); err != nil {
		t.Fatal(err)
	}
}

// serveAt builds the server on the SQLite file at path and serves specs.
func (e *Env) serveAt(path string, specs []askpoint.AgentSpec) error {
	ctx := context.Background()
	e.DBPath = path
	st, err := sqlite.Open(ctx, e.DBPath)
	if err != nil {
		return fmt.Errorf("askpointtest: open %s: %w", e.DBPath, err)
	}
	cfg := askpoint.Config{Store: st, Logger: e.logger, PollInterval: 20 * time.Millisecond}
	if e.opts.Config != nil {
		e.opts.Config(&cfg)
		cfg.Store = st
	}
	if e.opts.Clock != nil {
		cfg.Now = e.opts.Clock.Now
	}
	if e.opts.Tokens != nil {
		cfg.Tokens = e.opts.Tokens
	}
	pushAll := cfg.WebhookHosts == nil
	api.WithEngineHook(&cfg, func(eng any) {
		e.eng = eng.(*engine.Engine)
		e.eng.FailPanicsAtOnce()
	})
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		_ = st.Close()
		return fmt.Errorf("askpointtest: NewServer: %w", err)
	}
	for _, s := range specs {
		if err := srv.Register(s); err != nil {
			_ = st.Close()
			return fmt.Errorf("askpointtest: Register(%s): %w", s.Name, err)
		}
		e.agents = append(e.agents, s.Name)
	}
	if err := srv.Start(ctx); err != nil {
		_ = st.Close()
		return fmt.Errorf("askpointtest: Start: %w", err)
	}
	e.Server = srv
	if e.opts.Clock != nil {
		e.opts.Clock.attach(e.core)
	}
	servers.join(e.core, pushAll)
	serveCtx, stop := context.WithCancel(ctx)
	e.stopServe, e.served = stop, make(chan error, 1)
	go func() { e.served <- srv.Serve(serveCtx, e.ln) }()
	e.closeStore = st.Close
	// One answer from the port says it is served (the listener holds the
	// request until then), and with it all Serve sets up first.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(e.URL + "/.well-known/agent-card.json")
	if err != nil {
		return fmt.Errorf("askpointtest: the server does not answer: %w", err)
	}
	resp.Body.Close()
	return nil
}

// servers are the servers of this package that are serving, for the push
// notifications between them (Options.Config's WebhookHosts).
var servers registry

type registry struct {
	mu   sync.Mutex
	live map[*core]bool // serving; true: takes every other's pushes
}

// join lets c's pushes reach every live server and, when all is true,
// every live server's reach c; leave undoes it.
func (r *registry) join(c *core, all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.live == nil {
		r.live = map[*core]bool{}
	}
	mine := c.ln.Addr().String()
	for o, oAll := range r.live {
		if all {
			c.eng.AllowWebhookHosts(o.ln.Addr().String())
		}
		if oAll {
			o.eng.AllowWebhookHosts(mine)
		}
	}
	r.live[c] = all
}

func (r *registry) leave(c *core) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.live, c)
}

// As is a view of the server whose Send, Answer, Client and the rest
// carry token as the caller's bearer token (a token of Options.Tokens).
// Call it on a served Env.
func (e *Env) As(token string) *Env {
	v := *e
	v.token = token
	return &v
}

// callerToken is the token e's requests carry: As's, else the server's
// only token, else none (then a server with tokens refuses them, saying
// so).
func (e *Env) callerToken() string {
	if e.token != "" || e.Server == nil {
		return e.token
	}
	if toks := e.Server.Config().Tokens; len(toks) == 1 {
		for tok := range toks {
			return tok
		}
	}
	return ""
}

// Idle waits until the server has nothing in hand: each of its timer
// loops (expiries and reminders, hold releases, push deliveries) has
// finished a round it began after the call, no step is queued or running
// and no push delivery is under way. A test uses it to check that
// something did not happen. It returns ctx's error if ctx ends first.
func (e *Env) Idle(ctx context.Context) error { return e.engine().Idle(ctx) }

// SweepNow runs one round of the sweeper (question expiries and
// reminders) at once, for a test whose server sweeps only when told
// (Config.DisableSweeper). Clock.Advance does what a server on a test's
// clock needs.
func (e *Env) SweepNow(ctx context.Context) error { return e.engine().SweepNow(ctx) }

// Waiters is how many tasks have callers waiting on them in the server
// (blocking sends, streams, subscriptions): a paused task that nobody
// waits on has none, since a pause is rows in the store.
func (e *Env) Waiters() int { return e.engine().Waiters() }

// StepRetries is how many step retries the server has scheduled (a step's
// error, tried again on its own timer).
func (e *Env) StepRetries() int64 { return e.engine().StepRetries() }

// TransientRetries is how many times the server has tried a request again
// after a transient store failure.
func (e *Env) TransientRetries() int64 { return e.engine().TransientRetries() }

func (e *Env) engine() *engine.Engine {
	if e.eng == nil {
		panic("askpointtest: the server is not served yet: call Serve (or Start) first")
	}
	return e.eng
}

// Client is an a2a-go client of the agent named name (its card, then the
// binding it prefers, JSON-RPC or HTTP+JSON) carrying the caller's token
// (see As); it is closed when the server stops.
func (e *Env) Client(t testing.TB, name string) *a2aclient.Client {
	t.Helper()
	return e.clientFor(t, clientKey{agent: name, token: e.callerToken()})
}

// ClientAs is Client with token as the bearer token of every call.
func (e *Env) ClientAs(t testing.TB, name, token string) *a2aclient.Client {
	t.Helper()
	return e.clientFor(t, clientKey{agent: name, token: token})
}

// GRPCClient is Client over the gRPC binding (client/grpcdial).
func (e *Env) GRPCClient(t testing.TB, name string) *a2aclient.Client {
	t.Helper()
	return e.clientFor(t, clientKey{agent: name, token: e.callerToken(), grpc: true})
}

func (e *Env) clientFor(t testing.TB, k clientKey) *a2aclient.Client {
	t.Helper()
	e.mu.Lock()
	c := e.clients[k]
	e.mu.Unlock()
	if c != nil {
		return c
	}
	c, err := e.dial(t.Context(), k)
	if err != nil {
		t.Fatal(err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if had := e.clients[k]; had != nil {
		_ = c.Destroy()
		return had
	}
	e.clients[k] = c
	return c
}

// Dial is Client for a caller outside a test; Destroy the client when done.
func (e *Env) Dial(ctx context.Context, name string) (*a2aclient.Client, error) {
	return e.dial(ctx, clientKey{agent: name, token: e.callerToken()})
}

func (e *Env) dial(ctx context.Context, k clientKey) (*a2aclient.Client, error) {
	o := client.DialOptions{Token: k.token}
	var (
		c   *a2aclient.Client
		err error
	)
	if k.grpc {
		o.Preferred = []a2a.TransportProtocol{a2a.TransportProtocolGRPC}
		c, err = grpcdial.Dial(ctx, e.AgentURL(k.agent), o)
	} else {
		c, err = client.DialWith(ctx, e.AgentURL(k.agent), o)
	}
	if err != nil {
		return nil, fmt.Errorf("askpointtest: dial %s: %w", k.agent, err)
	}
	return c, nil
}

// Stop stops the server now (a test of what survives a restart); the test's
// end stops it otherwise.
func (e *Env) Stop() { e.stop() }

func (c *core) stop() {
	if c.stopped {
		return
	}
	c.stopped = true
	servers.leave(c)
	if c.opts.Clock != nil {
		c.opts.Clock.detach(c)
	}
	c.mu.Lock()
	for k, cl := range c.clients {
		_ = cl.Destroy()
		delete(c.clients, k)
	}
	c.mu.Unlock()
	if c.stopServe != nil {
		c.stopServe()
		<-c.served // Serve stops the server
	} else {
		_ = c.ln.Close()
	}
	if c.closeStore != nil {
		_ = c.closeStore()
	}
	if c.removeDir != "" {
		_ = os.RemoveAll(c.removeDir)
	}
}

// served reports whether the server serves an agent named name.
func (c *core) serves(name string) bool { return slices.Contains(c.agents, name) }

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
