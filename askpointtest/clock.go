package askpointtest

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Clock is a clock a test moves: the clock of the servers given it
// (Options.Clock), and of anything else handed Clock.Now (an agent's own
// clock, a relay's Config.Now), so that question expiries, reminders, hold
// deadlines and the agent's own times agree. It stands still between
// Advances.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	servers []*core
}

// NewClock is a clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward and returns when the servers on it
// have acted on everything due by then: questions expired (ended, or
// resumed with their default answer), reminders pushed, holds released,
// and the steps and push deliveries these started finished. It first waits
// for what the servers had in hand, so that nothing under way sees the
// clock jump. The test fails if the servers do not settle by its deadline.
// (A step's retry is due on this clock too: it runs once the clock passes
// it, on the server's next look for due work.)
func (c *Clock) Advance(t testing.TB, d time.Duration) {
	t.Helper()
	c.idle(t)
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	c.idle(t)
}

func (c *Clock) idle(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	servers := slices.Clone(c.servers)
	c.mu.Unlock()
	ctx, cancel := waitContext(t)
	defer cancel()
	for _, s := range servers {
		if err := s.eng.Idle(ctx); err != nil {
			t.Fatalf("askpointtest: the server at %s did not settle after the clock moved to %s: %v", s.ln.Addr(), c.Now().Format(time.RFC3339), err)
		}
	}
}

func (c *Clock) attach(s *core) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.servers = append(c.servers, s)
}

func (c *Clock) detach(s *core) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.servers = slices.DeleteFunc(c.servers, func(o *core) bool { return o == s })
}

// Clock is the server's clock (Options.Clock), nil on the real clock.
func (e *Env) Clock() *Clock { return e.opts.Clock }
