package askpoint

// Waiters reports how many tasks have live callers waiting on them in this
// process (blocking sends, streams, subscriptions), for tests.
func (s *Server) Waiters() int { return s.broker.size() }
