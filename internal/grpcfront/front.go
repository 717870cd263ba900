// Package grpcfront serves the A2A 1.0 gRPC binding for several agents on
// one gRPC server: the a2a-go SDK's gRPC transport (a2agrpc) over each
// agent's own request handler, behind the edge rules the HTTP front
// applies to the other two bindings. The replies of SendMessage, GetTask
// and CancelTask are written by the front from the task's stored bytes
// (reply.go, wire.go), as the HTTP front writes them.
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
// The front reads the server's one configuration (api.Config): the same
// tokens, limits and identifier rules as the HTTP bindings, and limits of
// its own on connections and calls (see New).
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
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/auth"
	"github.com/askpoint/askpoint/internal/text"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Agent is one agent the front serves.
type Agent struct {
	// Name is the agent's tenant on the gRPC binding (its path segment on
	// the HTTP bindings).
	Name string
	// Handler serves the agent's calls.
	Handler a2asrv.RequestHandler
}

// AcquireFunc takes one of a principal's stream slots (the HTTP front's,
// so that Config.MaxStreamsPerPrincipal is counted across bindings), or
// says why it cannot.
type AcquireFunc func(principal string) (release func(), err error)

// Front is a gRPC server for a set of agents.
type Front struct {
	cfg     api.Config
	tokens  auth.Tokens
	acquire AcquireFunc
	agents  map[string]*route
	first   string
	names   []string
	srv     *grpc.Server
	log     *slog.Logger

	// stopping ends open streams when the front stops.
	stopping context.Context
	stop     context.CancelFunc
	once     sync.Once
}

// New returns a front for agents under cfg, the server's configuration
// with its defaults applied (api.Defaults): the same tokens, message and
// part limits, identifier rules, stream slots (acquire; nil: no cap) and
// timeouts as the HTTP bindings. The first agent also takes calls that
// name no tenant. extra are more server options (instrumentation), added
// after the front's own; their unary interceptors are called once the
// front has admitted a call (admitted, unary), their stream interceptors
// after the front's. It serves nothing until Serve.
//
// The limits of a connection and a call, counted against the same
// settings as HTTP's:
//   - Config.MaxRequestBytes caps a request message (gRPC refuses a larger
//     one with RESOURCE_EXHAUSTED before it reaches the front);
//   - Config.MaxStreamsPerConnection caps the streams one connection has
//     open at once, before any is authenticated;
//   - Config.HeaderTimeout bounds the connection's HTTP/2 handshake;
//   - Config.BodyTimeout bounds how long a call's request message takes
//     to arrive once the call opened (a stream opened and left silent is
//     reset);
//   - Config.IdleTimeout closes a connection that has had no call for
//     that long, so idle connections do not hold Config.MaxConnections
//     slots.
func New(cfg api.Config, agents []Agent, acquire AcquireFunc, extra ...grpc.ServerOption) (*Front, error) {
	if len(agents) == 0 {
		return nil, errors.New("grpcfront: no agents to serve")
	}
	tokens, err := auth.NewTokens(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	f := &Front{cfg: cfg, tokens: tokens, acquire: acquire, agents: map[string]*route{}, log: cfg.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	for _, a := range agents {
		if a.Name == "" || a.Handler == nil {
			return nil, fmt.Errorf("grpcfront: agent %q: a name and a handler are required", a.Name)
		}
		if _, dup := f.agents[a.Name]; dup {
			return nil, fmt.Errorf("grpcfront: agent %q is given twice", a.Name)
		}
		f.agents[a.Name] = &route{a.Handler}
		f.names = append(f.names, a.Name)
	}
	f.first = agents[0].Name
	f.stopping, f.stop = context.WithCancel(context.Background())
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(int(min(cfg.MaxRequestBytes, 1<<30))),
		grpc.MaxConcurrentStreams(uint32(max(cfg.MaxStreamsPerConnection, 1))),
		grpc.ConnectionTimeout(cfg.HeaderTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: cfg.IdleTimeout}),
		grpc.InTapHandle(f.tap),
		// The edge rules of a unary call are applied by its method handler
		// (admitted), before any interceptor: one given in extra is then
		// the only one, which grpc-go calls without a closure per call to
		// chain it to ours.
		grpc.ChainStreamInterceptor(f.streaming),
		grpc.ForceServerCodecV2(newCodec()),
		// One write buffer per connection, kept: grpc-go's default shares
		// them, taking a 32 KB buffer from a pool on every flush (a new one
		// after each GC empties the pool) and allocating on every return to
		// it. An open connection holds its 32 KB buffer, about 40 KiB of
		// heap (docs/decisions/0260).
		grpc.SharedWriteBuffer(false),
		// Calls run on goroutines that are kept, as net/http keeps a
		// connection's: a goroutine per call grew its stack through the
		// engine and the store on every call (7% of the server's CPU in
		// runtime.copystack). A call that finds every worker busy gets a
		// goroutine of its own, as before.
		grpc.NumStreamWorkers(streamWorkers),
	}
	f.srv = grpc.NewServer(append(opts, extra...)...)
	svc := &service{Handler: a2agrpc.NewHandler(router{f}), r: router{f}}
	f.srv.RegisterService(serviceDesc(f, svc), svc)
	return f, nil
}

// streamWorkers is how many goroutines serve calls (grpc.NumStreamWorkers).
const streamWorkers = 64

// Server is the gRPC server the front serves with, for a caller that
// serves it on a listener of its own (Serve does).
func (f *Front) Server() *grpc.Server { return f.srv }

// EndStreams ends the open streams, each with UNAVAILABLE and a message
// saying to subscribe again, and every stream opened later at once.
func (f *Front) EndStreams() { f.once.Do(f.stop) }

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
	f.EndStreams()
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

