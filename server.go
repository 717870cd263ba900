package askpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/auth"
	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/front"
	"github.com/askpoint/askpoint/internal/grpcfront"
	"github.com/askpoint/askpoint/question"
)

// AgentSpec registers an agent with a [Server].
type AgentSpec struct {
	// Name is the agent's path segment: it is served under /Name/.
	// Lower-case letters, digits and dashes.
	Name string
	// Agent runs the agent's steps.
	Agent Agent
	// Card describes the agent. The server fills in the interfaces, the
	// capabilities and the question extension; Name and Description are
	// required, Version defaults to "1.0.0".
	Card a2a.AgentCard
}

// Server runs agents over A2A 1.0 on a durable store. A paused task is rows
// in the store: the server holds no goroutine, channel or timer for it.
// Create one with [NewServer], [Server.Register] agents, and either
// [Server.Serve] them (all three bindings on one port, with the edge's
// limits) or mount [Server.Handler] and [Server.GRPC] yourself and call
// [Server.Start].
//
// The engine (internal/engine) runs tasks; the HTTP front (internal/front)
// and the gRPC front (internal/grpcfront) check and route requests to it,
// under the same Config.
type Server struct {
	cfg Config
	eng *engine.Engine

	mu    sync.Mutex
	specs []AgentSpec
	pages []page             // Handle
	front *front.Front       // built on first use, once every agent is registered
	mux   http.Handler       // Handler: the front and the pages, built with front
	grpcs []*grpcfront.Front // GRPC's fronts, whose streams EndStreams ends
	// shutdown ends when Serve shuts down: the requests the pages hold
	// open end with it.
	shutdown    context.Context
	shutdownNow context.CancelFunc
}

// page is a handler added with Handle.
type page struct {
	pattern string
	h       http.Handler
}

// Paths under an agent's prefix /NAME.
const (
	PathJSONRPC = front.PathJSONRPC
	PathREST    = front.PathREST
)

// BearerScheme is the security scheme's name on the agent card.
const BearerScheme = front.BearerScheme

// ReminderKey is the metadata key of a reminder notification: a status
// update event whose metadata holds {ReminderKey: {"reminder": n, "of": m,
// "expires": RFC 3339}} carries the open question (or the auth-required
// status) unchanged.
const ReminderKey = question.ExtensionURI + "#reminder"

// ErrNotWaiting says a wake came for a task that has finished: a late
// notification, which callers usually ignore.
var ErrNotWaiting = engine.ErrNotWaiting

// ErrBusy says a wake came while the task runs a step: the step is about
// to decide what the task waits for, so the event should come again
// shortly (the wake endpoint answers 503, which a push outbox retries).
var ErrBusy = engine.ErrBusy

// WithPrincipal returns a context that names the caller. Authentication
// middleware sets it; every task belongs to the principal that created it
// and is invisible to others. Without it the caller is anonymous.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return auth.WithPrincipal(ctx, principal)
}

var agentNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// NewServer returns a server for cfg. It does not start anything.
func NewServer(cfg Config) (*Server, error) {
	if err := front.CheckConfig(cfg); err != nil {
		return nil, err
	}
	if err := api.Check(cfg); err != nil {
		return nil, err
	}
	cfg = api.Defaults(cfg)
	if cfg.Observer != nil {
		cfg.Store = cfg.Observer.ObserveStore(cfg.Store)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, eng: eng}
	s.shutdown, s.shutdownNow = context.WithCancel(context.Background())
	api.EngineHook(cfg)(eng)
	return s, nil
}

// Register adds an agent. Call it before Start.
func (s *Server) Register(spec AgentSpec) error {
	if !agentNamePattern.MatchString(spec.Name) {
		return fmt.Errorf("askpoint: agent name %q: use 1 to 63 lower-case letters, digits and dashes", spec.Name)
	}
	if spec.Agent == nil {
		return fmt.Errorf("askpoint: agent %q: Agent is nil", spec.Name)
	}
	if spec.Card.Name == "" || spec.Card.Description == "" {
		return fmt.Errorf("askpoint: agent %q: Card.Name and Card.Description are required", spec.Name)
	}
	s.mu.Lock()
	for _, p := range s.pages {
		if pageSegment(p.pattern) == spec.Name {
			s.mu.Unlock()
			return fmt.Errorf("askpoint: agent %q: /%s/ is taken by the handler of Handle(%q)", spec.Name, spec.Name, p.pattern)
		}
	}
	s.mu.Unlock()
	if err := s.eng.Register(spec.Name, spec.Agent, spec.Card, canRelease(spec.Agent)); err != nil {
		return err
	}
	s.mu.Lock()
	s.specs = append(s.specs, spec)
	s.front, s.mux = nil, nil
	s.mu.Unlock()
	return nil
}

