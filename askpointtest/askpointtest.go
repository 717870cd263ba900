// Package askpointtest starts a real askpoint server for an agent's tests:
// a SQLite file in the test's temporary directory, HTTP on 127.0.0.1 on a
// free port, and a2a-go clients for its agents. Everything stops when the
// test ends.
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
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
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
	http       *http.Server
	closeStore func() error
	stopped    bool
}

// Options tune a server.
type Options struct {
	// Config adjusts the server's configuration before it is built (a
	// clock, expiries, reminders). Its Store is set by the harness.
	Config func(*askpoint.Config)
	// Logs sends the server's warnings and errors to the test's log;
	// otherwise they are dropped.
	Logs bool
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
	if e.Server != nil {
		t.Fatal("askpointtest: Serve was called twice")
	}
	ctx := context.Background()
	e.DBPath = filepath.Join(t.TempDir(), "askpoint.db")
	// Cleanups run last first: the stop Listen registered would come after
	// the directory's removal, while the server still writes to it.
	t.Cleanup(e.stop)
	st, err := sqlite.Open(ctx, e.DBPath)
	if err != nil {
		t.Fatalf("askpointtest: open %s: %v", e.DBPath, err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if e.opts.Logs {
		logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := askpoint.Config{Store: st, Logger: logger, PollInterval: 20 * time.Millisecond}
	if e.opts.Config != nil {
		e.opts.Config(&cfg)
		cfg.Store = st
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		_ = st.Close()
		t.Fatalf("askpointtest: NewServer: %v", err)
	}
	for _, s := range specs {
		if err := srv.Register(s); err != nil {
			_ = st.Close()
			t.Fatalf("askpointtest: Register(%s): %v", s.Name, err)
		}
	}
	if err := srv.Start(ctx); err != nil {
		_ = st.Close()
		t.Fatalf("askpointtest: Start: %v", err)
	}
	e.Server = srv
	e.http = &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = e.http.Serve(e.ln) }()
	e.closeStore = st.Close
}

// Client dials the agent named name (its card, then the binding it
// prefers) with a plain HTTP client; it is closed when the test ends.
func (e *Env) Client(t testing.TB, name string) *a2aclient.Client {
	t.Helper()
	c, err := client.Dial(t.Context(), e.AgentURL(name), nil)
	if err != nil {
		t.Fatalf("askpointtest: dial %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// Stop stops the server now (a test of what survives a restart); the test's
// end stops it otherwise.
func (e *Env) Stop() { e.stop() }

func (e *Env) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	if e.http != nil {
		_ = e.http.Close()
	} else {
		_ = e.ln.Close()
	}
	if e.Server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.Server.Stop(ctx)
	}
	if e.closeStore != nil {
		_ = e.closeStore()
	}
}

type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
