package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// The table's throughput figures. Every server of the table is started
// first and runs for the whole measurement; each is warmed up once; then
// the load moves from one server to the next in rounds, each round giving
// every server one window of Duration/rounds in the order schedule gives
// (rotated, and reversed every other round), and a row is the sum of its
// server's windows. A server run first, or after a given other, or while
// the machine is busier, is no longer always the same one.

// window is one server's share of the load in one round.
type window struct {
	Round, Position int // 0-based
	load            loadResult
	CPU, DBCPU      time.Duration
	s0, s1          Stats
	// dbErr: the backends' CPU could not be read (DBCPU is 0).
	dbErr error
}

func (w window) rtPerSec() float64 {
	if w.load.elapsed <= 0 {
		return 0
	}
	return float64(w.load.roundTrips) / w.load.elapsed.Seconds()
}

func (w window) rtPerCPU() float64 {
	if w.CPU <= 0 {
		return 0
	}
	return float64(w.load.roundTrips) / w.CPU.Seconds()
}

// measureWindow puts the load on p for d and reads what p (and, with
// backends, its PostgreSQL backends) spent on it. The server's CPU comes
// from the server itself (getrusage, to the microsecond) when it says, else
// from /proc in clock ticks (a binary from before it said).
func measureWindow(ctx context.Context, p *serverProc, load func(time.Duration) loadResult, d time.Duration, backends []int) (window, error) {
	var w window
	var err error
	if w.s0, err = p.counters(ctx); err != nil {
		return w, err
	}
	cpu0, err := p.cpu()
	if err != nil {
		return w, err
	}
	var db0 time.Duration
	if len(backends) > 0 {
		db0, w.dbErr = backendCPU(backends)
	}
	w.load = load(d)
	cpu1, err := p.cpu()
	if err != nil {
		return w, err
	}
	if len(backends) > 0 && w.dbErr == nil {
		var db1 time.Duration
		if db1, w.dbErr = backendCPU(backends); w.dbErr == nil {
			w.DBCPU = db1 - db0
		}
	}
	if w.s1, err = p.counters(ctx); err != nil {
		return w, err
	}
	w.CPU = cpu1 - cpu0
	if w.s0.CPUNanos > 0 && w.s1.CPUNanos > 0 {
		w.CPU = time.Duration(w.s1.CPUNanos - w.s0.CPUNanos)
	}
	return w, ctx.Err()
}

// tableServer is one row's server while the table is measured.
type tableServer struct {
	r        *KindResult
	p        *serverProc
	pg       *pgScratch
	load     func(time.Duration) loadResult
	close    func()
	backends []int // PostgreSQL's, when their CPU is counted
}

// runTable measures the rows' round trips, interleaved (see above), and
// returns the order the rounds ran in (indexes into rows). A row whose
// server fails gets its Err and leaves the rounds (one that did not start
// is in none); the error returned is ctx's only.
func runTable(ctx context.Context, o Options, dir string, rows []*KindResult) ([][]int, error) {
	var servers []*tableServer
	var rowOf []int // servers[i] is rows[rowOf[i]]
	defer func() {
		for _, s := range servers {
			s.stop(ctx, o)
		}
	}()
	for i, r := range rows {
		s, err := startTableServer(ctx, o, dir, r)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.Err = err
			o.progress("%s: %v", r.Name(), err)
			continue
		}
		servers = append(servers, s)
		rowOf = append(rowOf, i)
	}
	if len(servers) == 0 {
		return nil, nil
	}
	if o.Warmup > 0 {
		for _, s := range servers {
			o.progress("%s: warm-up, %d callers for %v", s.r.Name(), o.Callers, o.Warmup)
			s.load(o.Warmup)
		}
	}
	for _, s := range servers {
		// The resume latencies are the measured windows' alone.
		if _, err := s.p.stats(ctx, true); err != nil {
			s.fail(ctx, o, err)
		}
		if s.pg != nil {
			var err error
			if s.backends, err = s.pg.backends(ctx); err != nil {
				o.progress("%s: PostgreSQL's CPU will not be counted: %v", s.r.Name(), err)
			}
		}
	}
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = defaultRounds(len(servers))
	}
	d := o.Duration / time.Duration(rounds)
	order := schedule(len(servers), rounds)
	o.progress("measuring: %d rounds of a %v window per server, %d callers", rounds, d, o.Callers)
	for round, seq := range order {
		for pos, i := range seq {
			s := servers[i]
			if s.p == nil {
				continue // failed in an earlier round
			}
			w, err := measureWindow(ctx, s.p, s.load, d, s.backends)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err == nil && w.load.roundTrips == 0 {
				err = fmt.Errorf("round %d: no round trip succeeded: %v", round+1, w.load.firstErr)
			}
			if err != nil {
				s.fail(ctx, o, err)
				continue
			}
			if w.dbErr != nil {
				// A backend went away (the pool closed it): PostgreSQL's CPU
				// is counted in no window, the server's still is.
				o.progress("%s: PostgreSQL's CPU will not be counted: %v", s.r.Name(), w.dbErr)
				s.backends, w.DBCPU = nil, 0
				for j := range s.r.Windows {
					s.r.Windows[j].DBCPU = 0
				}
			}
			w.Round, w.Position = round, pos
			s.r.Windows = append(s.r.Windows, w)
			o.progress("round %d, %s: %d round trips in %v (%d errors), server CPU %v", round+1, s.r.Name(),
				w.load.roundTrips, w.load.elapsed.Round(time.Millisecond), w.load.errors, w.CPU.Round(time.Millisecond))
		}
	}
	for _, s := range servers {
		if s.p == nil {
			continue
		}
		if err := s.finish(ctx, o); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.fail(ctx, o, err)
		}
	}
	for _, seq := range order {
		for pos, i := range seq {
			seq[pos] = rowOf[i]
		}
	}
	return order, nil
}

