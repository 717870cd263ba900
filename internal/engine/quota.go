package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Per-principal limits on new tasks (issue 23, finding 6): how many open
// (not terminal) tasks a principal may have, and how many it may start per
// minute on this node. Both are off when zero. The open count is read from
// the store before the task is written; on this node a principal's checks
// take turns and count the creates they let through until those are
// written (openSlots), so racing creates cannot pass the cap here. Creates
// racing on other nodes of one PostgreSQL can pass it by as many as race
// there; the rate is per node.

// rateBuckets is a token bucket per principal.
type rateBuckets struct {
	mu      sync.Mutex
	perMin  int
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// take spends one token of principal's bucket, refilled at perMin a
// minute up to perMin; false when it is empty.
func (r *rateBuckets) take(principal string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.buckets == nil {
		r.buckets = map[string]*bucket{}
	}
	b, ok := r.buckets[principal]
	if !ok {
		if len(r.buckets) >= 100000 {
			// Bounded: forget full buckets (they hold nothing a new one lacks).
			for k, v := range r.buckets {
				if v.tokens+now.Sub(v.at).Minutes()*float64(r.perMin) >= float64(r.perMin) {
					delete(r.buckets, k)
				}
			}
		}
		b = &bucket{tokens: float64(r.perMin), at: now}
		r.buckets[principal] = b
	}
	b.tokens = min(float64(r.perMin), b.tokens+now.Sub(b.at).Minutes()*float64(r.perMin))
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// openSlots are, per principal on this node, the turn its open-task
// checks take and the creates they let through that are not written yet:
// a check counts those with the store's count.
type openSlots struct {
	mu sync.Mutex
	by map[string]*openSlot
}

type openSlot struct {
	turn    sync.Mutex // held from a check's count to its reservation
	pending int        // creates let through, not yet written (under openSlots.mu)
	users   int        // checks and creates holding the entry (under openSlots.mu)
}

// enter is principal's entry, held until leave.
func (o *openSlots) enter(principal string) *openSlot {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.by == nil {
		o.by = map[string]*openSlot{}
	}
	e := o.by[principal]
	if e == nil {
		e = &openSlot{}
		o.by[principal] = e
	}
	e.users++
	return e
}

func (o *openSlots) leave(principal string, e *openSlot, reserved bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if reserved {
		e.pending--
	}
	e.users--
	if e.users == 0 {
		delete(o.by, principal)
	}
}

func (o *openSlots) pending(e *openSlot) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return e.pending
}

func (o *openSlots) reserve(e *openSlot) {
	o.mu.Lock()
	defer o.mu.Unlock()
	e.pending++
}

// checkQuota refuses a new task for principal when it has
// MaxOpenTasksPerPrincipal open tasks, or has started
// NewTasksPerMinutePerPrincipal in the last minute. key is the request key
// of the message: a redelivery of a message whose task exists is never
// refused. done is called once the task is written, or its start failed:
// until then the task counts against the cap on this node.
func (s *Engine) checkQuota(ctx context.Context, tenant, principal, key string) (done func(), err error) {
	done = func() {}
	if s.cfg.MaxOpenTasksPerPrincipal <= 0 && s.cfg.NewTasksPerMinutePerPrincipal <= 0 {
		return done, nil
	}
	if slices.Contains(s.cfg.OnBehalfOfPrincipals, principal) {
		// An orchestrator's own principal: its callers were counted where
		// they called it.
		return done, nil
	}
	if _, err := s.store.TaskByRequestKey(ctx, key); err == nil {
		return done, nil // a redelivery: deduplication answers it
	}
	if n := s.cfg.MaxOpenTasksPerPrincipal; n > 0 {
		slot := s.openSlots.enter(principal)
		slot.turn.Lock()
		// Pending first, then the store: a create that is written and
		// done between the two is in the count. Read the other way round
		// it could be in neither (the count read before its write, pending
		// after its done), and one create too many would pass. This way it
		// may be in both, a refusal within the instant between its write
		// and its done, never a pass over the cap.
		pending := s.openSlots.pending(slot)
		open, err := s.store.CountOpen(ctx, tenant, principal)
		open += pending
		if err != nil || open >= n {
			slot.turn.Unlock()
			s.openSlots.leave(principal, slot, false)
			if err != nil {
				return nil, errInternal(err)
			}
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf(
				"you have %d open tasks, the most one caller may have (the server's MaxOpenTasksPerPrincipal); the message was not taken: answer, finish or cancel one of them first", open))
		}
		s.openSlots.reserve(slot)
		slot.turn.Unlock()
		var once sync.Once
		done = func() { once.Do(func() { s.openSlots.leave(principal, slot, true) }) }
	}
	if n := s.cfg.NewTasksPerMinutePerPrincipal; n > 0 && !s.rate.take(principal, time.Now()) {
		done()
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf(
			"you started %d tasks in the last minute, the most one caller may (the server's NewTasksPerMinutePerPrincipal); the message was not taken: send it again shortly", n))
	}
	return done, nil
}

// retain deletes the tasks that finished more than RetainFinished ago, a
// batch at a time, until ctx ends: every node runs it, and the store makes
// each deletion happen once.
func (s *Engine) retain(ctx context.Context) {
	defer s.wg.Done()
	every := max(min(s.cfg.RetainFinished/4, 10*time.Minute), s.cfg.PollInterval)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for {
			n, err := s.store.DeleteFinished(ctx, time.Now().Add(-s.cfg.RetainFinished), 1000)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Error("delete finished tasks past their retention", slog.Any("err", err))
				}
				break
			}
			if n > 0 {
				s.log.Info("deleted finished tasks past their retention", slog.Int("tasks", n), slog.Duration("retention", s.cfg.RetainFinished))
			}
			if n < 1000 {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
