// Package grpcfront serves the A2A 1.0 gRPC binding for several agents on
// one gRPC server: the a2a-go SDK's gRPC transport (a2agrpc) over each
// agent's own request handler, behind the edge rules the HTTP front
// applies to the other two bindings.
//
// A call names its agent in the request's tenant field, which each agent
// card's gRPC interface declares (docs/decisions/0041); a call without one
// goes to the first agent, whose card is also the one at the host root.
// Before a call reaches the agent the front requires A2A-Version 1.0 in
// the metadata, names the caller from its bearer token, checks a sent
// message's parts and takes a stream slot for a streaming call. Errors go
// out with the status codes of the specification's table (section 5.4) and
// a google.rpc.ErrorInfo detail (docs/decisions/0042).
//
// The front takes what it needs as explicit inputs ([Config]), so it can
// sit beside whatever serves HTTP.
package grpcfront

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Agent is one agent the front serves.
type Agent struct {
	// Name is the agent's tenant on the gRPC binding (its path segment on
	// the HTTP bindings).
	Name string
	// Handler serves the agent's calls.
	Handler a2asrv.RequestHandler
}

// Config says what the front serves and which rules it applies.
type Config struct {
	// Agents are served in this order; the first one also takes calls
	// that name no tenant. At least one.
	Agents []Agent
	// Authenticate names the caller from the authorization metadata
	// ("Bearer <token>", "" when absent), or refuses the call with an
	// error wrapping a2a.ErrUnauthenticated. The principal reaches the
	// handler through WithPrincipal. Nil: every caller is anonymous.
	Authenticate func(authorization string) (principal string, err error)
	// WithPrincipal puts the caller's principal into a call's context, as
	// the handlers read it (askpoint.WithPrincipal). Required with
	// Authenticate.
	WithPrincipal func(ctx context.Context, principal string) context.Context
	// AcquireStream takes a stream slot for the caller of ctx, or says why
	// not (the caller holds too many open streams). Nil: no limit.
	AcquireStream func(ctx context.Context) (release func(), err error)
	// MaxRequestBytes caps one request message (default 1 MiB).
	MaxRequestBytes int64
	// MaxParts caps the parts of one sent message (default 64).
	MaxParts int
	// Logger logs internal failures with their cause (default: discard).
	Logger *slog.Logger
	// Unary are interceptors run before the front's own on unary calls
	// (instrumentation; the benchmark times an answer's arrival).
	Unary []grpc.UnaryServerInterceptor
}

// Front is a gRPC server for the agents of a Config.
type Front struct {
	cfg    Config
	agents map[string]a2asrv.RequestHandler
	first  string
	names  []string
	srv    *grpc.Server
	log    *slog.Logger

	// stopping ends open streams when the front stops.
	stopping context.Context
	stop     context.CancelFunc
	once     sync.Once
}

// New returns a front for cfg. It serves nothing until Serve.
func New(cfg Config) (*Front, error) {
	if len(cfg.Agents) == 0 {
		return nil, errors.New("grpcfront: no agents to serve")
	}
	if cfg.Authenticate != nil && cfg.WithPrincipal == nil {
		return nil, errors.New("grpcfront: Authenticate needs WithPrincipal to hand the principal on")
	}
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 1 << 20
	}
	if cfg.MaxParts <= 0 {
		cfg.MaxParts = 64
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	f := &Front{cfg: cfg, agents: map[string]a2asrv.RequestHandler{}, log: cfg.Logger}
	for _, a := range cfg.Agents {
		if a.Name == "" || a.Handler == nil {
			return nil, fmt.Errorf("grpcfront: agent %q: a name and a handler are required", a.Name)
		}
		if _, dup := f.agents[a.Name]; dup {
			return nil, fmt.Errorf("grpcfront: agent %q is given twice", a.Name)
		}
		f.agents[a.Name] = a.Handler
		f.names = append(f.names, a.Name)
	}
	f.first = cfg.Agents[0].Name
	f.stopping, f.stop = context.WithCancel(context.Background())
	f.srv = grpc.NewServer(
		// A larger request is refused by gRPC itself with
		// RESOURCE_EXHAUSTED before it reaches the front.
		grpc.MaxRecvMsgSize(int(min(cfg.MaxRequestBytes, 1<<30))),
		grpc.ChainUnaryInterceptor(append(append([]grpc.UnaryServerInterceptor(nil), cfg.Unary...), f.unary)...),
		grpc.ChainStreamInterceptor(f.streaming),
	)
	a2agrpc.NewHandler(router{f}).RegisterWith(f.srv)
	return f, nil
}

