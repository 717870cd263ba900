package bench

import (
	"bytes"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The bench command starts its servers by running its own binary as
// `askpoint bench server ...`. Under `go test` that binary is the test
// binary, so TestMain plays the server when asked to.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == "server" {
		os.Exit(Main(os.Args[2:], os.Stdout, os.Stderr))
	}
	// The tests fail when a goroutine they started still runs after the
	// last of them.
	goleak.VerifyTestMain(m)
}

// runBench runs the bench command with args and requires it to exit 0; it
// returns what it printed.
func runBench(t *testing.T, args ...string) (out, errs string) {
	t.Helper()
	var o, e bytes.Buffer
	if code := Main(args, &o, &e); code != 0 {
		t.Fatalf("askpoint bench %s = exit %d\nstderr:\n%s", strings.Join(args, " "), code, e.String())
	}
	return o.String(), e.String()
}

// wantOutput requires the bench's output to contain each of wants.
func wantOutput(t *testing.T, out, errs string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\noutput:\n%s\nstderr:\n%s", want, out, errs)
		}
	}
}

func TestBenchPrintsTheTableForSDKAndSQLite(t *testing.T) {
	got, errs := runBench(t, "--duration", "1s", "--callers", "2", "--warmup", "0s", "--probe", "300ms", "--paused", "1000", "--pg", "")
	wantOutput(t, got, errs,
		"### askpoint bench, ",
		"Command: `askpoint bench --duration 1s --callers 2 --warmup 0s --probe 300ms --paused 1000 --pg ''`",
		"cores (GOMAXPROCS",
		"| (a) | a2a-go v2.4.0 default handler (in-memory store) | ",
		"| (b) | askpoint, SQLite (WAL, synchronous=FULL) | ",
		"| (b′) | askpoint, SQLite, over gRPC (one HTTP/2 connection) | ",
		"| (c) | askpoint, PostgreSQL | not configured",
		"| (a) | a2a-go v2.4.0 default handler (in-memory store) | 1,000 | ",
		"| (b) | askpoint, SQLite (WAL, synchronous=FULL) | 1,000 | ",
		"Store calls per round trip, (b): ",
		// Three servers, measured in turn in six rounds of 1s/6.
		"in 6 rounds, each giving every server a window of 167ms (1s per server in all",
		"round 1 (a) (b) (b′); round 2 (b′) (b) (a); round 3 (b) (b′) (a);",
		"(first in 2, last in 2)",
		"Sweep cost (question expiry, reminders): measured by BenchmarkDueTasks",
	)
	if strings.Contains(got, "failed") || strings.Contains(got, "error:") {
		t.Errorf("output reports a failure:\n%s\nstderr:\n%s", got, errs)
	}
	// Row (b) carries its ratios to (a).
	for line := range strings.SplitSeq(got, "\n") {
		if strings.HasPrefix(line, "| (b) | askpoint, SQLite (WAL, synchronous=FULL) | ") && !strings.Contains(line, "×)") && !strings.Contains(line, "| 1,000 |") && !strings.Contains(line, "| 0 |") {
			t.Errorf("row (b) has no ratio to (a): %s", line)
		}
		// Its spread: per second, per CPU-second, and the ratio to (a) in each round.
		if strings.HasPrefix(line, "| (b) | askpoint, SQLite (WAL, synchronous=FULL) | ") && !strings.Contains(line, "| 1,000 |") && !strings.Contains(line, "| 0 |") &&
			!regexp.MustCompile(`\| [0-9,.]+-[0-9,.]+ /s; [0-9,.]+-[0-9,.]+ per CPU-second; [0-9.]+×-[0-9.]+× \|$`).MatchString(line) {
			t.Errorf("row (b) has no spread over its windows: %s", line)
		}
	}
}

func TestBenchPostgres(t *testing.T) {
	u := os.Getenv("TEST_DATABASE_URL")
	if u == "" {
		t.Skip("needs PostgreSQL: set TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)")
	}
	out, errs := runBench(t, "--servers", "postgres", "--duration", "1s", "--callers", "2", "--warmup", "0s", "--probe", "300ms", "--paused", "500", "--pg", u)
	wantOutput(t, out, errs, "| (c) | askpoint, PostgreSQL | ", "| (c) | askpoint, PostgreSQL | 500 | ")
}

