package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/store"
)

// A runnable task is held by one node at a time under a lease (the row's
// LeaseOwner and LeaseUntil): the node renews it while a step runs
// (heartbeat), gives it up when it lets the task go, and any node's poller
// claims the runnable tasks whose lease lapsed.

// leases is this node's side of the leases: every lease change it makes
// goes through it, so that the rows this node keeps (rowCache) move with
// the store's.
type leases struct {
	store store.Store
	rows  *rowCache
	node  string        // Config.NodeID: the owner this node's leases name
	span  time.Duration // Config.LeaseDuration
	every time.Duration // Config.PollInterval: how often lapsed runs are claimed
	now   func() time.Time
	log   *slog.Logger
	obs   *observer
}

// extend is store.ExtendLease for this node, with the cached row (if any)
// moved the same way: the store changes only lease_until, of the row with
// this owner and version, at millisecond precision. A zero until releases
// the lease.
func (l *leases) extend(ctx context.Context, id string, version int64, until time.Time) error {
	err := l.store.ExtendLease(ctx, id, l.node, version, until)
	if err != nil {
		l.rows.drop(id)
		return err
	}
	l.rows.leased(id, l.node, version, until)
	return nil
}

// giveUp releases the lease this node holds on t, unless the task has
// moved on since (then the release is a no-op conflict); a failure is
// logged as what.
func (l *leases) giveUp(ctx context.Context, t *store.Task, what string) {
	err := l.extend(ctx, t.ID, t.Version, time.Time{})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		l.log.Warn(what, slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
	}
}

// heartbeat renews the run's lease until the returned stop is called. When
// the store cannot be reached past the lease's end, another node may have
// taken the task over: the run no longer holds it and the step's context
// (cancelStep) is canceled, so that a step that cannot be fenced stops.
func (l *leases) heartbeat(ctx context.Context, r *run, cancelStep context.CancelFunc) (stop func()) {
	// Most steps end long before the first renewal is due: nothing runs
	// for them but a timer, and the renewing goroutine starts only when
	// the first renewal is.
	b := &beat{l: l, r: r, ctx: ctx, cancelStep: cancelStep, every: l.span / 3}
	b.timer = time.AfterFunc(b.every, b.run)
	return b.stop
}

// beat is a run's lease renewal (heartbeat).
type beat struct {
	l          *leases
	r          *run
	ctx        context.Context
	cancelStep context.CancelFunc
	every      time.Duration
	timer      *time.Timer

	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc // set once the renewals started
	done    chan struct{}
}

func (b *beat) stop() {
	b.timer.Stop()
	b.mu.Lock()
	b.stopped = true
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run renews the lease now (the first renewal is due) and then every
// b.every, until stop.
func (b *beat) run() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.cancel, b.done = cancel, make(chan struct{})
	b.mu.Unlock()
	defer close(b.done)
	l, r := b.l, b.r
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		t, lost, pending := r.held()
		if lost {
			return
		}
		if pending {
			continue // nothing written yet: no lease to renew
		}
		until := l.now().Add(l.span)
		if err := l.extend(ctx, t.ID, t.Version, until); err != nil {
			if errors.Is(err, store.ErrConflict) {
				r.lose()
				return
			}
			if ctx.Err() == nil {
				l.log.Warn("renew lease", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
			}
			if ctx.Err() == nil && !t.LeaseUntil.IsZero() && l.now().After(t.LeaseUntil) {
				r.lose()
				l.log.Warn("the lease lapsed while the store could not be reached; the step is stopped and left to whoever claims the task",
					slog.String("task", t.ID), slog.Time("leaseUntil", t.LeaseUntil))
				b.cancelStep()
				return
			}
			continue
		}
		r.renewed(t, until)
	}
}

// poll claims runnable tasks whose lease lapsed, for p, until ctx ends:
// runs left by a crashed or stopped node, or work the queue could not
// take. The claim query is indexed on the lease of runnable tasks, so it
// costs O(runnable), not O(paused).
func (l *leases) poll(ctx context.Context, p *pool) {
	tick := time.NewTicker(l.every)
	defer tick.Stop()
	for {
		l.claimLapsed(ctx, p)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (l *leases) claimLapsed(ctx context.Context, p *pool) {
	room := p.room()
	if room <= 0 {
		return
	}
	tasks, err := l.store.ClaimRunnable(ctx, store.ClaimParams{
		Owner: l.node, Now: l.now(), LeaseFor: l.span, Limit: room,
	})
	if err != nil {
		if ctx.Err() == nil {
			l.log.Error("claim runnable tasks", slog.Any("err", err))
		}
		return
	}
	for _, t := range tasks {
		l.rows.drop(t.ID) // the claim moved its version
		l.log.Info("taking over a task whose run lapsed", slog.String("task", t.ID), slog.String("state", string(t.State)))
		l.obs.event(ctx, t.Agent, api.EventLeaseTakeover)
		p.dispatch(&work{task: t})
	}
}
