// Package bench is `askpoint bench`: the same ask -> answer -> complete
// workload (the expense agent: a receipt, a cost-centre question with a data
// part, a data answer, an artifact) driven over JSON-RPC on 127.0.0.1
// against these servers, all running at once and taking the load in turn,
// in rounds whose order rotates and reverses (table.go):
//
//	(a) the a2a-go SDK's default request handler (a2asrv.NewHandler, its
//	    in-memory task store) running the same agent;
//	(b) askpoint on SQLite, as shipped (WAL, synchronous=FULL);
//	(c) askpoint on PostgreSQL, when a database URL is given.
//
// Each server runs in its own process (the bench command starts its own
// binary with the hidden subcommand `bench server`), so the CPU time and
// memory read from /proc are the server's alone; the load generator runs
// in the bench process. The output is a markdown table for
// docs/BENCHMARKS.md.
package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Options configure a run.
type Options struct {
	Callers int
	// Duration is each server's measured time, over all its windows.
	Duration time.Duration
	// Rounds is how many windows of Duration/Rounds each server of the
	// table is measured in, interleaved (schedule); 0: 2 per server, which
	// balances the order.
	Rounds       int
	Warmup       time.Duration // each server's, once, before the rounds
	Probe        time.Duration // 1-caller run at each paused level
	Paused       []int         // paused-task levels, ascending
	SDKMaxPaused int           // SDK levels above this are extrapolated; 0: none are
	PGMaxPaused  int           // PostgreSQL levels above this are not measured (this one is, if all are above); 0: no cap
	Kinds        []string
	PG           string
	Dir          string // SQLite files; "" = a temporary directory, removed after
	ProfileDir   string // when set: CPU and alloc profiles of each server
	SDKSeed      string // copy (default) or handler
	Exe          string // the binary to run servers with
	ExeArgs      []string
	// Compare, when set, is another askpoint binary (the commit before a
	// change): its askpoint servers are measured too, in the same rounds
	// as this binary's.
	Compare string
	// Telemetry: the askpoint servers are measured again with metrics and
	// tracing on (--telemetry on the bench server), in the same rounds.
	Telemetry bool
	// TelemetryRounds, with Telemetry, is how many windows of Duration
	// the SQLite server is measured with metrics and tracing on, alternating
	// with TelemetryRounds+1 windows with them off (runTelemetryRounds).
	TelemetryRounds int
	CommandLine     string
	Progress        io.Writer // progress lines; nil: none
}

