package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/askpoint/askpoint/store"
)

// Push delivery slots are shared fairly (issue 23, finding 6): one
// principal may have at most PushSlotsPerPrincipal deliveries in flight on
// a node, so that a principal with many tasks aimed at a slow receiver
// cannot fill every slot and delay everyone else's notifications and
// relay wake-ups.

// pushShares counts the deliveries in flight per principal.
type pushShares struct {
	mu      sync.Mutex
	running map[string]int
}

func (p *pushShares) take(owner string, limit int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]int{}
	}
	if p.running[owner] >= limit {
		return false
	}
	p.running[owner]++
	return true
}

func (p *pushShares) done(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[owner]--; p.running[owner] <= 0 {
		delete(p.running, owner)
	}
}

// pushShare takes a slot of c's principal's share; when the share is used
// up, c is given back due a little later (not as a failed attempt) and ok
// is false.
func (s *Engine) pushShare(ctx context.Context, c *store.PushConfig) (owner string, ok bool) {
	if t, err := s.store.GetTask(ctx, c.TaskID); err == nil {
		owner = t.Tenant + "\x00" + t.Owner
	}
	if s.shares.take(owner, s.cfg.PushSlotsPerPrincipal) {
		return owner, true
	}
	back := *c
	back.DueAt = time.Now().Add(s.cfg.PushRetryMin)
	s.settlePush(ctx, s.log.With(slog.String("task", c.TaskID), slog.String("pushConfig", c.ID)), &back)
	return "", false
}
