// Package keylock is the in-process half of a store's task locks
// (store.Locker): one mutex per key, made when first taken and dropped when
// its last holder or waiter lets go, so that an idle key costs nothing.
package keylock

import "sync"

// Locks is a set of keyed mutexes. The zero value is ready to use.
type Locks struct {
	mu sync.Mutex
	m  map[string]*entry
}

type entry struct {
	mu   sync.Mutex
	refs int
}

// Lock takes key's mutex, waiting while someone else holds it, and returns
// its unlock, which must be called exactly once.
func (l *Locks) Lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*entry{}
	}
	e := l.m[key]
	if e == nil {
		e = &entry{}
		l.m[key] = e
	}
	e.refs++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// Held is a store.TaskLock that holds only its in-process mutex: what a
// store one process owns answers LockTask with.
type Held struct {
	once   sync.Once
	unlock func()
}

// Take takes key's mutex in l as a Held lock.
func (l *Locks) Take(key string) *Held { return &Held{unlock: l.Lock(key)} }

// Holding is true: on a store one process owns, the in-process mutex
// holds the task against every writer there is.
func (h *Held) Holding() bool { return true }

// Unlock releases the mutex; later calls do nothing.
func (h *Held) Unlock() { h.once.Do(h.unlock) }
