package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Report is one run's results.
type Report struct {
	Opts      Options
	Start     time.Time
	End       time.Time
	LoadStart string
	LoadEnd   string
	Machine   string
	Results   []*KindResult
	// Rounds are the interleaved windows of --telemetry-rounds, in the
	// order run (off, on, ..., off); RoundsErr why they stopped short.
	Rounds    []telemetryRound
	RoundsErr error
	// Order is the table's rounds: each the servers measured in it, as
	// indexes into the measured rows (Results less the skipped ones).
	Order [][]int
}

var rowNames = map[string]string{KindSDK: "(a)", KindSQLite: "(b)", KindSQLiteGRPC: "(b′)", KindSQLiteREST: "(b″)", KindPostgres: "(c)"}

// Markdown writes the report as markdown, ready for docs/BENCHMARKS.md.
func (rep *Report) Markdown(w io.Writer) {
	o := rep.Opts
	fmt.Fprintf(w, "### askpoint bench, %s\n\n", rep.Start.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "Command: `%s` (%s)\n\n", o.CommandLine, rep.End.Sub(rep.Start).Round(time.Second))
	fmt.Fprintf(w, "Machine: %s; load average %s at the start, %s at the end.\n\n", rep.Machine, rep.LoadStart, rep.LoadEnd)
	fmt.Fprintf(w, "Workload: %d concurrent callers, each repeating ask -> answer -> complete "+
		"(the expense agent: receipt -> cost-centre question with a data part -> data answer -> artifact) over JSON-RPC on 127.0.0.1 "+
		"(row (b′): the same server as (b) driven over the gRPC binding, a2a-go's gRPC client on one HTTP/2 connection; "+
		"row (b″): over the HTTP+JSON binding, a2a-go's REST client); "+
		"each server in its own process, the load generator in another. "+
		"%s "+
		"CPU and RSS are the server process's (its own getrusage, or /proc for a binary that does not report it); allocations from the server's runtime.MemStats. "+
		"×(a) is the ratio to row (a): higher is better for round trips, lower for latency, memory and allocations.\n\n",
		o.Callers, rep.orderText())

	var a *KindResult
	for _, r := range rep.Results {
		if r.Kind == KindSDK && r.ok() {
			a = r
		}
	}

	fmt.Fprintln(w, "| | server | round trips/s | round trips per server CPU-second | ask p50 / p99 | answer p50 / p99 | allocated per round trip (server) | resume p50 / p99: answer arrived -> agent resumed | spread over the windows, min-max: round trips per second; per server CPU-second; ×(a) per CPU-second, in the same round |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, r := range rep.Results {
		name := r.Name()
		switch {
		case r.Skipped != "":
			fmt.Fprintf(w, "| %s | %s | %s | | | | | | |\n", name, r.Label, r.Skipped)
			continue
		case r.Err != nil && r.Load.roundTrips == 0:
			fmt.Fprintf(w, "| %s | %s | failed: %s | | | | | | |\n", name, r.Label, oneLine(r.Err.Error()))
			continue
		}
		rt, cpu := r.rtPerSec(), r.rtPerCPU()
		ratio := func(v, av float64) string {
			if a == nil || r == a || av == 0 {
				return ""
			}
			return " (" + times(v/av) + ")"
		}
		var aRT, aCPU, aAlloc, aAskP50, aAnsP50, aResP50 float64
		if a != nil {
			aRT, aCPU, aAlloc = a.rtPerSec(), a.rtPerCPU(), a.AllocPerRT
			aAskP50, aAnsP50 = float64(quantile(a.Load.ask, 0.5)), float64(quantile(a.Load.answer, 0.5))
			aResP50 = float64(a.ResumeP50)
		}
		askP50, ansP50 := quantile(r.Load.ask, 0.5), quantile(r.Load.answer, 0.5)
		resume := ms(r.ResumeP50) + " / " + ms(r.ResumeP99) + ratio(float64(r.ResumeP50), aResP50)
		if r.HasCommit {
			resume += fmt.Sprintf("; from the answer's commit %s / %s", ms(r.CommitP50), ms(r.CommitP99))
		}
		errs := ""
		if r.Load.errors > 0 {
			errs = fmt.Sprintf(" (%d failed round trips: %s)", r.Load.errors, oneLine(fmt.Sprint(r.Load.firstErr)))
		}
		withDB := ""
		if r.DBCPU > 0 {
			both := float64(r.Load.roundTrips) / (r.CPU + r.DBCPU).Seconds()
			withDB = fmt.Sprintf("; %s%s counting PostgreSQL's backends", num(both), ratio(both, aCPU))
		}
		fmt.Fprintf(w, "| %s | %s | %s%s%s | %s%s%s | %s / %s%s | %s / %s%s | %s, %s allocs%s | %s | %s |\n",
			name, r.Label,
			num(rt), ratio(rt, aRT), errs,
			num(cpu), ratio(cpu, aCPU), withDB,
			ms(askP50), ms(quantile(r.Load.ask, 0.99)), ratio(float64(askP50), aAskP50),
			ms(ansP50), ms(quantile(r.Load.answer, 0.99)), ratio(float64(ansP50), aAnsP50),
			bytesSI(r.AllocPerRT), num(r.MallocsPerRT), ratio(r.AllocPerRT, aAlloc),
			resume, spread(r, a))
	}
	fmt.Fprintln(w)
	telemetryCost(w, rep)

	if len(o.Paused) > 0 {
		fmt.Fprintf(w, "Paused tasks: a fresh server process per server; tasks paused in input-required are added in the server's own process "+
			"(askpoint: one task paused through the engine, its row and log copied with new IDs into the store in transactions of 2,000; %s). "+
			"At each level the server first serves one caller for %v (the resume latency column), then runs runtime.GC and debug.FreeOSMemory, then heap, RSS and goroutines are read. "+
			"Heap per paused task is (heap in use - heap in use at 0 paused) / paused.\n\n", sdkSeedText(o.SDKSeed), o.Probe)
		fmt.Fprintln(w, "| | server | paused tasks | heap in use | RSS | goroutines | heap per paused task | resume p50 / p99 at 1 caller: answer arrived -> agent resumed (askpoint: also from the answer's commit) | time to add them |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
		aAt := map[int]*PausedResult{}
		for _, r := range rep.Results {
			if r.Kind == KindSDK {
				for _, p := range r.Paused {
					aAt[p.Level] = p
				}
			}
		}
		for _, r := range rep.Results {
			name := r.Name()
			if r.Skipped != "" {
				continue
			}
			if len(r.Paused) == 0 {
				if r.Err != nil {
					fmt.Fprintf(w, "| %s | %s | failed: %s | | | | | | |\n", name, r.Label, oneLine(r.Err.Error()))
				}
				continue
			}
			base := r.Paused[0]
			for _, p := range r.Paused {
				if p.Skipped != "" {
					fmt.Fprintf(w, "| %s | %s | %s | %s | | | | | |\n", name, r.Label, num(float64(p.Level)), p.Skipped)
					continue
				}
				ap := aAt[p.Level]
				rat := func(v, av float64) string {
					if r.Kind == KindSDK || ap == nil || av == 0 {
						return ""
					}
					return " (" + times(v/av) + ")"
				}
				perTask := "-"
				if p.Level > 0 {
					perTask = bytesSI((float64(p.HeapInuse) - float64(base.HeapInuse)) / float64(p.Level))
				}
				if p.ExtrapolatedFrom > 0 {
					fmt.Fprintf(w, "| %s | %s | %s | ~%s (extrapolated from %s) | ~%s (extrapolated) | ~%d (extrapolated) | %s | not measured | |\n",
						name, r.Label, num(float64(p.Level)), bytesIEC(float64(p.HeapInuse)), num(float64(p.ExtrapolatedFrom)),
						bytesIEC(float64(p.RSS)), p.Goroutines, perTask)
					continue
				}
				seed := ""
				if p.Level > 0 {
					seed = fmt.Sprintf("%.1f s", p.SeedSeconds)
				}
				var aHeap, aRSS, aG float64
				if ap != nil {
					aHeap, aRSS, aG = float64(ap.HeapInuse), float64(ap.RSS), float64(ap.Goroutines)
				}
				resume := ms(p.ResumeP50) + " / " + ms(p.ResumeP99)
				if p.CommitP50 > 0 {
					resume += "; from the commit " + ms(p.CommitP50) + " / " + ms(p.CommitP99)
				}
				fmt.Fprintf(w, "| %s | %s | %s | %s%s | %s%s | %d%s | %s | %s | %s |\n",
					name, r.Label, num(float64(p.Level)),
					bytesIEC(float64(p.HeapInuse)), rat(float64(p.HeapInuse), aHeap),
					bytesIEC(float64(p.RSS)), rat(float64(p.RSS), aRSS),
					p.Goroutines, rat(float64(p.Goroutines), aG),
					perTask, resume, seed)
			}
		}
		fmt.Fprintln(w)
	}
	for _, r := range rep.Results {
		if len(r.StoreCalls) == 0 {
			continue
		}
		var parts []string
		var reads, writes float64
		for _, k := range []string{"CreateTask", "UpdateTask", "ExtendLease", "ClaimRunnable", "PutPushConfig", "DeletePushConfig", "ClaimPushDeliveries", "SettlePush",
			"GetTask", "TaskByRequestKey", "LoadTask", "History", "ReadLog", "ListTasks", "DueTasks", "NextDue", "GetPushConfig", "ListPushConfigs"} {
			v := r.StoreCalls[k]
			if v == 0 {
				continue
			}
			switch k {
			case "CreateTask", "UpdateTask", "ExtendLease", "ClaimRunnable", "PutPushConfig", "DeletePushConfig", "ClaimPushDeliveries", "SettlePush":
				writes += v
			default:
				reads += v
			}
			parts = append(parts, fmt.Sprintf("%s %.1f", k, v))
		}
		commits := ""
		if r.CommitsPerRT > 0 {
			commits = fmt.Sprintf("; %.2f SQLite commits per round trip, %.1f writes per commit", r.CommitsPerRT, r.WritesPerCommit)
		}
		fmt.Fprintf(w, "Store calls per round trip, %s: %.1f writes and %.1f reads (%s)%s.\n\n", r.Name(), writes, reads, strings.Join(parts, ", "), commits)
	}
	fmt.Fprintln(w, "Sweep cost (question expiry, reminders): measured by BenchmarkDueTasks in store/sqlite and store/postgres (1,000 due among 1,000 and 1,000,000 paused); see docs/BENCHMARKS.md.")
	for _, r := range rep.Results {
		if r.Err != nil {
			fmt.Fprintf(w, "\n%s %s: error: %s\n", r.Name(), r.Kind, oneLine(r.Err.Error()))
		}
	}
}

func sdkSeedText(mode string) string {
	if mode == "handler" {
		return "the SDK: every task paused through its handler (SendMessage in process)"
	}
	return "the SDK: one task paused through its handler, copied with new IDs into the handler's in-memory task store with Create; " +
		"pausing every task through the handler (--sdk-seed handler) measured ~10% more heap per task, from fragmentation"
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// times formats a ratio: 12×, 3.4×, 0.52×, 0.031×.
func times(f float64) string {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return "-"
	case f >= 100:
		return strconv.FormatFloat(math.Round(f), 'f', 0, 64) + "×"
	case f >= 10:
		return strconv.FormatFloat(f, 'f', 1, 64) + "×"
	default:
		return strconv.FormatFloat(f, 'g', 2, 64) + "×"
	}
}

// num formats a count or rate with thousands separators.
func num(f float64) string {
	if f < 10 && f != math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	s := strconv.FormatInt(int64(math.Round(f)), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f == 0:
		return "-"
	case f < 1:
		return strconv.FormatFloat(f, 'f', 2, 64) + " ms"
	case f < 100:
		return strconv.FormatFloat(f, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(f, 'f', 0, 64) + " ms"
	}
}

// bytesSI formats a byte count in KB/MB (10^3) for per-operation figures.
func bytesSI(f float64) string {
	switch {
	case f < 1000:
		return strconv.FormatFloat(f, 'f', 0, 64) + " B"
	case f < 1e6:
		return strconv.FormatFloat(f/1e3, 'f', 1, 64) + " KB"
	default:
		return strconv.FormatFloat(f/1e6, 'f', 2, 64) + " MB"
	}
}

// bytesIEC formats a memory size in MiB/GiB.
func bytesIEC(f float64) string {
	switch {
	case f < 1<<30:
		return strconv.FormatFloat(f/(1<<20), 'f', 1, 64) + " MiB"
	default:
		return strconv.FormatFloat(f/(1<<30), 'f', 2, 64) + " GiB"
	}
}

// orderText says how the table's servers shared the load: the rounds,
// their order, and whether it was balanced.
func (rep *Report) orderText() string {
	o := rep.Opts
	var rows []*KindResult
	for _, r := range rep.Results {
		if r.Skipped == "" {
			rows = append(rows, r)
		}
	}
	if len(rep.Order) == 0 || len(rows) == 0 {
		return fmt.Sprintf("No server was measured (%v each was asked for).", o.Duration)
	}
	n, k := len(rep.Order[0]), len(rep.Order)
	var b strings.Builder
	fmt.Fprintf(&b, "Every server runs for the whole measurement; each is warmed up once (%v), then the load moves from one to the next in %d rounds, "+
		"each giving every server a window of %v (%v per server in all; a row is the sum of its windows), in an order that rotates by one every two rounds, the second of each two reversed:",
		o.Warmup, k, (o.Duration / time.Duration(k)).Round(time.Millisecond), o.Duration)
	for i, round := range rep.Order {
		sep := "; "
		if i == 0 {
			sep = " "
		}
		var names []string
		for _, j := range round {
			if j < len(rows) {
				names = append(names, rows[j].Name())
			}
		}
		fmt.Fprintf(&b, "%sround %d %s", sep, i+1, strings.Join(names, " "))
	}
	b.WriteString(".")
	dense := map[int]int{} // row index -> its server's index in the rounds
	for _, j := range rep.Order[0] {
		dense[j] = len(dense)
	}
	order := make([][]int, k)
	for i, round := range rep.Order {
		for _, j := range round {
			order[i] = append(order[i], dense[j])
		}
	}
	if balanced(order, n) {
		fmt.Fprintf(&b, " Every server held each place in the order in %d of the %d rounds (first in %d, last in %d).", k/n, k, k/n, k/n)
	} else {
		fmt.Fprintf(&b, " The order is not balanced (%d rounds for %d servers): not every server was first and last equally often; a multiple of %d rounds balances it.", k, n, defaultRounds(n))
	}
	return b.String()
}

// spread is r's windows' lowest and highest round trips per second and
// per server CPU-second, and, against a, the lowest and highest ratio of two windows
// of the same round.
func spread(r, a *KindResult) string {
	if len(r.Windows) < 2 {
		return ""
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	slo, shi := math.Inf(1), math.Inf(-1)
	for _, w := range r.Windows {
		lo, hi = math.Min(lo, w.rtPerCPU()), math.Max(hi, w.rtPerCPU())
		slo, shi = math.Min(slo, w.rtPerSec()), math.Max(shi, w.rtPerSec())
	}
	out := num(slo) + "-" + num(shi) + " /s; " + num(lo) + "-" + num(hi) + " per CPU-second"
	if a == nil || a == r {
		return out
	}
	rlo, rhi := math.Inf(1), math.Inf(-1)
	for _, w := range r.Windows {
		for _, aw := range a.Windows {
			if aw.Round == w.Round && aw.rtPerCPU() > 0 {
				f := w.rtPerCPU() / aw.rtPerCPU()
				rlo, rhi = math.Min(rlo, f), math.Max(rhi, f)
			}
		}
	}
	if !math.IsInf(rlo, 1) {
		out += "; " + times(rlo) + "-" + times(rhi)
	}
	return out
}

// telemetryCost says, for each server measured with metrics and tracing
// on, how much more server CPU a round trip cost than with them off in the
// table's two rows, then the interleaved rounds.
func telemetryCost(w io.Writer, rep *Report) {
	for _, on := range rep.Results {
		if !on.Telemetry || !on.ok() {
			continue
		}
		for _, off := range rep.Results {
			if off.Kind != on.Kind || off.Telemetry || off.Before || !off.ok() {
				continue
			}
			offCPU, onCPU := 1/off.rtPerCPU(), 1/on.rtPerCPU()
			fmt.Fprintf(w, "Metrics and tracing on, %s vs %s (the table's rows, measured in the same rounds): server CPU per round trip %.0f against %.0f µs (%+.1f%%).\n\n",
				on.Name(), off.Name(), onCPU*1e6, offCPU*1e6, (onCPU/offCPU-1)*100)
		}
	}
	telemetryRoundsReport(w, rep.Opts, rep.Rounds)
	if rep.RoundsErr != nil {
		fmt.Fprintf(w, "The interleaved rounds stopped: %s.\n\n", oneLine(rep.RoundsErr.Error()))
	}
}