func startTableServer(ctx context.Context, o Options, dir string, r *KindResult) (*tableServer, error) {
	db, pg, err := serverDB(o, dir, r, "load")
	if err != nil {
		return nil, err
	}
	s := &tableServer{r: r, pg: pg}
	o.progress("%s: starting the server", r.Name())
	if s.p, err = startServer(ctx, r.binary(o), r.serverArgs(o, db), o.Progress); err != nil {
		dropScratch(ctx, o, r, pg)
		return nil, err
	}
	var c *a2aclient.Client
	var closeClient func()
	switch r.Kind {
	case KindSQLiteGRPC:
		c, closeClient, err = newGRPCClient(ctx, s.p.base)
	case KindSQLiteREST:
		c, closeClient, err = newClient(ctx, s.p.base+"/expense/rest", a2a.TransportProtocolHTTPJSON, o.Callers)
	default:
		c, closeClient, err = newClient(ctx, s.p.base+"/expense/jsonrpc", a2a.TransportProtocolJSONRPC, o.Callers)
	}
	if err != nil {
		s.stop(ctx, o)
		return nil, err
	}
	s.close = closeClient
	s.load = func(d time.Duration) loadResult { return runLoad(ctx, c, o.Callers, d) }
	if _, _, err := roundTrip(ctx, c); err != nil {
		s.stop(ctx, o)
		return nil, fmt.Errorf("first round trip: %w", err)
	}
	return s, nil
}

// fail records err on the row and stops its server.
func (s *tableServer) fail(ctx context.Context, o Options, err error) {
	s.r.Err = err
	o.progress("%s: %v", s.r.Name(), err)
	s.stop(ctx, o)
}

// stop stops the server and drops its database (once).
func (s *tableServer) stop(ctx context.Context, o Options) {
	if s.close != nil {
		s.close()
		s.close = nil
	}
	if s.p != nil {
		s.p.stop()
		s.p = nil
	}
	dropScratch(ctx, o, s.r, s.pg)
	s.pg = nil
}

// finish sums the row's windows into its figures, reads what the server
// kept over all of them (resume latencies, RSS, goroutines) and, with
// o.ProfileDir, profiles it in an extra, unmeasured run.
func (s *tableServer) finish(ctx context.Context, o Options) error {
	r := s.r
	r.sumWindows()
	last, err := s.p.stats(ctx, true)
	if err != nil {
		return err
	}
	r.ResumeP50, r.ResumeP99 = time.Duration(last.ResumeP50), time.Duration(last.ResumeP99)
	r.CommitP50, r.CommitP99 = time.Duration(last.CommitP50), time.Duration(last.CommitP99)
	r.HasCommit = last.CommitCount > 0
	if rss, err := s.p.rss(); err == nil {
		r.LoadRSS = rss
	}
	r.LoadGoroutines = last.Goroutines
	o.progress("%s: %d round trips in %d windows (%d errors), server CPU %v", r.Name(), r.Load.roundTrips, len(r.Windows), r.Load.errors, r.CPU)
	if o.ProfileDir == "" {
		return nil
	}
	o.progress("%s: profiling (an extra %v run, not measured)", r.Name(), o.Duration)
	secs := max(1, int(o.Duration.Seconds()))
	errc := make(chan error, 1)
	go func() {
		errc <- s.p.profile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), filepath.Join(o.ProfileDir, r.fileName()+".cpu.pprof"))
	}()
	time.Sleep(100 * time.Millisecond)
	s.load(time.Duration(secs)*time.Second + 500*time.Millisecond)
	if err := <-errc; err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	if err := s.p.profile(ctx, "/debug/pprof/allocs", filepath.Join(o.ProfileDir, r.fileName()+".allocs.pprof")); err != nil {
		return fmt.Errorf("alloc profile: %w", err)
	}
	return nil
}

// sumWindows makes r's figures the sums of its windows.
func (r *KindResult) sumWindows() {
	r.Load, r.CPU, r.DBCPU = loadResult{}, 0, 0
	var alloc, mallocs uint64
	var commits, writes int64
	calls := map[string]int64{}
	for _, w := range r.Windows {
		r.Load.roundTrips += w.load.roundTrips
		r.Load.errors += w.load.errors
		if r.Load.firstErr == nil {
			r.Load.firstErr = w.load.firstErr
		}
		r.Load.elapsed += w.load.elapsed
		r.Load.ask = append(r.Load.ask, w.load.ask...)
		r.Load.answer = append(r.Load.answer, w.load.answer...)
		r.CPU += w.CPU
		r.DBCPU += w.DBCPU
		alloc += w.s1.TotalAlloc - w.s0.TotalAlloc
		mallocs += w.s1.Mallocs - w.s0.Mallocs
		commits += w.s1.Commits - w.s0.Commits
		writes += w.s1.Writes - w.s0.Writes
		for k, v := range w.s1.StoreCalls {
			calls[k] += v - w.s0.StoreCalls[k]
		}
	}
	n := float64(r.Load.roundTrips)
	if n == 0 {
		return
	}
	r.AllocPerRT, r.MallocsPerRT = float64(alloc)/n, float64(mallocs)/n
	if commits > 0 {
		r.CommitsPerRT, r.WritesPerCommit = float64(commits)/n, float64(writes)/float64(commits)
	}
	if len(calls) > 0 {
		r.StoreCalls = map[string]float64{}
		for k, v := range calls {
			if v > 0 {
				r.StoreCalls[k] = float64(v) / n
			}
		}
	}
}
