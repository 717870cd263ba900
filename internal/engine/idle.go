package engine

import (
	"context"
	"sync"
)

// Idle lets a caller (a test, an operator's drain) wait for what this node
// has in hand to be done, on signals rather than on time.

// activity counts work in hand on this node: queued and running steps,
// push deliveries under way.
type activity struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed while n == 0
}

func newActivity() *activity {
	z := make(chan struct{})
	close(z)
	return &activity{zero: z}
}

func (a *activity) add(d int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	was := a.n
	a.n += d
	switch {
	case was == 0 && a.n > 0:
		a.zero = make(chan struct{})
	case was > 0 && a.n <= 0:
		a.n = 0
		close(a.zero)
	}
}

func (a *activity) idle() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.zero
}

// rounds lets a waiter see a timer loop finish a round.
type rounds struct {
	mu   sync.Mutex
	n    uint64
	done chan struct{} // closed and replaced when a round ends
}

func (r *rounds) ended() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.done != nil {
		close(r.done)
	}
	r.done = make(chan struct{})
}

// after returns the rounds ended so far and a channel closed when the next
// one ends.
func (r *rounds) after() (uint64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done == nil {
		r.done = make(chan struct{})
	}
	return r.n, r.done
}

// Idle waits until this node has nothing in hand: every timer loop has
// finished a round it began after the call (so what was due then has been
// acted on), and no step is queued or running and no push delivery is
// under way. Work another node or a later timer starts is not waited for.
// It returns ctx's error if ctx ends first.
func (s *Engine) Idle(ctx context.Context) error {
	// Twice: a timer round may start a step, and a step may set a timer
	// due at once.
	for range 2 {
		for _, l := range []*timerLoop{s.sweeper, s.releaser.timer(), s.outbox.timer()} {
			if l == s.sweeper && s.cfg.DisableSweeper {
				continue
			}
			// Two rounds ended: the one under way may have begun before
			// the call.
			for range 2 {
				next := l.nextRound()
				l.kick()
				select {
				case <-next:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		}
		select {
		case <-s.act.idle():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
