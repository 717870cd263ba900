// Package apitest starts real askpoint servers for tests: a SQLite file in
// the test's temporary directory, real HTTP on 127.0.0.1, and a2a-go
// clients for either binding.
package apitest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/port"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
	"github.com/askpoint/askpoint/store/sqlite"
)

// Env is a running server.
type Env struct {
	URL    string // http://127.0.0.1:PORT
	DBPath string
	// PostgresURL is the database of a server on PostgreSQL ("" on SQLite).
	PostgresURL string
	Server      *askpoint.Server
	Store       store.Store // SQLite, or PostgreSQL when Options.PostgresURL is set
	// Engine is the server's engine, for what the Server does not offer:
	// Idle, SweepNow, Waiters and the retry counters.
	Engine *engine.Engine

	// stop ends the server's Serve, whose result served holds.
	stop   context.CancelFunc
	served chan error
	once   sync.Once
	err    error
}

// Options tune Start.
type Options struct {
	Config func(*askpoint.Config) // adjust the config before the server is built
	DBPath string                 // reuse a database file (default: a new one)
	// PostgresURL runs the server on PostgreSQL instead of SQLite. Several
	// servers started with one URL are several nodes of one deployment.
	PostgresURL string
	Agents      []askpoint.AgentSpec // added after the expense and script agents
	Quiet       bool                 // drop logs (default: logs go to t.Log)
	// Listener serves the server (default: a new one on 127.0.0.1:0). Pass
	// one to know the server's URL before its agents are built, as an
	// orchestrator that gives its own URL to its sub-agents must.
	Listener net.Listener
	// Setup, when set, is called with the server once its agents are
	// registered, before it serves (to Handle a handler of the test's).
	Setup func(*askpoint.Server)
	// Wrap, when set, wraps the server's HTTP handler (to watch what it
	// answers); the server is then served by the test's own http.Server
	// and the gRPC server of Server.GRPC on the same port, as Serve does,
	// instead of by Serve.
	Wrap func(http.Handler) http.Handler
}

// Listen opens a listener on 127.0.0.1 (addr "" for any free port) and
// returns it with its base URL, for Options.Listener.
func Listen(t testing.TB, addr string) (net.Listener, string) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	return ln, "http://" + ln.Addr().String()
}

// Start serves the expense agent ("expense") and the script agent
// ("script") and stops everything when the test ends.
func Start(t testing.TB, opts Options) *Env {
	t.Helper()
	ctx := context.Background()
	path := opts.DBPath
	if path == "" {
		path = filepath.Join(t.TempDir(), "askpoint.db")
	}
	var st store.Store
	if opts.PostgresURL != "" {
		pg, err := postgres.Open(ctx, opts.PostgresURL)
		if err != nil {
			t.Fatalf("postgres.Open() = %v", err)
		}
		st, path = pg, ""
	} else {
		lite, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("sqlite.Open(%s) = %v", path, err)
		}
		st = lite
	}
	var logger *slog.Logger
	if opts.Quiet {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	} else {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	cfg := askpoint.Config{Store: st, Logger: logger, PollInterval: 200 * time.Millisecond}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	var eng *engine.Engine
	api.WithEngineHook(&cfg, func(e any) { eng = e.(*engine.Engine) })
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer() = %v", err)
	}
	specs := append([]askpoint.AgentSpec{
		{Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil), Card: expense.Card()},
		{Name: "script", Agent: Script(), Card: a2a.AgentCard{Name: "Script agent", Description: "Does what its message says; for tests."}},
	}, opts.Agents...)
	for _, s := range specs {
		if err := srv.Register(s); err != nil {
			t.Fatalf("Register(%s) = %v", s.Name, err)
		}
	}
	ln := opts.Listener
	if ln == nil {
		ln, _ = Listen(t, "")
	}
	if opts.Setup != nil {
		opts.Setup(srv)
	}
	// Started here, so that a test's first call finds it running.
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("Start() = %v", err)
	}
	serveCtx, stop := context.WithCancel(ctx)
	env := &Env{URL: "http://" + ln.Addr().String(), DBPath: path, PostgresURL: opts.PostgresURL, Server: srv, Store: st, Engine: eng,
		stop: stop, served: make(chan error, 1)}
	if opts.Wrap == nil {
		go func() { env.served <- srv.Serve(serveCtx, ln) }()
	} else {
		serveWrapped(t, env, serveCtx, ln, opts.Wrap)
	}
	t.Cleanup(func() { env.Close() })
	// One answer from the port says it is served, and so that everything
	// Serve sets up first (the gRPC binding on the cards) is: the listener
	// holds the request until then.
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(env.URL + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatalf("the server does not answer: %v", err)
	}
	resp.Body.Close()
	return env
}

// serveWrapped serves env's server with its HTTP handler wrapped, until
// ctx ends.
func serveWrapped(t testing.TB, env *Env, ctx context.Context, ln net.Listener, wrap func(http.Handler) http.Handler) {
	gs, err := env.Server.GRPC()
	if err != nil {
		t.Fatalf("GRPC() = %v", err)
	}
	httpLn, grpcLn := port.Split(ln, 0)
	hs := &http.Server{Handler: wrap(env.Server.Handler()), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(httpLn) }()
	go func() { _ = gs.Serve(grpcLn) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		env.Server.EndStreams()
		gs.GracefulStop()
		_ = hs.Shutdown(sctx)
		env.served <- env.Server.Stop(sctx)
	}()
}

// Shutdown stops serving as the end of Serve's context does (streams end,
// calls under way finish, the server stops) and returns what Serve
// returned. It is safe to call twice.
func (e *Env) Shutdown() error {
	e.once.Do(func() {
		e.stop()
		e.err = <-e.served
	})
	return e.err
}

// Close shuts the server down and closes the store. It is safe to call
// twice.
func (e *Env) Close() {
	_ = e.Shutdown()
	_ = e.Store.Close()
}

// AgentURL is the base URL of the named agent.
func (e *Env) AgentURL(name string) string { return e.URL + "/" + name }

// Client returns an a2a-go client for the named agent over transport
// (a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON or
// a2a.TransportProtocolGRPC),
// built from the agent card the server serves.
func (e *Env) Client(t testing.TB, agent string, transport a2a.TransportProtocol) *a2aclient.Client {
	t.Helper()
	return e.ClientAs(t, agent, transport, "")
}

// ClientAs is Client for a caller with a bearer token ("" for none).
func (e *Env) ClientAs(t testing.TB, agent string, transport a2a.TransportProtocol, token string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(t.Context(), e.AgentURL(agent))
	if err != nil {
		t.Fatalf("resolve card of %s: %v", agent, err)
	}
	var keep []*a2a.AgentInterface
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == transport {
			keep = append(keep, iface)
		}
	}
	if len(keep) == 0 {
		t.Fatalf("agent %s offers no %s interface", agent, transport)
	}
	card.SupportedInterfaces = keep
	var opts []a2aclient.FactoryOption
	if token != "" {
		opts = append(opts, a2aclient.WithCallInterceptors(bearer(token)))
	}
	opts = append(opts, grpcdial.Transport(false))
	c, err := a2aclient.NewFromCard(t.Context(), card, opts...)
	if err != nil {
		t.Fatalf("NewFromCard() = %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// Transports lists the bindings the server serves, for table tests.
var Transports = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// bearer sends a bearer token with every call.
type bearer string

func (b bearer) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	req.ServiceParams["Authorization"] = []string{"Bearer " + string(b)}
	return ctx, nil, nil
}

func (bearer) After(context.Context, *a2aclient.Response) error { return nil }
