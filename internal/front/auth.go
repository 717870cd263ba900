package front

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/engine"
)

// Authentication and the per-principal limits that need to know who is
// calling. Tasks are scoped to the principal that created them in
// handler.go (getOwned); here the caller is identified.

// BearerScheme is the security scheme's name on the agent card.
const BearerScheme = "bearer"

// tokenTable maps the SHA-256 of each bearer token to its principal, so a
// lookup neither keeps tokens in the clear nor leaks their bytes through
// comparison timing.
type tokenTable map[[sha256.Size]byte]string

func newTokenTable(tokens map[string]string) (tokenTable, error) {
	t := tokenTable{}
	for token, principal := range tokens {
		if len(token) < 16 {
			return nil, fmt.Errorf("askpoint: the token of principal %q is %d characters; use at least 16", principal, len(token))
		}
		if principal == "" {
			return nil, fmt.Errorf("askpoint: a token maps to an empty principal")
		}
		t[sha256.Sum256([]byte(token))] = principal
	}
	return t, nil
}

// CheckTokens says whether tokens can be served: each at least 16
// characters, each mapped to a principal.
func CheckTokens(tokens map[string]string) error {
	_, err := newTokenTable(tokens)
	return err
}

// Authenticate names the caller of a request from its Authorization value
// ("Bearer <token>"), or refuses it with an Unauthenticated error that says
// what to send. Without configured tokens every caller is anonymous ("").
func (f *Front) Authenticate(authorization string) (principal string, err error) {
	if len(f.tokens) == 0 {
		return "", nil
	}
	scheme, token, ok := strings.Cut(authorization, " ")
	if authorization == "" {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "this agent requires a bearer token: send the header Authorization: Bearer <token>")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "the Authorization header must be \"Bearer <token>\"")
	}
	principal, ok = f.tokens[sha256.Sum256([]byte(strings.TrimSpace(token)))]
	if !ok {
		return "", a2a.NewError(a2a.ErrUnauthenticated, "the bearer token is not one this server knows: send Authorization: Bearer <token> with a token its operator issued")
	}
	return principal, nil
}

// AcquireStream takes one of principal's stream slots, counted across
// every binding, or says why it cannot.
func (f *Front) AcquireStream(principal string) (release func(), err error) {
	return f.streams.acquire(principal)
}

// Limits are the request limits in force.
func (f *Front) Limits() (maxRequestBytes int64, maxParts int) {
	return f.opts.MaxRequestBytes, f.opts.MaxParts
}

// authenticate names the caller from its bearer token, or refuses the
// request. Without configured tokens every caller is anonymous.
func (f *Front) authenticate(r *http.Request) (*http.Request, error) {
	if len(f.tokens) == 0 {
		return r, nil
	}
	principal, err := f.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	return r.WithContext(engine.WithPrincipal(r.Context(), principal)), nil
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