// Config is the server's configuration, with the defaults applied.
func (s *Server) Config() Config { return s.cfg }

// Agents returns the names of the registered agents in registration order.
func (s *Server) Agents() []string { return s.eng.Agents() }

// RequestHandler returns the a2asrv.RequestHandler that serves the named
// agent, for mounting on a transport of your choice. It authenticates a
// call itself when the server takes tokens (Config.Tokens): a call whose
// context names no caller ([WithPrincipal]) is named from the
// Authorization of its a2asrv call context (the header, or the gRPC
// metadata, that a2a-go's transports put there), and refused as
// Unauthenticated without a valid token. The edge's other rules (the
// protocol version, body and part limits, identifier rules, stream slots)
// are the fronts': [Server.Handler] and [Server.GRPC] apply them.
func (s *Server) RequestHandler(name string) (a2asrv.RequestHandler, bool) {
	h, ok := s.eng.Handler(name)
	if !ok {
		return nil, false
	}
	return h, true
}

// frontEnd is the HTTP front of the registered agents.
func (s *Server) frontEnd() *front.Front {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frontLocked()
}

func (s *Server) frontLocked() *front.Front {
	if s.front != nil {
		return s.front
	}
	var agents []front.Agent
	for _, spec := range s.specs {
		h, _ := s.eng.Handler(spec.Name)
		agents = append(agents, front.Agent{Name: spec.Name, Card: spec.Card, Handler: h})
	}
	f, err := front.New(s.cfg, s.eng.Wake, agents)
	if err != nil {
		panic(err) // the configuration was checked by NewServer
	}
	if len(s.grpcs) > 0 {
		f.AddInterface(grpcfront.Interface) // served on the same port (Serve, or GRPC beside Handler)
	}
	s.front = f
	return f
}

