package askpoint

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
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

// authenticate names the caller from its bearer token, or refuses the
// request. Without configured tokens every caller is anonymous.
func (s *Server) authenticate(r *http.Request) (*http.Request, error) {
	if len(s.tokens) == 0 {
		return r, nil
	}
	principal, err := s.Authenticate(r.Header.Get("Authorization"))
	if err != nil {
		return nil, err
	}
	return r.WithContext(WithPrincipal(r.Context(), principal)), nil
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
