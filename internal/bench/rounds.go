package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// telemetryRound is one measured window of the interleaved telemetry
// rounds: one server's CPU, round trips and allocations over it.
type telemetryRound struct {
	On         bool // metrics and tracing on
	RoundTrips int
	Errors     int
	Elapsed    time.Duration
	CPU        time.Duration
	Alloc      uint64 // bytes allocated by the server
	Mallocs    uint64
	GCs        uint32 // garbage collections the server ran
	Heap       uint64 // the server's live heap (HeapAlloc) as the window ended
	// Commits and Writes: the SQLite writer's transactions and the writes
	// they held (fewer writes per commit cost more CPU per round trip).
	Commits, Writes int64
}

func (r telemetryRound) cpuPerRT() float64 {
	if r.RoundTrips == 0 {
		return 0
	}
	return r.CPU.Seconds() / float64(r.RoundTrips)
}

// runTelemetryRounds measures askpoint on SQLite with metrics and tracing
// off and on in alternating windows: two servers, one of each, run side by
// side for the whole series, and the load moves from one to the other
// (off, on, off, ..., off: n windows on, n+1 off), so that a load on the
// machine that changes over the run weighs on both alike. Each window is
// preceded by an unmeasured warm-up of its server. With o.ProfileDir, each
// window also writes a CPU profile of its server (rounds-on-NN.cpu.pprof,
// rounds-off-NN.cpu.pprof).
func runTelemetryRounds(ctx context.Context, o Options, dir string, n int) ([]telemetryRound, error) {
	var procs [2]*serverProc
	var loads [2]func(time.Duration) loadResult
	for i, on := range []bool{false, true} {
		r := &KindResult{Kind: KindSQLite, Telemetry: on, exe: o.Exe}
		o.progress("telemetry rounds: starting the %s server", onOff(on))
		p, err := startServer(ctx, r.binary(o), r.serverArgs(o, filepath.Join(dir, r.fileName()+"-rounds.db")), o.Progress)
		if err != nil {
			return nil, err
		}
		defer p.stop()
		c, closeClient, err := newClient(ctx, p.base+"/expense/jsonrpc", a2a.TransportProtocolJSONRPC, o.Callers)
		if err != nil {
			return nil, err
		}
		defer closeClient()
		if _, _, err := roundTrip(ctx, c); err != nil {
			return nil, fmt.Errorf("telemetry rounds, %s: first round trip: %w", onOff(on), err)
		}
		procs[i] = p
		loads[i] = func(d time.Duration) loadResult { return runLoad(ctx, c, o.Callers, d) }
	}
	var out []telemetryRound
	for i := 0; i < 2*n+1; i++ {
		side := i % 2 // 0 off, 1 on
		p, load := procs[side], loads[side]
		if o.Warmup > 0 {
			load(o.Warmup)
		}
		var profiled chan error
		if o.ProfileDir != "" {
			// A CPU profile of each window, to compare the two servers under
			// the same load (go tool pprof merges a side's windows).
			profiled = make(chan error, 1)
			file := filepath.Join(o.ProfileDir, fmt.Sprintf("rounds-%s-%02d.cpu.pprof", onOff(side == 1), i+1))
			go func() {
				profiled <- p.profile(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(o.Duration.Seconds()))), file)
			}()
		}
		w, err := measureWindow(ctx, p, load, o.Duration, nil)
		if profiled != nil {
			if perr := <-profiled; perr != nil && err == nil {
				err = fmt.Errorf("telemetry round %d: cpu profile: %w", i+1, perr)
			}
		}
		if err != nil {
			return nil, err
		}
		s0, s1, res := w.s0, w.s1, w.load
		r := telemetryRound{On: side == 1, RoundTrips: res.roundTrips, Errors: res.errors, Elapsed: res.elapsed,
			CPU: w.CPU, Alloc: s1.TotalAlloc - s0.TotalAlloc, Mallocs: s1.Mallocs - s0.Mallocs,
			GCs: s1.NumGC - s0.NumGC, Heap: s1.HeapAlloc, Commits: s1.Commits - s0.Commits, Writes: s1.Writes - s0.Writes}
		o.progress("telemetry round %d (%s): %d round trips (%d errors), server CPU %v, %.0f µs per round trip",
			i+1, onOff(r.On), r.RoundTrips, r.Errors, r.CPU, r.cpuPerRT()*1e6)
		if res.roundTrips == 0 {
			return nil, fmt.Errorf("telemetry round %d (%s): no round trip succeeded: %v", i+1, onOff(r.On), res.firstErr)
		}
		out = append(out, r)
	}
	return out, nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// telemetryRoundsReport writes the interleaved rounds: each window, each
