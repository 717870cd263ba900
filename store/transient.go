package store

import (
	"errors"
	"sync"
)

// ErrTransient marks a store error that may succeed when tried again: the
// database restarted, a connection dropped, a serialization failure or a
// deadlock, a busy or momentarily unwritable file. Nothing of the failed
// call was kept (a write is one transaction). Drivers classify their own
// errors once (RegisterTransient); callers ask IsTransient.
var ErrTransient = errors.New("store: transient failure; try again")

var (
	classMu    sync.RWMutex
	classifier []func(error) bool
)

// RegisterTransient adds a driver's classifier: fn reports whether one of
// the driver's native errors is transient. Drivers call it from init.
func RegisterTransient(fn func(error) bool) {
	classMu.Lock()
	defer classMu.Unlock()
	classifier = append(classifier, fn)
}

// IsTransient reports whether err (or an error it wraps) is a transient
// store failure: ErrTransient, or an error a driver classifies so. A lost
// compare-and-set (ErrConflict) is not transient: it is decided again.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, ErrConflict) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) {
		return false
	}
	if errors.Is(err, ErrTransient) {
		return true
	}
	classMu.RLock()
	defer classMu.RUnlock()
	for _, fn := range classifier {
		if fn(err) {
			return true
		}
	}
	return false
}
