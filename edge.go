package askpoint

import (
	"context"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/auth"
)

// What a transport mounted beside the HTTP front (the gRPC front,
// internal/grpcfront) needs to apply the same edge rules: the limits, the
// callers' tokens, the stream slots and a place on the agent cards.

// Limits returns the request limits in force (Config.MaxRequestBytes and
// Config.MaxParts, defaults applied).
func (s *Server) Limits() (maxRequestBytes int64, maxParts int) { return s.frontEnd().Limits() }

// Authenticate names the caller of a request from its Authorization value
// ("Bearer <token>"), or refuses it with an Unauthenticated error that says
// what to send. Without configured tokens every caller is anonymous ("").
func (s *Server) Authenticate(authorization string) (principal string, err error) {
	return s.frontEnd().Authenticate(authorization)
}

// AcquireStream takes one of the calling principal's stream slots
// (Config.MaxStreamsPerPrincipal), counted across every binding, or says
// why it cannot. release gives the slot back; it may be called more than
// once.
func (s *Server) AcquireStream(ctx context.Context) (release func(), err error) {
	return s.frontEnd().AcquireStream(auth.Principal(ctx))
}

// AddInterface adds an interface to every agent card this server serves:
// fn gets the base URL the card is served from (scheme and host) and the
// agent's name, and returns the interface, or nil for none. Interfaces
// come after the JSON-RPC and HTTP+JSON ones, in the order added. Call it
// before serving.
func (s *Server) AddInterface(fn func(baseURL, agent string) *a2a.AgentInterface) {
	s.frontEnd().AddInterface(fn)
}
