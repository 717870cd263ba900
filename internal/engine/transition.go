package engine

import (
	"context"
	"errors"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// Every change of a task is a transition: load what the decision needs once
// (the row and, for a message, the deduplication answer and the request,
// never the whole history), decide, write once with compare-and-set, and
// publish once. commit is the one place a task is written and published;
// retryCAS the one place a decision is taken again after losing a
// compare-and-set.

// maxCASRetries bounds how often a transition decides again after another
// writer changed the task first.
const maxCASRetries = 8

// errKeptChanging is what a transition answers when it lost every retry.
var errKeptChanging = a2a.NewError(a2a.ErrInternalError, "the task kept changing while this request was being taken; send it again")

// commit writes next (a new task when create is set, else a compare-and-set
// on next.Version) with its log entries, and publishes the change: local
// waiters, the timer loops, and the push deliverer for pauses and endings.
// Cross-node waiters hear of it from the store (store.Notifier).
//
// ch says what the caller knows of the change (the task as loaded, the
// run's input, the cause), for the observer and the transition's log line.
func (s *Engine) commit(ctx context.Context, ch commitNote, next *store.Task, entries []store.LogEntry, create bool) (*store.Task, error) {
	var saved *store.Task
	var err error
	s.observeBefore(ctx, ch, next)
	if create {
		saved, err = s.store.CreateTask(ctx, next, entries)
	} else {
		saved, err = s.store.UpdateTask(ctx, next, entries)
	}
	if err != nil {
		return nil, err
	}
	s.publish(saved, saved.PushDue)
	s.observe(ctx, ch, saved, entries)
	return saved, nil
}

// publish tells this node's waiters and loops that t changed; notify says
// the change appended something for push receivers.
func (s *Engine) publish(t *store.Task, notify bool) {
	s.broker.notify(t.ID)
	s.sweeper.wake(t.WakeAt)
	s.releaser.wake(t.HoldAt)
	if notify {
		s.pusher.kick()
	}
}

// retryCAS runs attempt until it does not lose a compare-and-set
// (store.ErrConflict), at most maxCASRetries times. attempt decides anew
// from a fresh load each time.
func retryCAS(attempt func() error) error {
	for range maxCASRetries {
		err := attempt()
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return errKeptChanging
}

// taskLocks serialise the transitions of one task on this node while a
// step runs before its input is committed (quick steps, see run.go): two
// answers racing on one node then decide one after the other, so a step's
// side effects are never taken for an answer that loses. Across nodes the
// compare-and-set decides, and quick steps are off (store.SingleNode).
type taskLocks struct {
	mu sync.Mutex
	m  map[string]*taskLock
}

type taskLock struct {
	mu   sync.Mutex
	refs int
}

// lockTask takes task id's lock on a serialised store and returns its
// unlock, which may be called more than once; elsewhere it does nothing.
func (s *Engine) lockTask(id string) (unlock func()) {
	if !s.serialised() {
		return func() {}
	}
	return sync.OnceFunc(s.locks.lock(id))
}

// lock takes the lock of task id and returns its unlock.
func (l *taskLocks) lock(id string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*taskLock{}
	}
	tl := l.m[id]
	if tl == nil {
		tl = &taskLock{}
		l.m[id] = tl
	}
	tl.refs++
	l.mu.Unlock()
	tl.mu.Lock()
	return func() {
		tl.mu.Unlock()
		l.mu.Lock()
		if tl.refs--; tl.refs == 0 {
			delete(l.m, id)
		}
		l.mu.Unlock()
	}
}