// Serve serves gRPC on ln until Stop; it returns nil after Stop.
func (f *Front) Serve(ln net.Listener) error {
	err := f.srv.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Stop ends the open streams (each with UNAVAILABLE and a message saying
// to subscribe again), refuses new calls, and waits for the calls under
// way to finish, or for ctx, after which it cuts them off.
func (f *Front) Stop(ctx context.Context) error {
	f.once.Do(f.stop)
	done := make(chan struct{})
	go func() { f.srv.GracefulStop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		f.srv.Stop()
		<-done
		return ctx.Err()
	}
}

// Interface returns the gRPC interface of agent for an agent card served
// from baseURL (scheme and host; the gRPC binding shares the HTTP port):
// the URL is the gRPC target host:port and the tenant is the agent.
func Interface(baseURL, agent string) *a2a.AgentInterface {
	host := baseURL
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	host = strings.TrimSuffix(host, "/")
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	iface := a2a.NewAgentInterface(host, a2a.TransportProtocolGRPC)
	iface.Tenant = agent
	return iface
}

// agentKey carries the handler a call was routed to.
type agentKey struct{}

// admit applies the edge rules to one call's request: version, caller,
// agent (tenant), message. It returns the context the handler gets.
func (f *Front) admit(ctx context.Context, req any) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	// The caller first, then the version, as the HTTP front checks them.
	if f.cfg.Authenticate != nil {
		principal, err := f.cfg.Authenticate(first(md, "authorization"))
		if err != nil {
			return nil, toStatus(f.log, err)
		}
		ctx = f.cfg.WithPrincipal(ctx, principal)
	}
	if err := checkVersion(md); err != nil {
		return nil, err
	}
	name := f.first
	if m, ok := req.(proto.Message); ok {
		if tenant := takeTenant(m); tenant != "" {
			name = tenant
		}
	}
	h, ok := f.agents[name]
	if !ok {
		return nil, toStatus(f.log, a2a.NewError(a2a.ErrInvalidParams,
			fmt.Sprintf("tenant %q names no agent here: use one of %s (the tenant of the agent card's GRPC interface)", name, strings.Join(f.names, ", "))))
	}
	if err := checkRequest(req, f.cfg.MaxParts); err != nil {
		return nil, toStatus(f.log, err)
	}
	return context.WithValue(ctx, agentKey{}, h), nil
}

// takeTenant reads a request's tenant and clears it: the tenant names the
// agent, as the path does on the HTTP bindings, and the agent's handler
// sees the request as those bindings hand it on.
func takeTenant(m proto.Message) string {
	r := m.ProtoReflect()
	fd := r.Descriptor().Fields().ByName("tenant")
	if fd == nil {
		return ""
	}
	t := r.Get(fd).String()
	r.Clear(fd)
	return t
}

func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// checkVersion requires A2A-Version 1.0 (or 1.0.x) in the metadata.
func checkVersion(md metadata.MD) error {
	v := strings.TrimSpace(first(md, "a2a-version"))
	switch {
	case v == "":
		return toStatus(nil, a2a.NewError(a2a.ErrVersionNotSupported, "the a2a-version metadata is missing: send the metadata a2a-version: 1.0"))
	case v == "1.0" || strings.HasPrefix(v, "1.0."):
		return nil
	default:
		return toStatus(nil, a2a.NewError(a2a.ErrVersionNotSupported, fmt.Sprintf("A2A-Version %q is not supported: send the metadata a2a-version: 1.0", v)))
	}
}

// checkRequest refuses what the SDK's conversion would drop or misread: a
// malformed message, a negative history length (which it reads as none).
func checkRequest(req any, maxParts int) error {
	var hl *int32
	switch r := req.(type) {
	case *a2apb.SendMessageRequest:
		if err := checkMessage(r.GetMessage(), maxParts); err != nil {
			return err
		}
		if c := r.GetConfiguration(); c != nil {
			hl = c.HistoryLength
		}
	case *a2apb.GetTaskRequest:
		hl = r.HistoryLength
	case *a2apb.ListTasksRequest:
		hl = r.HistoryLength
	}
	if hl != nil && *hl < 0 {
		return invalidParams("history_length must be 0 or more, got %d", *hl)
	}
	return nil
}

// checkMessage names what is missing or wrong in a sent message, in the
// words the HTTP bindings use.
func checkMessage(m *a2apb.Message, maxParts int) error {
	switch {
	case m == nil:
		return invalidParams("message is required")
	case m.GetMessageId() == "":
		return invalidParams("message.message_id is required")
	case len(m.GetParts()) == 0:
		return invalidParams("message.parts must hold at least one part")
	case len(m.GetParts()) > maxParts:
		return invalidParams("message.parts holds %d parts; the server takes at most %d", len(m.GetParts()), maxParts)
	}
	for i, p := range m.GetParts() {
		if p == nil || p.GetContent() == nil {
			return invalidParams("message.parts[%d] has no content: set exactly one of text, raw, data or url", i)
		}
		if d, ok := p.GetContent().(*a2apb.Part_Data); ok && d.Data == nil {
			return invalidParams("message.parts[%d].data is empty: send a JSON value", i)
		}
	}
	return nil
}

func invalidParams(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

func (f *Front) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx, err := f.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (f *Front) streaming(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	// The stream's context ends when the front stops, so that a stream
	// waiting on a paused task does not hold up the stop.
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	stopCut := context.AfterFunc(f.stopping, cancel)
	defer stopCut()
	ws := &stream{ServerStream: ss, f: f, ctx: ctx}
	err := handler(srv, ws)
	if ws.release != nil {
		ws.release()
	}
	if f.stopping.Err() != nil && ss.Context().Err() == nil {
		return status.Error(codes.Unavailable, "the server is stopping: this stream ends here; subscribe to the task again (SubscribeToTask) once the server is back")
	}
	return err
}

// stream applies admit to the one request of a server-streaming call,
// when the generated handler reads it, and takes a stream slot.
type stream struct {
	grpc.ServerStream
	f       *Front
	ctx     context.Context
	release func()
}

func (s *stream) Context() context.Context { return s.ctx }

func (s *stream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	ctx, err := s.f.admit(s.ctx, m)
	if err != nil {
		return err
	}
	if s.f.cfg.AcquireStream != nil {
		release, err := s.f.cfg.AcquireStream(ctx)
		if err != nil {
			return withInfo(codes.ResourceExhausted, err.Error(), a2a.ErrInvalidRequest)
		}
		s.release = release
	}
	s.ctx = ctx
	return nil
}

// router is the request handler a2agrpc calls: it hands each call to the
// agent admit routed it to and maps its errors to gRPC statuses.
type router struct{ f *Front }

func (r router) h(ctx context.Context) a2asrv.RequestHandler {
	if h, ok := ctx.Value(agentKey{}).(a2asrv.RequestHandler); ok {
		return h
	}
	return r.f.agents[r.f.first]
}

func (r router) err(err error) error { return toStatus(r.f.log, err) }

func (r router) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	t, err := r.h(ctx).GetTask(ctx, req)
	return t, r.err(err)
}

func (r router) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	l, err := r.h(ctx).ListTasks(ctx, req)
	return l, r.err(err)
}

