package askpoint

import "context"

// Waiters reports how many tasks have live callers waiting on them in this
// process (blocking sends, streams, subscriptions), for tests.
func (s *Server) Waiters() int { return s.eng.Waiters() }

// SweepNow runs one round of the sweeper (question expiries and
// reminders), for tests that drive the clock.
func (s *Server) SweepNow(ctx context.Context) error { return s.eng.SweepNow(ctx) }

// StepRetries is how many step retries this node scheduled, for tests.
func (s *Server) StepRetries() int64 { return s.eng.StepRetries() }

// TransientRetries is how many times this node tried a request again
// after a transient store failure, for tests.
func (s *Server) TransientRetries() int64 { return s.eng.TransientRetries() }