func TestBenchTelemetryAlternatesOffAndOnWindows(t *testing.T) {
	got, errs := runBench(t, "--servers", "sqlite", "--paused", "", "--telemetry", "--telemetry-rounds", "2", "--duration", "300ms", "--callers", "2", "--warmup", "0s", "--probe", "100ms", "--pg", "")
	wantOutput(t, got, errs,
		"| (bT) | askpoint, SQLite (WAL, synchronous=FULL), metrics and tracing on | ",
		"in 5 windows of 300ms (off, on, off, ..., off: 2 on, 3 off)",
		"| 1 | off | ", "| 2 | on | ", "| 3 | off | ", "| 4 | on | ", "| 5 | off | ",
		"each on window against the mean of the off windows either side: ", "95% confidence interval",
		"Summed over all windows (server CPU over round trips): on ",
		"allocated per round trip on ",
	)
	if strings.Contains(got, "\n| 6 | ") || strings.Contains(got, "stopped") { // a sixth window row, not a cell that holds 6
		t.Errorf("output has more windows than 2 on and 3 off, or stopped short:\n%s", got)
	}
}

func TestBenchFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--paused", "100,10"},
		{"--paused", "x"},
		{"--callers", "0"},
		{"--rounds", "-1"},
		{"--sdk-seed", "other"},
		{"extra"},
	} {
		var out, errs bytes.Buffer
		if code := Main(args, &out, &errs); code != 2 {
			t.Errorf("askpoint bench %v = exit %d, want 2 (stderr %q)", args, code, errs.String())
		}
	}
}

func TestHelpers(t *testing.T) {
	if got, err := parseLevels("100_000, 1000000"); err != nil || len(got) != 2 || got[0] != 100000 || got[1] != 1000000 {
		t.Errorf("parseLevels = %v, %v", got, err)
	}
	if got, err := parseLevels(""); err != nil || got != nil {
		t.Errorf(`parseLevels("") = %v, %v, want none`, got, err)
	}
	for f, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.4: "1,234,567", 2.5: "2.5"} {
		if got := num(f); got != want {
			t.Errorf("num(%v) = %q, want %q", f, got, want)
		}
	}
	for f, want := range map[float64]string{123.4: "123×", 12.34: "12.3×", 1.234: "1.2×", 0.0123: "0.012×"} {
		if got := times(f); got != want {
			t.Errorf("times(%v) = %q, want %q", f, got, want)
		}
	}
	if m, h := meanCI95([]float64{1, 2, 3}); m != 2 || math.Abs(h-4.303/math.Sqrt(3)) > 1e-9 {
		t.Errorf("meanCI95(1, 2, 3) = %v ± %v, want 2 ± %v", m, h, 4.303/math.Sqrt(3))
	}
	if m, h := meanCI95([]float64{4}); m != 4 || h != 0 {
		t.Errorf("meanCI95(4) = %v ± %v, want 4 ± 0", m, h)
	}
	ds := []time.Duration{5, 1, 4, 2, 3}
	if q := quantile(ds, 0.5); q != 3 {
		t.Errorf("quantile(p50) = %v, want 3", q)
	}
	if q := quantile(ds, 0.99); q != 5 {
		t.Errorf("quantile(p99) = %v, want 5", q)
	}
	if got := commandLine([]string{"--pg", "", "--x", "a b", "postgres://u@h:5432/db?sslmode=disable", "it's"}); got != `askpoint bench --pg '' --x 'a b' 'postgres://u@h:5432/db?sslmode=disable' 'it'\''s'` {
		t.Errorf("commandLine = %s", got)
	}
}

// TestScheduleIsBalanced: over 2n rounds every one of n servers is first
// twice, last twice and in every other place twice; each round runs every
// server once; in each pair of rounds every server's two windows have the
// same mean place (so a steady drift of the machine's load over the pair
// weighs on all alike).
func TestScheduleIsBalanced(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for _, rounds := range []int{defaultRounds(n), 2 * defaultRounds(n)} {
			order := schedule(n, rounds)
			if len(order) != rounds {
				t.Fatalf("schedule(%d, %d) has %d rounds", n, rounds, len(order))
			}
			first, last := make([]int, n), make([]int, n)
			for r, round := range order {
				seen := map[int]bool{}
				for _, s := range round {
					if s < 0 || s >= n || seen[s] {
						t.Fatalf("schedule(%d, %d) round %d = %v: not every server once", n, rounds, r+1, round)
					}
					seen[s] = true
				}
				if len(round) != n {
					t.Fatalf("schedule(%d, %d) round %d = %v: not every server once", n, rounds, r+1, round)
				}
				first[round[0]]++
				last[round[n-1]]++
			}
			for s := range n {
				if want := rounds / n; first[s] != want || last[s] != want {
					t.Errorf("schedule(%d, %d): server %d first in %d rounds and last in %d, want %d each", n, rounds, s, first[s], last[s], want)
				}
			}
			if !balanced(order, n) {
				t.Errorf("balanced(schedule(%d, %d)) = false", n, rounds)
			}
			for p := 0; p+1 < rounds; p += 2 {
				place := make([]int, n) // summed over the pair
				for i, s := range order[p] {
					place[s] += i
				}
				for i, s := range order[p+1] {
					place[s] += i
				}
				for s := range n {
					if place[s] != n-1 {
						t.Errorf("schedule(%d, %d), rounds %d-%d: server %d at places summing to %d, want %d", n, rounds, p+1, p+2, s, place[s], n-1)
					}
				}
			}
		}
	}
	if got := schedule(2, 4); !slices.Equal(slices.Concat(got...), []int{0, 1, 1, 0, 1, 0, 0, 1}) {
		t.Errorf("schedule(2, 4) = %v, want ABBA BAAB", got)
	}
	// Too few rounds to balance three servers: said so.
	if balanced(schedule(3, 2), 3) {
		t.Error("balanced(schedule(3, 2)) = true: (b) cannot have been first")
	}
}

