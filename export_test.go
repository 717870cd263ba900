package askpoint

import "context"

// Waiters reports how many tasks have live callers waiting on them in this
// process (blocking sends, streams, subscriptions), for tests.
func (s *Server) Waiters() int { return s.eng.Waiters() }

// SweepNow runs one round of the sweeper (question expiries and
// reminders), for tests that drive the clock.
func (s *Server) SweepNow(ctx context.Context) error { return s.eng.SweepNow(ctx) }