// Main runs `askpoint bench ARGS` and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "server" {
		return serverMain(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("askpoint bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: askpoint bench [flags]

Runs the expense agent's ask -> answer -> complete round trip over JSON-RPC
on 127.0.0.1 against (a) the a2a-go SDK's default handler, (b) askpoint on
SQLite and (c) askpoint on PostgreSQL (with --pg or TEST_DATABASE_URL), each
server in its own process, all running at once and taking the load in turn in
rounds whose order rotates and reverses (so none is favoured by running first),
and prints a markdown table.

Flags:
`)
		fs.PrintDefaults()
	}
	callers := fs.Int("callers", 32, "concurrent callers")
	duration := fs.Duration("duration", 10*time.Second, "measured load per server, over all its windows")
	rounds := fs.Int("rounds", 0, "measure the servers in this many rounds, each giving every server a window of --duration/rounds, the order rotated and reversed round by round (0: twice the number of servers, which puts every server first and last equally often)")
	warmup := fs.Duration("warmup", 2*time.Second, "unmeasured load on each server, once, before the rounds (and before each telemetry round)")
	probe := fs.Duration("probe", 2*time.Second, "one-caller run at each paused level (resume latency)")
	paused := fs.String("paused", "100000,1000000", "paused-task levels to measure memory at (comma-separated; \"\" for none)")
	sdkMax := fs.Int("sdk-max-paused", 100000, "measure the SDK up to this many paused tasks and extrapolate above (0: measure every level)")
	pgMax := fs.Int("pg-max-paused", 20000, "add at most this many paused tasks to PostgreSQL (one CreateTask each, ~750/s here); levels above are not measured, and when all are, this level is measured instead (0: no cap)")
	kinds := fs.String("servers", "sdk,sqlite,sqlite-grpc,postgres", "servers to run: sdk, sqlite, sqlite-grpc (askpoint on SQLite over gRPC), sqlite-rest (over HTTP+JSON), postgres")
	pg := fs.String("pg", os.Getenv("TEST_DATABASE_URL"), "PostgreSQL URL for server (c) (default $TEST_DATABASE_URL)")
	dir := fs.String("dir", "", "directory for the SQLite files (default: a temporary directory, removed after)")
	sdkSeed := fs.String("sdk-seed", "copy", "how paused tasks are added to the SDK server: copy (one paused through the handler, copied into its store) or handler (every one through the handler; minutes per 100,000)")
	profile := fs.String("profile", "", "write CPU and alloc profiles of each server (an extra, unmeasured run) to this `directory`; with --telemetry-rounds, also a CPU profile of each window")
	telemetry := fs.Bool("telemetry", false, "also measure the askpoint servers with metrics and tracing on (every span sampled, exported to nowhere), in the same run")
	telemetryRounds := fs.Int("telemetry-rounds", 7, "with --telemetry: windows of --duration (each after --warmup) with metrics and tracing on, alternating with one more with them off, on two SQLite servers running side by side (0: none)")
	compare := fs.String("compare", "", "also measure the askpoint servers of this other askpoint `binary` (the commit before a change), in the same run")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askpoint bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	levels, err := parseLevels(*paused)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint bench: --paused: %v\n", err)
		return 2
	}
	if *sdkSeed != "copy" && *sdkSeed != "handler" {
		fmt.Fprintf(stderr, "askpoint bench: --sdk-seed %q: use copy or handler\n", *sdkSeed)
		return 2
	}
	if *callers < 1 || *duration <= 0 || *rounds < 0 {
		fmt.Fprintln(stderr, "askpoint bench: --callers must be at least 1, --duration positive and --rounds at least 0")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "askpoint bench: %v\n", err)
		return 1
	}
	opts := Options{
		Callers: *callers, Duration: *duration, Rounds: *rounds, Warmup: *warmup, Probe: *probe,
		Paused: levels, SDKMaxPaused: *sdkMax, PGMaxPaused: *pgMax,
		Kinds: strings.Split(*kinds, ","), PG: *pg, Dir: *dir, ProfileDir: *profile, SDKSeed: *sdkSeed,
		Exe: exe, ExeArgs: []string{"bench", "server"}, Compare: *compare, Telemetry: *telemetry, TelemetryRounds: *telemetryRounds,
		CommandLine: commandLine(args), Progress: stderr,
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint bench: %v\n", err)
		return 1
	}
	rep.Markdown(stdout)
	return 0
}

func parseLevels(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(strings.ReplaceAll(f, "_", ""))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("levels must ascend: %d after %d", n, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

func commandLine(args []string) string {
	parts := []string{"askpoint", "bench"}
	for _, a := range args {
		if a == "" || strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
		}) >= 0 {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// Run runs the benchmark and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Progress != nil {
		// Shared with the servers' stderr, copied from other goroutines.
		o.Progress = &lockedWriter{w: o.Progress}
	}
	rep := &Report{Opts: o, Start: time.Now().UTC(), LoadStart: loadAvg(), Machine: machine()}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "askpoint-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if o.ProfileDir != "" {
		if err := os.MkdirAll(o.ProfileDir, 0o755); err != nil {
			return nil, err
		}
	}
	for _, kind := range []string{KindSDK, KindSQLite, KindSQLiteGRPC, KindSQLiteREST, KindPostgres} {
		if !contains(o.Kinds, kind) {
			continue
		}
		runs := []*KindResult{{Kind: kind, Label: kindLabel(kind), exe: o.Exe}}
		if o.Compare != "" && kind != KindSDK {
			runs = append(runs, &KindResult{Kind: kind, Label: kindLabel(kind) + ", " + filepath.Base(o.Compare), Before: true, exe: o.Compare})
		}
		if o.Telemetry && kind != KindSDK {
			runs = append(runs, &KindResult{Kind: kind, Label: kindLabel(kind) + ", metrics and tracing on", Telemetry: true, exe: o.Exe})
		}
		for _, r := range runs {
			rep.Results = append(rep.Results, r)
			if kind == KindPostgres {
				switch {
				case o.PG == "":
					r.Skipped = "not configured: give --pg URL or set TEST_DATABASE_URL"
				case OpenPostgres == nil:
					r.Skipped = "not available: this build has no PostgreSQL driver (store/postgres has no Open yet)"
				}
			}
		}
	}
	var measured []*KindResult
	for _, r := range rep.Results {
		if r.Skipped == "" {
			measured = append(measured, r)
		}
	}
	order, err := runTable(ctx, o, dir, measured)
	if err != nil {
		return nil, err // only when ctx ended
	}
	rep.Order = order
	for _, r := range measured {
		if r.Err != nil {
			continue
		}
		if err := runPausedKind(ctx, o, dir, r); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			r.Err = err
			o.progress("%s: %v", r.Kind, err)
		}
	}
	if o.Telemetry && contains(o.Kinds, KindSQLite) && o.TelemetryRounds > 0 {
		rounds, err := runTelemetryRounds(ctx, o, dir, o.TelemetryRounds)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.RoundsErr = err
			o.progress("telemetry rounds: %v", err)
		}
		rep.Rounds = rounds
	}
	rep.End = time.Now().UTC()
	rep.LoadEnd = loadAvg()
	return rep, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.TrimSpace(v) == s {
			return true
		}
	}
	return false
}

func kindLabel(kind string) string {
	switch kind {
	case KindSDK:
		return "a2a-go v2.4.0 default handler (in-memory store)"
	case KindSQLite:
		return "askpoint, SQLite (WAL, synchronous=FULL)"
	case KindSQLiteGRPC:
		return "askpoint, SQLite, over gRPC (one HTTP/2 connection)"
	case KindSQLiteREST:
		return "askpoint, SQLite, over HTTP+JSON"
	case KindPostgres:
		return "askpoint, PostgreSQL"
	}
	return kind
}

func (o Options) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "bench: "+format+"\n", args...)
	}
}

// serverArgs are the arguments of a bench server; where is the SQLite file
// or the PostgreSQL URL.
func (o Options) serverArgs(kind, where string) []string {
	serverKind := kind
	if kind == KindSQLiteREST {
		serverKind = KindSQLite // (b) itself, driven over another binding: any build's server serves it
	}
	args := append(append([]string(nil), o.ExeArgs...), "--kind", serverKind, "--addr", "127.0.0.1:0")
	switch kind {
	case KindSQLite, KindSQLiteGRPC, KindSQLiteREST:
		args = append(args, "--db", where)
	case KindPostgres:
		args = append(args, "--pg", where)
	case KindSDK:
		if o.SDKSeed != "" {
			args = append(args, "--sdk-seed", o.SDKSeed)
		}
	}
	return args
}

// serverArgs are the arguments of r's bench server.
func (r *KindResult) serverArgs(o Options, where string) []string {
	args := o.serverArgs(r.Kind, where)
	if r.Telemetry {
		args = append(args, "--telemetry")
	}
	return args
}

// runPaused measures one server's memory with paused tasks, in a fresh
// process with a database of its own.
func runPausedKind(ctx context.Context, o Options, dir string, r *KindResult) error {
	if len(o.Paused) == 0 || r.Kind == KindSQLiteGRPC || r.Kind == KindSQLiteREST { // paused tasks are (b)'s: the store does not know the binding
		return nil
	}
	db, pg, err := serverDB(o, dir, r, "paused")
	if err != nil {
		return err
	}
	defer dropScratch(ctx, o, r, pg)
	return runPaused(ctx, o, db, r)
}

// serverDB gives a server process its own database: a new SQLite file, or
// a new schema in the PostgreSQL database (pg, dropped afterwards).
func serverDB(o Options, dir string, r *KindResult, phase string) (string, *pgScratch, error) {
	if r.Kind != KindPostgres {
		return filepath.Join(dir, r.fileName()+"-"+phase+".db"), nil, nil
	}
	pg, err := newPGScratch(o.PG)
	if err != nil {
		return "", nil, err
	}
	return pg.url, pg, nil
}

// dropScratch drops pg's schema (nothing when pg is nil).
func dropScratch(ctx context.Context, o Options, r *KindResult, pg *pgScratch) {
	if pg == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := pg.drop(dctx); err != nil {
		o.progress("%s: drop schema %s: %v", r.Kind, pg.schema, err)
	}
}

func runPaused(ctx context.Context, o Options, db string, r *KindResult) error {
	o.progress("%s: starting a fresh server for paused tasks", r.Kind)
	p, err := startServer(ctx, r.binary(o), r.serverArgs(o, db), o.Progress)
	if err != nil {
		return err
	}
	defer p.stop()
	c, closeClient, err := newClient(ctx, p.base+"/expense/jsonrpc", a2a.TransportProtocolJSONRPC, 1)
	if err != nil {
		return err
	}
	defer closeClient()

	measure := func(level int, seedSeconds float64) (*PausedResult, error) {
		if _, err := p.stats(ctx, true); err != nil {
			return nil, err
		}
		res := runLoad(ctx, c, 1, o.Probe)
		if res.roundTrips == 0 {
			return nil, fmt.Errorf("probe at %d paused: no round trip succeeded: %v", level, res.firstErr)
		}
		ps, err := p.stats(ctx, true)
		if err != nil {
			return nil, err
		}
		st, err := p.gc(ctx)
		if err != nil {
			return nil, err
		}
		rss, err := p.rss()
		if err != nil {
			return nil, err
		}
		return &PausedResult{
			Level: level, HeapInuse: st.HeapInuse, RSS: rss, Goroutines: st.Goroutines, SeedSeconds: seedSeconds,
			ResumeP50: time.Duration(ps.ResumeP50), ResumeP99: time.Duration(ps.ResumeP99),
			CommitP50: time.Duration(ps.CommitP50), CommitP99: time.Duration(ps.CommitP99),
			AnswerP50: quantile(res.answer, 0.5), AnswerP99: quantile(res.answer, 0.99),
		}, nil
	}

	base, err := measure(0, 0)
	if err != nil {
		return err
	}
	r.Paused = append(r.Paused, base)
	have := 0
	levels := o.Paused
	if r.Kind == KindPostgres && o.PGMaxPaused > 0 && levels[0] > o.PGMaxPaused {
		// Seeding PostgreSQL goes one CreateTask (one commit) at a time:
		// measure at the cap rather than not at all.
		levels = append([]int{o.PGMaxPaused}, levels...)
	}
	for _, level := range levels {
		if r.Kind == KindSDK && o.SDKMaxPaused > 0 && level > o.SDKMaxPaused {
			r.Paused = append(r.Paused, extrapolate(base, r.Paused[len(r.Paused)-1], level))
			continue
		}
		if r.Kind == KindPostgres && o.PGMaxPaused > 0 && level > o.PGMaxPaused {
			r.Paused = append(r.Paused, &PausedResult{Level: level, Skipped: fmt.Sprintf("not measured (--pg-max-paused %d)", o.PGMaxPaused)})
			continue
		}
		o.progress("%s: seeding to %d paused tasks", r.Kind, level)
		st, err := p.seed(ctx, level-have)
		if err != nil {
			return err
		}
		have = level
		pr, err := measure(level, st.SeedSeconds)
		if err != nil {
			return err
		}
		o.progress("%s: %d paused: heap %s, RSS %s, %d goroutines (seeded in %.1fs)", r.Kind, level, bytesIEC(float64(pr.HeapInuse)), bytesIEC(float64(pr.RSS)), pr.Goroutines, st.SeedSeconds)
		r.Paused = append(r.Paused, pr)
	}
	return nil
}

// extrapolate projects level from base (0 paused) and the last measured
// level, linearly.
func extrapolate(base, last *PausedResult, level int) *PausedResult {
	out := &PausedResult{Level: level, ExtrapolatedFrom: last.Level}
	if last.Level <= 0 {
		return out
	}
	f := float64(level) / float64(last.Level)
	out.HeapInuse = base.HeapInuse + uint64(float64(last.HeapInuse-min(base.HeapInuse, last.HeapInuse))*f)
	out.RSS = base.RSS + int64(float64(last.RSS-base.RSS)*f)
	out.Goroutines = base.Goroutines + int(float64(last.Goroutines-base.Goroutines)*f)
	return out
}

// KindResult is one server's figures.
type KindResult struct {
	Kind, Label string
	// Before: measured with Options.Compare, the binary compared against.
	Before bool
	// Telemetry: measured with metrics and tracing on.
	Telemetry bool
	exe       string
	Skipped   string
	Err       error

	Load            loadResult
	CPU             time.Duration
	DBCPU           time.Duration // PostgreSQL backends' CPU during the run (c)
	AllocPerRT      float64
	MallocsPerRT    float64
	ResumeP50       time.Duration
	ResumeP99       time.Duration
	CommitP50       time.Duration
	CommitP99       time.Duration
	HasCommit       bool
	LoadRSS         int64
	LoadGoroutines  int
	StoreCalls      map[string]float64 // per round trip, by method (askpoint)
	CommitsPerRT    float64            // SQLite transactions per round trip
	WritesPerCommit float64

	Paused []*PausedResult
	// Windows are the row's measured windows, in the order run; the
	// figures above are their sums.
	Windows []window
}

// binary is the askpoint binary r's servers run.
func (r *KindResult) binary(o Options) string {
	if r.exe != "" {
		return r.exe
	}
	return o.Exe
}

// fileName names r's files (databases, profiles): its kind, and -before
// for the compared binary.
func (r *KindResult) fileName() string {
	if r.Before {
		return r.Kind + "-before"
	}
	if r.Telemetry {
		return r.Kind + "-telemetry"
	}
	return r.Kind
}

// Name is the row's name in the report: (a), (b), (c), and (b0), (c0)
// for the compared binary.
func (r *KindResult) Name() string {
	n := rowNames[r.Kind]
	if r.Before {
		n = strings.TrimSuffix(n, ")") + "0)"
	}
	if r.Telemetry {
		n = strings.TrimSuffix(n, ")") + "T)"
	}
	return n
}

// PausedResult is the server's memory at one paused-task level.
type PausedResult struct {
	Level            int
	HeapInuse        uint64
	RSS              int64
	Goroutines       int
	SeedSeconds      float64
	ResumeP50        time.Duration
	ResumeP99        time.Duration
	CommitP50        time.Duration // from the answer's commit (askpoint)
	CommitP99        time.Duration
	AnswerP50        time.Duration
	AnswerP99        time.Duration
	ExtrapolatedFrom int    // > 0: not measured, projected from this level
	Skipped          string // not measured
}

func (r *KindResult) rtPerSec() float64 {
	if r.Load.elapsed <= 0 {
		return 0
	}
	return float64(r.Load.roundTrips) / r.Load.elapsed.Seconds()
}

func (r *KindResult) rtPerCPU() float64 {
	if r.CPU <= 0 {
		return 0
	}
	return float64(r.Load.roundTrips) / r.CPU.Seconds()
}

func (r *KindResult) ok() bool { return r.Skipped == "" && r.Err == nil && r.Load.roundTrips > 0 }

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func machine() string {
	model := "?"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := "?"
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(raw))
	}
	memory := ""
	if raw, err := os.ReadFile("/proc/meminfo"); err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				memory = fmt.Sprintf(", %s RAM", bytesIEC(float64(kb<<10)))
			}
		}
	}
	return fmt.Sprintf("%d cores (GOMAXPROCS %d), %s%s, Linux %s, %s %s/%s",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), model, memory, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