// Handle adds a handler of your own (a page, a health check) to what
// [Server.Handler] and [Server.Serve] serve, for the pattern of an
// http.ServeMux: behind the same port, connection cap and timeouts as the
// agents, but not their A2A rules (the handler authenticates its own
// callers). The pattern may not overlap an agent's path (/NAME/) or the
// host's agent card. When Serve shuts down, the requests such a handler
// holds open end (their context is canceled), so that a live page's
// event stream does not hold the shutdown up. Call it before serving.
func (s *Server) Handle(pattern string, h http.Handler) error {
	first := pageSegment(pattern)
	if first == "" || first == ".well-known" {
		return fmt.Errorf("askpoint: Handle %q: the pattern must name a path of its own, not the host's root or /.well-known/", pattern)
	}
	for _, name := range s.eng.Agents() {
		if name == first {
			return fmt.Errorf("askpoint: Handle %q: /%s/ is agent %q's path", pattern, first, name)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages = append(s.pages, page{pattern: pattern, h: h})
	s.mux = nil
	return nil
}

// AcquireStream takes one of the calling principal's (WithPrincipal) stream
// slots, Config.MaxStreamsPerPrincipal counted across every binding, for a
// stream a handler of your own holds open (a live page's events), or says
// why it cannot. release gives the slot back; it may be called more than
// once.
func (s *Server) AcquireStream(ctx context.Context) (release func(), err error) {
	return s.frontEnd().AcquireStream(auth.Principal(ctx))
}

// pageSegment is the first path segment of a ServeMux pattern ("GET
// /inbox/{task}" is "inbox").
func pageSegment(pattern string) string {
	_, path, _ := strings.Cut(strings.TrimSpace(pattern), "/")
	first, _, _ := strings.Cut(path, "/")
	first, _, _ = strings.Cut(first, "{")
	return first
}

// Handler returns the HTTP handler that serves every registered agent, and
// what [Server.Handle] added:
//
//	/NAME/.well-known/agent-card.json   the agent card
//	/NAME/jsonrpc                       JSON-RPC 2.0 binding
//	/NAME/rest/...                      HTTP+JSON binding
//	POST /NAME/wake/TASK_ID             an event for a waiting task (see [Server.Wake]):
//	                                    the wake token in A2A-Notification-Token, a JSON
//	                                    body (a push notification); 204 resumed or dropped,
//	                                    202 late (the task ended), 503 busy (a step runs:
//	                                    send again), 404 no such task or a wrong token
//	/.well-known/agent-card.json        the first registered agent's card
//
// The A2A bindings are the a2a-go SDK's transports over this server's
// request handler. In front of them the server refuses, before anything is
// stored: callers without a valid token (Config.Tokens), bodies over
// Config.MaxRequestBytes or not declared as JSON, requests without
// A2A-Version 1.0, malformed messages and identifiers, hosts and browser
// origins it does not answer, and subscriptions to finished tasks. Proto
// field names (history_length) are read as their JSON names
// (historyLength), as ProtoJSON readers do. With Config.Observer set, each
// A2A request is observed (a server span).
//
// The agent cards declare the gRPC binding, on the host and port they are
// served from, once it is served ([Server.Serve], or [Server.GRPC] on the
// same port). Mounted on an http.Server of your own, set its
// ReadHeaderTimeout and IdleTimeout and register [Server.EndStreams] with
// its RegisterOnShutdown; Serve does all of it.
func (s *Server) Handler() http.Handler {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mux != nil {
		return s.mux
	}
	var a2aHandler http.Handler = s.frontLocked().Handler()
	if s.cfg.Observer != nil {
		a2aHandler = s.cfg.Observer.ObserveHTTP(a2aHandler)
	}
	if len(s.pages) == 0 {
		s.mux = a2aHandler
		return s.mux
	}
	mux := http.NewServeMux()
	for _, p := range s.pages {
		mux.Handle(p.pattern, s.endsAtShutdown(p.h))
	}
	mux.Handle("/", a2aHandler)
	s.mux = mux
	return mux
}

// endsAtShutdown ends h's requests when Serve shuts down.
func (s *Server) endsAtShutdown(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(s.shutdown, cancel)
		defer stop()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Card returns the agent card of the named agent as served from baseURL
// (scheme and host, e.g. "http://127.0.0.1:8420").
func (s *Server) Card(name, baseURL string) (*a2a.AgentCard, error) {
	return s.frontEnd().Card(name, baseURL)
}

// Start starts the worker pool, the poller that takes over runnable tasks
// whose lease lapsed (a crashed run, or work left by a stopped node), and
// the timer loops: the sweeper (question expiries and reminders), the
// releaser (holds) and the push deliverer.
// It returns at once; Stop ends them.
func (s *Server) Start(ctx context.Context) error { return s.eng.Start(ctx) }

// Stop stops the workers and the poller and waits for them, or for ctx.
// A step still running is abandoned: its lease is released so the task is
// taken over on the next start. Stop is idempotent.
func (s *Server) Stop(ctx context.Context) error {
	s.EndStreams()
	return s.eng.Stop(ctx)
}

// EndStreams ends the open streams and subscriptions of [Server.Handler]
// and [Server.GRPC] (a gRPC stream ends with UNAVAILABLE and a message to
// subscribe again) and refuses new ones, so that an http.Server's
// Shutdown or a grpc.Server's GracefulStop, which wait for their calls, do
// not wait for streams that would stay open: register it with
// http.Server.RegisterOnShutdown. What the streams' callers sent is
// stored; they read their tasks again after the restart.
func (s *Server) EndStreams() {
	s.frontEnd().EndStreams()
	s.mu.Lock()
	grpcs := append([]*grpcfront.Front(nil), s.grpcs...)
	s.mu.Unlock()
	for _, g := range grpcs {
		g.EndStreams()
	}
}

// Wake resumes a waiting task with event: one that returned [Await], or
// one paused with a question asked [Outcome.WakeOn]. token must be the one
// the agent gave. An unknown task and a wrong token are both
// TaskNotFound, so that a task's existence does not leak; a task that is
// not waiting gives ErrNotWaiting. The agent's Waker may drop the event,
// in which case nothing changes and Wake returns nil.
func (s *Server) Wake(ctx context.Context, taskID, token string, event json.RawMessage) error {
	return s.eng.Wake(ctx, "", taskID, token, event)
}

// CredentialArrived resumes a task paused in auth-required: the credential
// the agent asked for has been delivered out of band. data (encoded to
// JSON) reaches the agent's step; it must not be the credential itself.
func (s *Server) CredentialArrived(ctx context.Context, taskID string, data any) error {
	return s.eng.CredentialArrived(ctx, taskID, data)
}
