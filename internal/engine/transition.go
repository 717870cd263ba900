package engine

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

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
	s.obs.before(ctx, ch, next)
	if create {
		saved, err = s.store.CreateTask(ctx, next, entries)
	} else {
		saved, err = s.store.UpdateTask(ctx, next, entries)
	}
	if err != nil {
		s.rows.drop(next.ID) // decided from a row that is no longer the store's, or none
		return nil, err
	}
	s.rows.committed(saved, entries, create)
	s.publish(saved, saved.PushDue)
	s.obs.transition(ctx, ch, saved, entries)
	return saved, nil
}

// publish tells this node's waiters and loops that t changed; notify says
// the change appended something for push receivers.
func (s *Engine) publish(t *store.Task, notify bool) {
	s.broker.notify(t.ID)
	s.sweeper.wake(t.WakeAt)
	s.releaser.wake(t.HoldAt)
	if notify {
		s.outbox.kick()
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

// Quick steps (see run.go) run a step before its input is written. While
// that input is unwritten, every other transition of the task waits, on
// every node, so that two racing answers decide one after the other and a
// step's side effects are never taken for an answer that loses: the store
// holds the task (store.Locker; decision 0020). Every transition of a task
// takes its lock; on a shared store the lock holds the task across nodes
// only from a LoadTask made under it (store.WithLock), which only a message
// that may take a quick step makes, and the other transitions' writes wait
// for that lock in the store.

// lockTask takes the store's lock of task id (or of a request key); on a
// store without locks, a lock that holds nothing (and quick steps are off).
func (s *Engine) lockTask(id string) store.TaskLock {
	if s.locker == nil {
		return noLock{}
	}
	return s.locker.LockTask(id)
}

// noLock is the lock of a store without locks.
type noLock struct{}

func (noLock) Holding() bool { return false }
func (noLock) Unlock()       {}

// Transient store failures (store.IsTransient: a restart, a dropped
// connection, a deadlock, a busy file) are the other thing a request tries
// again: the whole decision runs anew from a fresh load, a bounded number of
// times with a short backoff, and then the caller is told to retry
// (errUnavailable), with no internals. A write is one transaction, so a
// failed one left nothing half-written; a write that committed but whose
// reply was lost is found again by its messageId.

// transientRetries bounds the tries of one request after a transient
// failure; transientBackoff is the first wait, doubled each time (with
// jitter), so a request rides through about a second of outage.
const (
	transientRetries = 5
	transientBackoff = 40 * time.Millisecond
)

// RetryAfter is what an unavailable answer tells the caller to wait, in
// seconds (HTTP+JSON: the Retry-After header).
const RetryAfter = 1

// UnavailableMessage is the message of errUnavailable.
const UnavailableMessage = "the server's store is unavailable for a moment: send the request again in a second, with the same messageId (a message already taken is not taken twice)"

// errUnavailable answers a request whose transient failures outlasted its
// retries. It is the protocol's internal error (JSON-RPC -32603), marked
// retryable in its ErrorInfo metadata so that the HTTP+JSON front answers
// 503 with Retry-After (IsUnavailable).
func errUnavailable() error {
	return a2a.NewError(a2a.ErrInternalError, UnavailableMessage).
		WithErrorInfoMeta(map[string]string{"retryable": "true", "retryAfterSeconds": strconv.Itoa(RetryAfter)})
}

// IsUnavailable reports whether err is errUnavailable's answer.
func IsUnavailable(err error) bool {
	var ae *a2a.Error
	return errors.As(err, &ae) && ae.Message == UnavailableMessage
}

// isTransient reports whether err is a transient store failure, also when
// an internal error carries it as its cause.
func isTransient(err error) bool {
	var ie *internalError
	if errors.As(err, &ie) {
		return store.IsTransient(ie.cause)
	}
	return store.IsTransient(err)
}

// backoff is the wait before try n (0-based) of a retry starting at min and
// doubling up to max, with jitter: a random point in [d/2, d].
func backoff(n int, min, max time.Duration) time.Duration {
	d := min
	for i := 0; i < n && d < max; i++ {
		d *= 2
	}
	d = time.Duration(math.Min(float64(d), float64(max)))
	if d <= 1 {
		return d
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// retryTransient runs op, and runs it again while it fails with a transient
// store failure, at most transientRetries more times; when it still fails
// so, the transient error is logged once, with its cause (the attempts log
// nothing of their own), and the caller gets errUnavailable. op must
// decide anew from a fresh load each time.
func (s *Engine) retryTransient(ctx context.Context, op string, attempt func() error) error {
	var err error
	for n := 0; ; n++ {
		err = attempt()
		if !isTransient(err) {
			return err
		}
		s.transientRetries.Add(1)
		if n >= transientRetries {
			break
		}
		t := time.NewTimer(backoff(n, transientBackoff, time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	var ie *internalError
	if errors.As(err, &ie) {
		err = ie.cause
	}
	s.log.Warn("store unavailable; the request was answered with a retryable error", slog.String("op", op),
		slog.Int("attempts", transientRetries+1), slog.Any("err", err))
	return errUnavailable()
}

// TransientRetries is how many times this node tried a request again after
// a transient store failure (for tests and metrics).
func (s *Engine) TransientRetries() int64 { return s.transientRetries.Load() }
