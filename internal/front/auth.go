package front

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/auth"
)

// Authentication and the per-principal limits that need to know who is
// calling. Tasks are scoped to the principal that created them in
// handler.go (getOwned); here the caller is identified.

// BearerScheme is the security scheme's name on the agent card.
const BearerScheme = "bearer"

// Authenticate names the caller of a request from its Authorization value
// ("Bearer <token>"), or refuses it with an Unauthenticated error that says
// what to send (auth.Tokens.Authenticate).
func (f *Front) Authenticate(authorization string) (principal string, err error) {
	return f.tokens.Authenticate(authorization)
}

// AcquireStream takes one of principal's stream slots, counted across
// every binding, or says why it cannot.
func (f *Front) AcquireStream(principal string) (release func(), err error) {
	return f.streams.acquire(principal)
}

// Limits are the request limits in force.
func (f *Front) Limits() (maxRequestBytes int64, maxParts int) {
	return f.cfg.MaxRequestBytes, f.cfg.MaxParts
}

// authenticate names the caller from its bearer token, or refuses the
// request. Without configured tokens every caller is anonymous.
func (f *Front) authenticate(r *http.Request) (*http.Request, error) {
	if !f.tokens.Required() {
		return r, nil
	}
	principal, err := f.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	return r.WithContext(auth.WithPrincipal(r.Context(), principal)), nil
}

// streamSlots counts each principal's open streams.
type streamSlots struct {
	mu    sync.Mutex
	limit int
	open  map[string]int
}

// acquire takes a slot for principal, or says why it cannot.
func (l *streamSlots) acquire(principal string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[principal] >= l.limit {
		who := "anonymous callers"
		if principal != "" {
			who = fmt.Sprintf("principal %q", principal)
		}
		return nil, &limitError{msg: fmt.Sprintf("%s already hold %d open streams, the server's limit; close one (or use GetTask) and try again", who, l.limit)}
	}
	l.open[principal]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.open[principal]--; l.open[principal] <= 0 {
				delete(l.open, principal)
			}
		})
	}, nil
}

// limitError is a request refused by a server limit: invalid request on
// JSON-RPC, 429 on HTTP+JSON.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }
func (e *limitError) Unwrap() error { return a2a.ErrInvalidRequest }
