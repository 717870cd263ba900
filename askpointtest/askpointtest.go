// Package askpointtest starts a real askpoint server for an agent's tests:
// a SQLite file in the test's temporary directory, the three A2A bindings
// on 127.0.0.1 on a free port (askpoint.Server.Serve), and a2a-go clients
// for its agents. Everything stops when the test ends. Env also has what a
// test needs and a server does not offer: waiting until the server is idle
// (a check that something did not happen), running the sweeper now (a test
// that drives the clock), and counters of waiters and retries.
//
//	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "pay", Agent: agent, Card: card})
//	c := env.Client(t, "pay")
//	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: ...})
//
// An agent that needs its own URL before it is built (a relay or a
// workflow gives it to its sub-agents for their push notifications) is
// served in two steps: Listen gives the URL, Serve starts the server.
//
//	env := askpointtest.Listen(t)
//	assistant, err := relay.Agent(relay.Config{CallbackURL: env.AgentURL("assistant"), ...})
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
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/store/sqlite"
)

// Env is one server under test.
type Env struct {
	// URL is the server's base URL (http://127.0.0.1:PORT); agent NAME is
	// at URL/NAME.
	URL string
	// DBPath is the SQLite file.
	DBPath string
	// Server is the running server, nil until Serve.
	Server *askpoint.Server

	ln         net.Listener
	opts       Options
	eng        *engine.Engine
	stopServe  context.CancelFunc
	served     chan error
	closeStore func() error
	removeDir  string // Open's directory
	stopped    bool
}

// Options tune a server.
type Options struct {
	// Config adjusts the server's configuration before it is built (a
	// clock, expiries, reminders). Its Store is set by the harness.
	Config func(*askpoint.Config)
	// Logs sends the server's warnings and errors to the test's log (to
	// standard error for a server Open started); otherwise they are
	// dropped.
	Logs bool

	logTo io.Writer
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
	env := &Env{URL: "http://" + ln.Addr().String(), ln: ln, opts: opts}
	t.Cleanup(env.stop)
	return env
}

// AgentURL is the base URL of the agent named name.
func (e *Env) AgentURL(name string) string { return e.URL + "/" + strings.Trim(name, "/") }

// Serve builds the server with a new SQLite file, registers specs and
// serves them. It may be called once.
func (e *Env) Serve(t testing.TB, specs ...askpoint.AgentSpec) {
	t.Helper()
	if e.opts.Logs && e.opts.logTo == nil {
		e.opts.logTo = testLog{t}
	}
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
// SQLite file is in a new temporary directory that Close removes; with
// Options.Logs its warnings and errors go to standard error.
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
	if opts.Logs && opts.logTo == nil {
		opts.logTo = os.Stderr
	}
	e := &Env{URL: "http://" + ln.Addr().String(), ln: ln, opts: opts, removeDir: dir}
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
	ctx := context.Background()
	e.DBPath = filepath.Join(dir, "askpoint.db")
	st, err := sqlite.Open(ctx, e.DBPath)
	if err != nil {
		return fmt.Errorf("askpointtest: open %s: %w", e.DBPath, err)
	}
	logger := slog.New(slog.DiscardHandler)
	if e.opts.logTo != nil {
		logger = slog.New(slog.NewTextHandler(e.opts.logTo, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := askpoint.Config{Store: st, Logger: logger, PollInterval: 20 * time.Millisecond}
	if e.opts.Config != nil {
		e.opts.Config(&cfg)
		cfg.Store = st
	}
	api.WithEngineHook(&cfg, func(eng any) { e.eng = eng.(*engine.Engine) })
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
	}
	if err := srv.Start(ctx); err != nil {
		_ = st.Close()
		return fmt.Errorf("askpointtest: Start: %w", err)
	}
	e.Server = srv
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

// Idle waits until the server has nothing in hand: each of its timer
// loops (expiries and reminders, hold releases, push deliveries) has
// finished a round it began after the call, no step is queued or running
// and no push delivery is under way. A test uses it to check that
// something did not happen. It returns ctx's error if ctx ends first.
func (e *Env) Idle(ctx context.Context) error { return e.engine().Idle(ctx) }

// SweepNow runs one round of the sweeper (question expiries and
// reminders) at once, for a test that drives the clock (Config.Now).
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

// Client dials the agent named name (its card, then the binding it
// prefers) with a plain HTTP client; it is closed when the test ends.
func (e *Env) Client(t testing.TB, name string) *a2aclient.Client {
	t.Helper()
	c, err := e.Dial(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// Dial is Client for a caller outside a test; Destroy the client when done.
func (e *Env) Dial(ctx context.Context, name string) (*a2aclient.Client, error) {
	c, err := client.Dial(ctx, e.AgentURL(name), nil)
	if err != nil {
		return nil, fmt.Errorf("askpointtest: dial %s: %w", name, err)
	}
	return c, nil
}

// Stop stops the server now (a test of what survives a restart); the test's
// end stops it otherwise.
func (e *Env) Stop() { e.stop() }

func (e *Env) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	if e.stopServe != nil {
		e.stopServe()
		<-e.served // Serve stops the server
	} else {
		_ = e.ln.Close()
	}
	if e.closeStore != nil {
		_ = e.closeStore()
	}
	if e.removeDir != "" {
		_ = os.RemoveAll(e.removeDir)
	}
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
