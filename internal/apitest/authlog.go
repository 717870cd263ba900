package apitest

import (
	"net/http"
	"sync"
)

// AuthLog records, for a handler standing in for an agent or a receiver,
// each request's method, path and Authorization header: what a test checks
// a bearer token reached, or did not.
type AuthLog struct {
	mu  sync.Mutex
	got []string
}

// Add records r as "METHOD PATH AUTHORIZATION".
func (a *AuthLog) Add(r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.got = append(a.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
}

// All is what was recorded, in order.
func (a *AuthLog) All() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}