// "on" window against the mean of the "off" windows either side of it
// (their median), and the sums over all windows.
func telemetryRoundsReport(w io.Writer, o Options, rounds []telemetryRound) {
	if len(rounds) < 3 {
		return
	}
	n := len(rounds) / 2
	fmt.Fprintf(w, "Metrics and tracing on against off, interleaved: askpoint on SQLite, one server with them off and one with them on, side by side; "+
		"the load (%d callers) alternates between them in %d windows of %v (off, on, off, ..., off: %d on, %d off), each after %v of unmeasured warm-up of its server.\n\n",
		o.Callers, len(rounds), o.Duration, n, n+1, o.Warmup)
	fmt.Fprintln(w, "| window | metrics and tracing | round trips | server CPU | CPU per round trip | allocated per round trip | GC cycles | heap at the end | writes per commit |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for i, r := range rounds {
		errs := ""
		if r.Errors > 0 {
			errs = fmt.Sprintf(" (%d failed)", r.Errors)
		}
		fmt.Fprintf(w, "| %d | %s | %s%s | %s | %.0f µs | %s, %s allocs | %d | %s | %s |\n", i+1, onOff(r.On), num(float64(r.RoundTrips)), errs,
			r.CPU.Round(time.Millisecond), r.cpuPerRT()*1e6, bytesSI(float64(r.Alloc)/float64(r.RoundTrips)), num(float64(r.Mallocs)/float64(r.RoundTrips)),
			r.GCs, bytesSI(float64(r.Heap)), perCommit(r.Writes, r.Commits))
	}
	fmt.Fprintln(w)
	var each []string
	var costs []float64
	for i := 1; i < len(rounds); i += 2 {
		off := (rounds[i-1].cpuPerRT() + rounds[i+1].cpuPerRT()) / 2
		c := (rounds[i].cpuPerRT()/off - 1) * 100
		costs = append(costs, c)
		each = append(each, fmt.Sprintf("%+.1f%%", c))
	}
	var sum [2]telemetryRound
	for _, r := range rounds {
		s := &sum[map[bool]int{false: 0, true: 1}[r.On]]
		s.RoundTrips += r.RoundTrips
		s.CPU += r.CPU
		s.Alloc += r.Alloc
		s.Mallocs += r.Mallocs
		s.GCs += r.GCs
		s.Commits += r.Commits
		s.Writes += r.Writes
	}
	offCPU, onCPU := sum[0].cpuPerRT(), sum[1].cpuPerRT()
	offAlloc, onAlloc := float64(sum[0].Alloc)/float64(sum[0].RoundTrips), float64(sum[1].Alloc)/float64(sum[1].RoundTrips)
	offMallocs, onMallocs := float64(sum[0].Mallocs)/float64(sum[0].RoundTrips), float64(sum[1].Mallocs)/float64(sum[1].RoundTrips)
	mean, half := meanCI95(costs)
	fmt.Fprintf(w, "Server CPU per round trip, each on window against the mean of the off windows either side: %s; median %+.1f%%, mean %+.1f%% (95%% confidence interval %+.1f%% to %+.1f%%).\n\n",
		strings.Join(each, ", "), median(costs), mean, mean-half, mean+half)
	fmt.Fprintf(w, "Summed over all windows (server CPU over round trips): on %.0f µs against off %.0f µs per round trip (%+.1f%%); "+
		"allocated per round trip on %s against off %s (%+.1f%%), %s against %s allocations (%+.1f%%).\n\n",
		onCPU*1e6, offCPU*1e6, (onCPU/offCPU-1)*100,
		bytesSI(onAlloc), bytesSI(offAlloc), (onAlloc/offAlloc-1)*100,
		num(onMallocs), num(offMallocs), (onMallocs/offMallocs-1)*100)
	offGC, onGC := float64(sum[0].GCs)/float64(sum[0].RoundTrips)*1000, float64(sum[1].GCs)/float64(sum[1].RoundTrips)*1000
	fmt.Fprintf(w, "Garbage collections per 1,000 round trips: on %.1f against off %.1f; SQLite writes per commit: on %s against off %s.\n\n",
		onGC, offGC, perCommit(sum[1].Writes, sum[1].Commits), perCommit(sum[0].Writes, sum[0].Commits))
}

func perCommit(writes, commits int64) string {
	if commits == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(writes)/float64(commits))
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// meanCI95 is the mean of xs and the half-width of its two-sided 95%
// confidence interval (Student's t, the windows taken as independent
// samples); the half-width is 0 with fewer than two.
func meanCI95(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	return mean, tQuantile975(n-1) * sd / math.Sqrt(float64(n))
}

// tQuantile975 is Student's t distribution's 0.975 quantile for df degrees
// of freedom (from the standard table; 1.96 beyond 30).
func tQuantile975(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	if df >= 1 && df <= len(table) {
		return table[df-1]
	}
	return 1.96
}