func (r router) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	t, err := r.h(ctx).CancelTask(ctx, req)
	return t, r.err(err)
}

func (r router) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	res, err := r.h(ctx).SendMessage(ctx, req)
	return res, r.err(err)
}

func (r router) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return r.events(r.h(ctx).SubscribeToTask(ctx, req))
}

func (r router) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return r.events(r.h(ctx).SendStreamingMessage(ctx, req))
}

func (r router) events(seq iter.Seq2[a2a.Event, error]) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		for ev, err := range seq {
			if !yield(ev, r.err(err)) {
				return
			}
		}
	}
}

func (r router) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	c, err := r.h(ctx).GetTaskPushConfig(ctx, req)
	return c, r.err(err)
}

func (r router) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	l, err := r.h(ctx).ListTaskPushConfigs(ctx, req)
	return l, r.err(err)
}

func (r router) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (*a2a.PushConfig, error) {
	c, err := r.h(ctx).CreateTaskPushConfig(ctx, req)
	return c, r.err(err)
}

func (r router) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) error {
	return r.err(r.h(ctx).DeleteTaskPushConfig(ctx, req))
}

func (r router) GetExtendedAgentCard(ctx context.Context, req *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	c, err := r.h(ctx).GetExtendedAgentCard(ctx, req)
	return c, r.err(err)
}
