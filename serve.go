package askpoint

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"

	"google.golang.org/grpc"

	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/front"
	"github.com/askpoint/askpoint/internal/grpcfront"
	"github.com/askpoint/askpoint/internal/port"
)

// ListenAndServe listens on addr (host:port; 127.0.0.1:8420, say) and
// serves there as [Server.Serve] does, until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("askpoint: listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves the registered agents on ln until ctx ends: all three A2A
// bindings on the one port (JSON-RPC and HTTP+JSON over HTTP/1.1, gRPC
// over HTTP/2, told apart by each connection's first bytes), the agent
// cards, the wake endpoint and what [Server.Handle] added. Every binding
// meets the same edge: the callers' tokens, the request, part, identifier
// and stream limits, and the timeouts of Config (HeaderTimeout,
// BodyTimeout, IdleTimeout), at most Config.MaxConnections connections
// (past it the one idle the longest is closed, or the new one is answered
// 503 at once). With Config.DisableGRPC only the HTTP bindings are served.
//
// Serve starts the server ([Server.Start]) unless it is started, and lets
// push notifications reach ln's own address (an orchestrator served here
// hears from a sub-agent served here, see Config.WebhookHosts). When ctx
// ends it stops gracefully: streams end with a message to subscribe again,
// the requests [Server.Handle]'s handlers hold open end, calls under way
// finish within Config.ShutdownTimeout, and the server stops
// ([Server.Stop]). It returns nil after a stop that ctx's end caused, or
// the error that ended serving. ln is closed when Serve returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer ln.Close()
	s.eng.AllowWebhookHosts(hostsOf(ln.Addr())...)
	if err := s.eng.Start(ctx); err != nil && !errors.Is(err, engine.ErrStarted) {
		return err
	}
	limit := port.Limit(ln, s.cfg.MaxConnections)
	httpLn := net.Listener(limit)
	errc := make(chan error, 2)
	var g *grpcfront.Front
	if !s.cfg.DisableGRPC {
		gf, err := s.grpcFront()
		if err != nil {
			_ = s.Stop(context.WithoutCancel(ctx))
			return err
		}
		g = gf
		var grpcLn net.Listener
		httpLn, grpcLn = port.Split(limit, s.cfg.HeaderTimeout)
		go func() {
			if err := g.Serve(grpcLn); err != nil {
				errc <- fmt.Errorf("askpoint: serve gRPC: %w", err)
			}
		}()
	}
	hs := &http.Server{
		Handler:           front.BodyDeadline(s.Handler(), s.cfg.BodyTimeout),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		// No ReadTimeout or WriteTimeout: either would cut streams, which
		// stay open for as long as their tasks run.
		ConnState: limit.ConnState,
		ErrorLog:  slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelDebug),
	}
	// Shutdown waits for handlers; a stream's handler returns when its
	// context ends, so the streams are ended first.
	hs.RegisterOnShutdown(s.EndStreams)
	go func() {
		if err := hs.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("askpoint: serve HTTP: %w", err)
		}
	}()

	var served error
	select {
	case <-ctx.Done():
	case served = <-errc:
	}
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	s.shutdownNow() // the pages' open requests end
	s.EndStreams()
	var cut error // the graceful stop ran out of time
	if g != nil {
		cut = g.Stop(stopCtx) // calls under way finish, then what is left is cut off
	}
	if err := hs.Shutdown(stopCtx); err != nil {
		_ = hs.Close()
		cut = cmp.Or(cut, err)
	}
	if err := s.Stop(stopCtx); err != nil {
		cut = cmp.Or(cut, err)
	}
	if served == nil && cut != nil {
		served = fmt.Errorf("askpoint: the graceful stop was cut short after %s (Config.ShutdownTimeout): %w", s.cfg.ShutdownTimeout, cut)
	}
	return served
}

// GRPC returns a gRPC server of the A2A gRPC binding for every registered
// agent (a call names its agent in the request's tenant field; one that
// names none goes to the first agent), behind the same edge as
// [Server.Handler]: a call without a valid token is refused as
// Unauthenticated when Config.Tokens is set, on every method; A2A-Version
// 1.0 is required in the metadata; messages, parts and identifiers are
// checked as on the HTTP bindings; streams count against
// Config.MaxStreamsPerPrincipal together with HTTP's; and a connection
// holds at most Config.MaxStreamsPerConnection calls, must finish its
// handshake within Config.HeaderTimeout, send each call's request within
// Config.BodyTimeout, and is closed after Config.IdleTimeout without a
// call. Errors carry the specification's status codes and a
// google.rpc.ErrorInfo. extra are more server options (a stats handler of
// OpenTelemetry's, say), added after askpoint's own; a unary interceptor
// among them sees a call only once these rules have admitted it, with its
// caller named (docs/decisions/0260).
//
// From the first call on, the agent cards declare the gRPC interface on the
// host and port they are served from: serve it on the same port as Handler
// (Serve does). Call [Server.EndStreams] before its GracefulStop.
func (s *Server) GRPC(extra ...grpc.ServerOption) (*grpc.Server, error) {
	g, err := s.grpcFront(extra...)
	if err != nil {
		return nil, err
	}
	return g.Server(), nil
}

// grpcFront builds a gRPC front for the registered agents.
func (s *Server) grpcFront(extra ...grpc.ServerOption) (*grpcfront.Front, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.frontLocked()
	if s.cfg.DisableGRPC {
		return nil, errors.New("askpoint: GRPC: Config.DisableGRPC is set")
	}
	var agents []grpcfront.Agent
	for _, spec := range s.specs {
		h, _ := s.eng.Handler(spec.Name)
		agents = append(agents, grpcfront.Agent{Name: spec.Name, Handler: h})
	}
	g, err := grpcfront.New(s.cfg, agents, f.AcquireStream, extra...)
	if err != nil {
		return nil, err
	}
	if len(s.grpcs) == 0 {
		f.AddInterface(grpcfront.Interface)
	}
	s.grpcs = append(s.grpcs, g)
	return g, nil
}

// hostsOf are the host:port forms of a listener's address that push
// notifications may go to: on every interface (0.0.0.0, ::), the loopback
// ones.
func hostsOf(a net.Addr) []string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return []string{a.String()}
	}
	p := strconv.Itoa(tcp.Port)
	if tcp.IP == nil || tcp.IP.IsUnspecified() {
		return []string{"127.0.0.1:" + p, "localhost:" + p, "[::1]:" + p}
	}
	return []string{net.JoinHostPort(tcp.IP.String(), p)}
}
