package apitest

import (
	"sync"
	"testing"
	"time"
)

// FakeClock is a server's clock in tests (askpoint.Config.Now): time moves
// only when the test says so. The server's timer loops still poll in real
// time, so an action due at the fake "now" happens within a poll interval
// of the move.
type FakeClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewFakeClock returns a clock that reads start until advanced.
func NewFakeClock(start time.Time) *FakeClock { return &FakeClock{now: start} }

// Now is the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Eventually polls cond every 5ms until it holds, and fails the test when it
// does not within the given real time. It is for conditions that announce
// themselves by no event (a row another process writes, a goroutine's end);
// wait on a channel where there is one.
func Eventually(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(within)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			if cond() {
				return
			}
			t.Fatalf("%s: not within %v", what, within)
		}
	}
}