// agentKey carries the route of a call, when the call's context has no
// clock to carry it (see admit).
type agentKey struct{}

// route is the agent a call goes to: one for each agent, made with the
// front, so that a call's context can take it without an allocation.
type route struct{ h a2asrv.RequestHandler }

// admit applies the edge rules to one call's request: version, caller,
// agent (tenant), message. It returns the context the handler gets.
func (f *Front) admit(ctx context.Context, req any) (context.Context, error) {
	// The caller first, then the version, as the HTTP front checks them.
	if f.tokens.Required() {
		principal, err := f.tokens.Authenticate(first(ctx, "authorization"))
		if err != nil {
			return nil, toStatus(f.log, err)
		}
		ctx = auth.WithPrincipal(ctx, principal)
	}
	if err := checkVersion(ctx); err != nil {
		return nil, err
	}
	name := f.first
	if m, ok := req.(proto.Message); ok {
		if tenant := takeTenant(m); tenant != "" {
			name = tenant
		}
	}
	rt, ok := f.agents[name]
	if !ok {
		return nil, toStatus(f.log, a2a.NewError(a2a.ErrInvalidParams,
			fmt.Sprintf("tenant %q names no agent here: use one of %s (the tenant of the agent card's GRPC interface)", name, strings.Join(f.names, ", "))))
	}
	if err := checkRequest(req, f.cfg.MaxParts, f.cfg.MaxIDBytes); err != nil {
		return nil, toStatus(f.log, err)
	}
	// The call's context as tap made it carries the route itself.
	if x, ok := ctx.Value(requestClockKey{}).(*clockCtx); ok && x.route.CompareAndSwap(nil, rt) {
		return ctx, nil
	}
	return context.WithValue(ctx, agentKey{}, rt), nil
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

// checkVersion requires A2A-Version 1.0 (or 1.0.x) in the call's metadata.
func checkVersion(ctx context.Context) error {
	v := strings.TrimSpace(first(ctx, "a2a-version"))
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
// malformed message, a negative history length (which it reads as none),
// and an identifier the HTTP bindings refuse (too long, or holding a
// control character: text.CheckID).
func checkRequest(req any, maxParts, maxID int) error {
	if m, ok := req.(proto.Message); ok {
		if err := checkIDs(m.ProtoReflect(), "", maxID); err != nil {
			return err
		}
	}
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

// idFields are the fields that hold identifiers, by their JSON names (the
// HTTP bindings' words): bounded in length and free of control characters
// on every binding.
var idFields = map[string]bool{"id": true, "taskId": true, "contextId": true, "messageId": true, "referenceTaskIds": true, "tenant": true}

// checkIDs walks a request's fields (not the caller's own data: metadata,
// data parts, extensions) and checks the identifiers, naming the field as
// the HTTP bindings do (params.message.messageId). The walk builds no names
// until it finds a refusal, which a second walk then names.
func checkIDs(m protoreflect.Message, where string, maxID int) error {
	if walkIDs(m, where, maxID, false) == nil {
		return nil
	}
	return walkIDs(m, where, maxID, true)
}

// walkIDs is checkIDs's walk, naming the fields when named.
func walkIDs(m protoreflect.Message, where string, maxID int, named bool) error {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		name := fd.JSONName()
		field := ""
		if named {
			field = name
			if where != "" {
				field = where + "." + name
			}
		}
		elem := func(i int) string {
			if !named {
				return ""
			}
			return fmt.Sprintf("%s[%d]", field, i)
		}
		switch {
		case fd.Kind() == protoreflect.StringKind && idFields[name]:
			if fd.IsList() {
				l := m.Get(fd).List()
				for i := range l.Len() {
					if err := text.CheckID(elem(i), l.Get(i).String(), maxID); err != nil {
						return err
					}
				}
				continue
			}
			if err := text.CheckID(field, m.Get(fd).String(), maxID); err != nil {
				return err
			}
		case fd.Kind() == protoreflect.MessageKind && !fd.IsMap():
			if name == "metadata" || name == "data" || name == "extensions" || fd.Message().FullName() == "google.protobuf.Struct" {
				continue
			}
			if fd.IsList() {
				l := m.Get(fd).List()
				for i := range l.Len() {
					if err := walkIDs(l.Get(i).Message(), elem(i), maxID, named); err != nil {
						return err
					}
				}
				continue
			}
			if err := walkIDs(m.Get(fd).Message(), field, maxID, named); err != nil {
				return err
			}
		}
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

// admitUnary applies the edge rules to a unary call whose request has been
// read: the request clock stopped, then admit.
func (f *Front) admitUnary(ctx context.Context, req any) (context.Context, error) {
	arrived(ctx)
	return f.admit(ctx, req)
}

// admitted is the method handler h of a unary method the front does not
// answer itself (a2agrpc's), with the edge rules applied to the request
// before the server's interceptors see it, as they are for the methods
// the front answers (unary in reply.go).
func (f *Front) admitted(h grpc.MethodHandler) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, next grpc.UnaryServerInterceptor) (any, error) {
		return h(srv, ctx, dec, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			ctx, err := f.admitUnary(ctx, req)
			if err != nil {
				return nil, err
			}
			if next == nil {
				return handler(ctx, req)
			}
			return next(ctx, req, info, handler)
		})
	}
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
	arrived(s.ctx)
	ctx, err := s.f.admit(s.ctx, m)
	if err != nil {
		return err
	}
	if s.f.acquire != nil {
		release, err := s.f.acquire(auth.Principal(ctx))
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
	if rt, ok := ctx.Value(agentKey{}).(*route); ok && rt != nil {
		return rt.h
	}
	return r.f.agents[r.f.first].h
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
