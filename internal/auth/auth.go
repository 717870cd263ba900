// Package auth names the caller of a request: the bearer tokens a server
// takes (Config.Tokens), and the principal a request's context carries once
// a front, the engine's handler or Go code has named it.
//
// Every door of a server names its caller here: the HTTP front from the
// Authorization header, the gRPC front from the authorization metadata,
// and the engine's handler itself, from the request's a2asrv call context,
// when a request reaches it on a transport mounted by hand with no caller
// named yet. So a server with tokens refuses a tokenless call whatever
// transport carries it.
package auth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Tokens maps the SHA-256 of each bearer token to its principal, so a
// lookup neither keeps tokens in the clear nor leaks their bytes through
// comparison timing.
type Tokens struct{ m map[[sha256.Size]byte]string }

// NewTokens checks tokens (each at least 16 characters, each of a
// principal) and returns their table.
func NewTokens(tokens map[string]string) (Tokens, error) {
	t := Tokens{m: make(map[[sha256.Size]byte]string, len(tokens))}
	for token, principal := range tokens {
		if len(token) < 16 {
			return Tokens{}, fmt.Errorf("askpoint: the token of principal %q is %d characters; use at least 16", principal, len(token))
		}
		if principal == "" {
			return Tokens{}, fmt.Errorf("askpoint: a token maps to an empty principal")
		}
		t.m[sha256.Sum256([]byte(token))] = principal
	}
	return t, nil
}

// Required reports whether callers must carry a token: some are configured.
func (t Tokens) Required() bool { return len(t.m) > 0 }

// Authenticate names the caller of a request from its Authorization value
// ("Bearer <token>"), or refuses it with an Unauthenticated error that says
// what to send. Without configured tokens every caller is anonymous ("").
func (t Tokens) Authenticate(authorization string) (principal string, err error) {
	if !t.Required() {
		return "", nil
	}
	scheme, token, ok := strings.Cut(authorization, " ")
	if authorization == "" {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "this agent requires a bearer token: send the header Authorization: Bearer <token>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "the Authorization header must be \"Bearer <token>\"")
	}
	principal, ok = t.m[sha256.Sum256([]byte(strings.TrimSpace(token)))]
	if !ok {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "the bearer token is not one this server knows: send Authorization: Bearer <token> with a token its operator issued")
	}
	return principal, nil
}

type principalKey struct{}

// WithPrincipal returns a context that names the caller: every task belongs
// to the principal that created it and is invisible to others.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

// Principal names the caller of ctx ("" when anonymous or not named).
func Principal(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// Named reports whether ctx names its caller (WithPrincipal was called on
// it, possibly with the anonymous "").
func Named(ctx context.Context) bool {
	_, ok := ctx.Value(principalKey{}).(string)
	return ok
}
