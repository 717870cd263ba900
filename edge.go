package askpoint

import (
	"context"
	"crypto/sha256"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// What a transport mounted outside this package (the gRPC front,
// internal/grpcfront) needs to apply the edge rules the HTTP front applies:
// the limits, the callers' tokens, the stream slots and a place on the
// agent cards.

// Limits returns the request limits in force (Config.MaxRequestBytes and
// Config.MaxParts, defaults applied).
func (s *Server) Limits() (maxRequestBytes int64, maxParts int) {
	return s.cfg.MaxRequestBytes, s.cfg.MaxParts
}

// Authenticate names the caller of a request from its Authorization value
// ("Bearer <token>"), or refuses it with an Unauthenticated error that says
// what to send. Without configured tokens every caller is anonymous ("").
func (s *Server) Authenticate(authorization string) (principal string, err error) {
	if len(s.tokens) == 0 {
		return "", nil
	}
	scheme, token, ok := strings.Cut(authorization, " ")
	if authorization == "" {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "this agent requires a bearer token: send the header Authorization: Bearer <token>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "the Authorization header must be \"Bearer <token>\"")
	}
	principal, ok = s.tokens[sha256.Sum256([]byte(strings.TrimSpace(token)))]
	if !ok {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "the bearer token is not one this server knows: send Authorization: Bearer <token> with a token its operator issued")
	}
	return principal, nil
}

// AcquireStream takes one of the calling principal's stream slots
// (Config.MaxStreamsPerPrincipal), counted across every binding, or says
// why it cannot. release gives the slot back; it may be called more than
// once.
func (s *Server) AcquireStream(ctx context.Context) (release func(), err error) {
	return s.streams.acquire(principalFrom(ctx))
}

// AddInterface adds an interface to every agent card this server serves:
// fn gets the base URL the card is served from (scheme and host) and the
// agent's name, and returns the interface, or nil for none. Interfaces
// come after the JSON-RPC and HTTP+JSON ones, in the order added. Call it
// before serving.
func (s *Server) AddInterface(fn func(baseURL, agent string) *a2a.AgentInterface) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interfaces = append(s.interfaces, fn)
}

func (s *Server) extraInterfaces(baseURL, agent string) []*a2a.AgentInterface {
	s.mu.Lock()
	fns := s.interfaces
	s.mu.Unlock()
	var out []*a2a.AgentInterface
	for _, fn := range fns {
		if iface := fn(baseURL, agent); iface != nil {
			out = append(out, iface)
		}
	}
	return out
}