// TestBenchInterleavesTheTable runs two servers of this binary, one as
// --compare, in four rounds: both rows are each measured in four windows,
// first and last in two rounds each, and the report says the order.
func TestBenchInterleavesTheTable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Options{
		Callers: 2, Duration: 800 * time.Millisecond, Rounds: 4, Warmup: 100 * time.Millisecond,
		Kinds: []string{KindSQLite}, Exe: exe, ExeArgs: []string{"bench", "server"}, Compare: exe,
		CommandLine: "askpoint bench", Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d rows, want (b) and (b0)", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Err != nil || !r.ok() {
			t.Fatalf("%s: %v\n%s", r.Name(), r.Err, progress.String())
		}
		if len(r.Windows) != 4 {
			t.Fatalf("%s: %d windows, want 4", r.Name(), len(r.Windows))
		}
		var rts int
		var cpu time.Duration
		firsts := 0
		for i, w := range r.Windows {
			if w.Round != i || w.load.roundTrips == 0 || w.CPU <= 0 {
				t.Errorf("%s window %d: round %d, %d round trips, CPU %v", r.Name(), i, w.Round+1, w.load.roundTrips, w.CPU)
			}
			if w.Position == 0 {
				firsts++
			}
			rts += w.load.roundTrips
			cpu += w.CPU
		}
		if firsts != 2 {
			t.Errorf("%s first in %d of 4 rounds, want 2", r.Name(), firsts)
		}
		if r.Load.roundTrips != rts || r.CPU != cpu {
			t.Errorf("%s: %d round trips and CPU %v, want its windows' sums %d and %v", r.Name(), r.Load.roundTrips, r.CPU, rts, cpu)
		}
	}
	var out bytes.Buffer
	rep.Markdown(&out)
	wantOutput(t, out.String(), progress.String(),
		"then the load moves from one to the next in 4 rounds, each giving every server a window of 200ms (800ms per server in all",
		"round 1 (b) (b0); round 2 (b0) (b); round 3 (b0) (b); round 4 (b) (b0).",
		"Every server held each place in the order in 2 of the 4 rounds (first in 2, last in 2).",
	)
	// Each row's spread over its windows; (b0) against (a), absent here, has none.
	for line := range strings.SplitSeq(out.String(), "\n") {
		if strings.HasPrefix(line, "| (b") && !regexp.MustCompile(`\| [0-9,.]+-[0-9,.]+ /s; [0-9,.]+-[0-9,.]+ per CPU-second \|$`).MatchString(line) {
			t.Errorf("row without its spread: %s", line)
		}
	}
}

// TestBenchGoesOnWithoutAServerThatFails: rows whose server does not start
// (here a --compare binary that exits at once) are reported failed, and
// the others are measured in rounds of their own, said by their names.
func TestBenchGoesOnWithoutAServerThatFails(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := Run(t.Context(), Options{
		Callers: 2, Duration: 400 * time.Millisecond, Kinds: []string{KindSQLite, KindSQLiteGRPC},
		Exe: exe, ExeArgs: []string{"bench", "server"}, Compare: "/bin/false", CommandLine: "askpoint bench", Progress: &progress,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Markdown(&out)
	wantOutput(t, out.String(), progress.String(),
		"| (b0) | askpoint, SQLite (WAL, synchronous=FULL), false | failed: ",
		"| (b′0) | askpoint, SQLite, over gRPC (one HTTP/2 connection), false | failed: ",
		"in 4 rounds, each giving every server a window of 100ms",
		"round 1 (b) (b′); round 2 (b′) (b); round 3 (b′) (b); round 4 (b) (b′).",
		"(first in 2, last in 2)",
	)
	for _, r := range rep.Results {
		if !r.Before && (!r.ok() || len(r.Windows) != 4) {
			t.Errorf("%s: %d windows, error %v; want 4 and none", r.Name(), len(r.Windows), r.Err)
		}
	}
}
