package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/a2aproject/a2a-go/v2/a2asrv/taskstore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/port"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/sqlite"
	"github.com/askpoint/askpoint/telemetry"
)

// The bench server is the process under measurement: one server of one
// kind, the expense agent at /expense/jsonrpc, and a small debug API the
// load generator reads (never used during the timed run except before and
// after it):
//
//	GET  /debug/bench/stats[?reset=1]  memory, goroutines, CPU, resume latencies
//	GET  /debug/bench/stats?counters=1 the same without the resume latencies
//	POST /debug/bench/seed?n=N         add N paused tasks, in process
//	POST /debug/bench/gc               runtime.GC + debug.FreeOSMemory
//	/debug/pprof/...                   the usual profiles
//
// It prints "listening ADDR" on stdout once it serves, and exits when its
// stdin closes (so it never outlives the bench command) or on SIGTERM.

// Kinds of server.
const (
	KindSDK      = "sdk"
	KindSQLite   = "sqlite"
	KindPostgres = "postgres"
	// KindSQLiteGRPC is (b) driven over the gRPC binding.
	KindSQLiteGRPC = "sqlite-grpc"
	// KindSQLiteREST is (b) driven over the HTTP+JSON binding (the server
	// runs as kind sqlite: it serves every binding).
	KindSQLiteREST = "sqlite-rest"
)

// answerHeader marks the HTTP request that carries an answer, with the
// task's ID, so the server can time answer arrival -> agent resumed.
const answerHeader = "X-Askpoint-Bench-Answer"

const listeningPrefix = "listening "

// OpenPostgres opens the PostgreSQL store for server kind (c). It is nil
// until the driver exists; see postgres.go.
var OpenPostgres func(ctx context.Context, url string) (store.Store, error)

func serverMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint bench server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "sdk, sqlite or postgres")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	db := fs.String("db", "", "SQLite file (kind sqlite)")
	pg := fs.String("pg", "", "PostgreSQL URL (kind postgres)")
	sdkSeed := fs.String("sdk-seed", "copy", "how paused tasks are added to the SDK: copy or handler")
	withTelemetry := fs.Bool("telemetry", false, "askpoint kinds: metrics and tracing on (every span sampled, exported to nowhere)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	bs := &benchServer{kind: *kind, tracker: newResumeTracker(), sdkSeed: *sdkSeed, telemetry: *withTelemetry}
	var closeFn func()
	var err error
	switch *kind {
	case KindSDK:
		err = bs.setupSDK()
	case KindSQLite, KindSQLiteGRPC:
		if *db == "" {
			fmt.Fprintln(stderr, "askpoint bench server: --db is required for kind sqlite")
			return 2
		}
		var st *sqlite.Store
		st, err = sqlite.Open(ctx, *db)
		if err == nil {
			closeFn, err = bs.setupAskpoint(ctx, st, logger)
			prev := closeFn
			closeFn = func() {
				if prev != nil {
					prev()
				}
				st.Close()
			}
		}
	case KindPostgres:
		if OpenPostgres == nil {
			err = errors.New("the PostgreSQL driver is not available in this build")
			break
		}
		var st store.Store
		st, err = OpenPostgres(ctx, *pg)
		if err == nil {
			closeFn, err = bs.setupAskpoint(ctx, st, logger)
			prev := closeFn
			closeFn = func() {
				if prev != nil {
					prev()
				}
				st.Close()
			}
		}
	default:
		err = fmt.Errorf("unknown kind %q: use sdk, sqlite or postgres", *kind)
	}
	if err != nil {
		fmt.Fprintf(stderr, "askpoint bench server: %v\n", err)
		if closeFn != nil {
			closeFn()
		}
		return 1
	}

	mux := http.NewServeMux()
	mux.Handle("/expense/", bs.app)
	mux.HandleFunc("GET /debug/bench/stats", bs.stats)
	mux.HandleFunc("POST /debug/bench/seed", bs.seedHandler)
	mux.HandleFunc("POST /debug/bench/gc", bs.gc)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint bench server: %v\n", err)
		closeFn()
		return 1
	}
	httpLn := ln
	if bs.grpc != nil {
		// gRPC on the same port, as askpoint serve does it.
		var grpcLn net.Listener
		httpLn, grpcLn = port.Split(ln, 0)
		go func() { _ = bs.grpc.Serve(grpcLn) }()
		defer bs.grpc.Stop()
	}
	hs := &http.Server{Handler: bs.track(mux), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(httpLn) }()
	fmt.Fprintf(stdout, "%s%s\n", listeningPrefix, ln.Addr())

	// Exit when the parent closes our stdin (or dies).
	stdinClosed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
		close(stdinClosed)
	}()
	select {
	case <-ctx.Done():
	case <-stdinClosed:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if closeFn != nil {
		closeFn()
	}
	return 0
}

type benchServer struct {
	kind    string
	sdkSeed string
	// telemetry: metrics and tracing on (--telemetry).
	telemetry bool
	app       http.Handler
	grpc      *grpc.Server // kind sqlite-grpc
	tracker   *resumeTracker

	// seed adds n paused tasks in process.
	seedFn func(ctx context.Context, n int) error
	seeded atomic.Int64
	seedMu sync.Mutex
	calls  storeCalls
	store  store.Store // askpoint's, unwrapped
}

// writerStats is store/sqlite's group-commit counters.
type writerStats interface {
	WriterStats() (commits, writes int64)
}

// setupSDK builds server (a): the SDK's default handler with its in-memory
// task store, behind the SDK's JSON-RPC transport.
func (bs *benchServer) setupSDK() error {
	exec := &sdkExecutor{
		agent:   expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil),
		resumed: bs.tracker.resumed,
	}
	// The store NewHandler makes when given none, made here so that the
	// seeding can reach it.
	ts := taskstore.NewInMemory(&taskstore.InMemoryStoreConfig{Authenticator: a2asrv.NewTaskStoreAuthenticator()})
	h := a2asrv.NewHandler(exec, a2asrv.WithTaskStore(ts), a2asrv.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	bs.app = http.StripPrefix("/expense", jsonrpcOnly(a2asrv.NewJSONRPCHandler(h)))
	bs.seedFn = func(ctx context.Context, n int) error {
		if bs.sdkSeed == "handler" {
			return seedSDKHandler(ctx, h, n)
		}
		return seedSDK(ctx, h, ts, n)
	}
	return nil
}

func jsonrpcOnly(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/jsonrpc", h)
	return mux
}

// setupAskpoint builds servers (b) and (c): askpoint as shipped, serving
// the expense agent from st.
func (bs *benchServer) setupAskpoint(ctx context.Context, st store.Store, logger *slog.Logger) (func(), error) {
	bs.store = st
	var obs *telemetry.Observer
	var inner store.Store = st
	var stopTraces func()
	if bs.telemetry {
		var err error
		if obs, stopTraces, err = benchObserver(); err != nil {
			return nil, err
		}
		inner = obs.ObserveStore(st)
	}
	var tracked store.Store = trackedStore{Store: inner, tr: bs.tracker, n: &bs.calls}
	if n, ok := inner.(store.Notifier); ok { // keep what the engine looks for
		tracked = trackedNotifier{tracked.(trackedStore), n}
	}
	cfg := askpoint.Config{Store: tracked, Logger: logger}
	if obs != nil {
		// The store is observed already, under the tracking wrapper, so
		// that the wrapper counts the calls the observer times.
		cfg.Observer = storeObserved{obs}
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	agent := resumeHook{Agent: expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil), tr: bs.tracker}
	if err := srv.Register(askpoint.AgentSpec{Name: "expense", Agent: agent, Card: expense.Card()}); err != nil {
		return nil, err
	}
	if err := srv.Start(ctx); err != nil {
		return nil, err
	}
	if bs.kind == KindSQLiteGRPC {
		if bs.grpc, err = srv.GRPC(grpc.ChainUnaryInterceptor(bs.trackGRPC)); err != nil {
			return nil, err
		}
	}
	bs.app = srv.Handler()
	bs.seedFn = func(ctx context.Context, n int) error { return seedAskpoint(ctx, srv, st, n) }
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Stop(sctx)
		if stopTraces != nil {
			stopTraces()
		}
	}, nil
}

// track notes when an answer's HTTP request arrives.
func (bs *benchServer) track(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get(answerHeader); id != "" {
			bs.tracker.answerArrived(id)
		}
		next.ServeHTTP(w, r)
	})
}

// trackGRPC notes when an answer's gRPC call arrives (metadata
// answerHeader, lower-cased).
func (bs *benchServer) trackGRPC(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	// One key read, not a copy of the call's metadata: the harness's own
	// cost is counted with the server's.
	if v := metadata.ValueFromIncomingContext(ctx, answerHeader); len(v) > 0 {
		bs.tracker.answerArrived(v[0])
	}
	return next(ctx, req)
}

// Stats is what GET /debug/bench/stats returns.
type Stats struct {
	TotalAlloc  uint64  `json:"totalAlloc"`
	Mallocs     uint64  `json:"mallocs"`
	HeapInuse   uint64  `json:"heapInuse"`
	HeapAlloc   uint64  `json:"heapAlloc"`
	Sys         uint64  `json:"sys"`
	NumGC       uint32  `json:"numGC"`
	Goroutines  int     `json:"goroutines"`
	Paused      int64   `json:"paused"` // seeded so far
	ResumeCount int     `json:"resumeCount"`
	ResumeP50   int64   `json:"resumeP50ns"` // answer request arrived -> agent resumed
	ResumeP99   int64   `json:"resumeP99ns"`
	CommitCount int     `json:"commitCount"`
	CommitP50   int64   `json:"commitP50ns"` // answer committed -> agent resumed (askpoint only)
	CommitP99   int64   `json:"commitP99ns"`
	SeedSeconds float64 `json:"seedSeconds,omitempty"`
	// StoreCalls counts the engine's store calls by method (askpoint only).
	StoreCalls map[string]int64 `json:"storeCalls,omitempty"`
	// Commits and Writes are the SQLite writer's transactions and the
	// writes they held (store/sqlite's group commit).
	Commits int64 `json:"commits,omitempty"`
	Writes  int64 `json:"writes,omitempty"`
	// CPUNanos is the process's user and system CPU time so far
	// (getrusage), read last.
	CPUNanos int64 `json:"cpuNs,omitempty"`
}

// readStats reads the server's figures; without samples, not its resume
// latencies (which take a sort of every sample).
func (bs *benchServer) readStats(reset, samples bool) Stats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st := Stats{
		TotalAlloc: ms.TotalAlloc, Mallocs: ms.Mallocs, HeapInuse: ms.HeapInuse, HeapAlloc: ms.HeapAlloc,
		Sys: ms.Sys, NumGC: ms.NumGC, Goroutines: runtime.NumGoroutine(), Paused: bs.seeded.Load(),
	}
	if bs.kind != KindSDK {
		st.StoreCalls = bs.calls.snapshot()
	}
	if ws, ok := bs.store.(writerStats); ok {
		st.Commits, st.Writes = ws.WriterStats()
	}
	if samples || reset {
		fromStart, fromCommit := bs.tracker.samples(reset)
		st.ResumeCount, st.ResumeP50, st.ResumeP99 = len(fromStart), int64(quantile(fromStart, 0.50)), int64(quantile(fromStart, 0.99))
		st.CommitCount, st.CommitP50, st.CommitP99 = len(fromCommit), int64(quantile(fromCommit, 0.50)), int64(quantile(fromCommit, 0.99))
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		st.CPUNanos = ru.Utime.Nano() + ru.Stime.Nano()
	}
	return st
}

func (bs *benchServer) stats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	writeJSON(w, bs.readStats(q.Get("reset") != "", q.Get("counters") == ""))
}

func (bs *benchServer) gc(w http.ResponseWriter, r *http.Request) {
	runtime.GC()
	debug.FreeOSMemory()
	writeJSON(w, bs.readStats(false, true))
}

func (bs *benchServer) seedHandler(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 0 {
		http.Error(w, "n must be a count", http.StatusBadRequest)
		return
	}
	bs.seedMu.Lock()
	defer bs.seedMu.Unlock()
	start := time.Now()
	if n > 0 {
		if err := bs.seedFn(r.Context(), n); err != nil {
			http.Error(w, "seed: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	bs.seeded.Add(int64(n))
	st := bs.readStats(false, true)
	st.SeedSeconds = time.Since(start).Seconds()
	writeJSON(w, st)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// resumeTracker times answer arrival (and, for askpoint, answer commit)
// to the agent's resumption.
type resumeTracker struct {
	mu         sync.Mutex
	arrived    map[string]time.Time
	committed  map[string]time.Time
	fromStart  []time.Duration
	fromCommit []time.Duration
}

const maxSamples = 1 << 20

func newResumeTracker() *resumeTracker {
	return &resumeTracker{arrived: map[string]time.Time{}, committed: map[string]time.Time{}}
}

func (t *resumeTracker) answerArrived(id string) {
	now := time.Now()
	t.mu.Lock()
	t.arrived[id] = now
	t.mu.Unlock()
}

func (t *resumeTracker) answerCommitted(id string) {
	now := time.Now()
	t.mu.Lock()
	if _, ok := t.arrived[id]; ok { // only answers the load generator timed
		t.committed[id] = now
	}
	t.mu.Unlock()
}

func (t *resumeTracker) resumed(id string) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if at, ok := t.arrived[id]; ok {
		delete(t.arrived, id)
		if len(t.fromStart) < maxSamples {
			t.fromStart = append(t.fromStart, now.Sub(at))
		}
	}
	if at, ok := t.committed[id]; ok {
		delete(t.committed, id)
		if len(t.fromCommit) < maxSamples {
			t.fromCommit = append(t.fromCommit, now.Sub(at))
		}
	}
}

func (t *resumeTracker) samples(reset bool) (fromStart, fromCommit []time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fromStart, fromCommit = slices.Clone(t.fromStart), slices.Clone(t.fromCommit)
	if reset {
		t.fromStart, t.fromCommit = nil, nil
		clear(t.arrived)
		clear(t.committed)
	}
	return fromStart, fromCommit
}

// trackedStore notes when an answer that resumes a task is committed, and
// counts the engine's store calls.
type trackedStore struct {
	store.Store
	tr *resumeTracker
	n  *storeCalls
}

// storeCalls counts calls per store method.
type storeCalls struct {
	create, get, byKey, load, update, readLog, history, list, claim, extend     atomic.Int64
	due, nextDue, putPush, getPush, listPush, deletePush, claimPush, settlePush atomic.Int64
}

func (c *storeCalls) snapshot() map[string]int64 {
	return map[string]int64{
		"CreateTask": c.create.Load(), "GetTask": c.get.Load(), "TaskByRequestKey": c.byKey.Load(), "LoadTask": c.load.Load(), "UpdateTask": c.update.Load(),
		"ReadLog": c.readLog.Load(), "History": c.history.Load(), "ListTasks": c.list.Load(),
		"ClaimRunnable": c.claim.Load(), "ExtendLease": c.extend.Load(),
		"DueTasks": c.due.Load(), "NextDue": c.nextDue.Load(),
		"PutPushConfig": c.putPush.Load(), "GetPushConfig": c.getPush.Load(), "ListPushConfigs": c.listPush.Load(),
		"DeletePushConfig": c.deletePush.Load(), "ClaimPushDeliveries": c.claimPush.Load(), "SettlePush": c.settlePush.Load(),
	}
}

// Unwrap is the wrapped store, where the engine finds its task locks
// (store.LockerOf), which quick steps need; what is read and written under
// them still comes through here, so it is counted.
func (s trackedStore) Unwrap() store.Store { return s.Store }

// SingleNode forwards the store's claim to be one process's (SQLite), which
// lets the engine keep the rows it wrote.
func (s trackedStore) SingleNode() bool {
	sn, ok := s.Store.(interface{ SingleNode() bool })
	return ok && sn.SingleNode()
}

func (s trackedStore) TaskByRequestKey(ctx context.Context, key string) (*store.Task, error) {
	s.n.byKey.Add(1)
	return s.Store.TaskByRequestKey(ctx, key)
}

func (s trackedStore) LoadTask(ctx context.Context, id string, p store.LoadParams) (*store.Loaded, error) {
	s.n.load.Add(1)
	return s.Store.LoadTask(ctx, id, p)
}

func (s trackedStore) DueTasks(ctx context.Context, p store.DueParams) ([]*store.Task, error) {
	s.n.due.Add(1)
	return s.Store.DueTasks(ctx, p)
}

func (s trackedStore) NextDue(ctx context.Context, timer store.Timer) (time.Time, error) {
	s.n.nextDue.Add(1)
	return s.Store.NextDue(ctx, timer)
}

func (s trackedStore) PutPushConfig(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	s.n.putPush.Add(1)
	return s.Store.PutPushConfig(ctx, c)
}

func (s trackedStore) GetPushConfig(ctx context.Context, taskID, id string) (*store.PushConfig, error) {
	s.n.getPush.Add(1)
	return s.Store.GetPushConfig(ctx, taskID, id)
}

func (s trackedStore) ListPushConfigs(ctx context.Context, taskID string) ([]*store.PushConfig, error) {
	s.n.listPush.Add(1)
	return s.Store.ListPushConfigs(ctx, taskID)
}

func (s trackedStore) DeletePushConfig(ctx context.Context, taskID, id string) error {
	s.n.deletePush.Add(1)
	return s.Store.DeletePushConfig(ctx, taskID, id)
}

func (s trackedStore) ClaimPushDeliveries(ctx context.Context, p store.ClaimParams) ([]*store.PushConfig, error) {
	s.n.claimPush.Add(1)
	return s.Store.ClaimPushDeliveries(ctx, p)
}

func (s trackedStore) SettlePush(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	s.n.settlePush.Add(1)
	return s.Store.SettlePush(ctx, c)
}

var answerInput = []byte(`{"kind":"answer"`)

func (s trackedStore) CreateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	s.n.create.Add(1)
	return s.Store.CreateTask(ctx, t, entries)
}

func (s trackedStore) GetTask(ctx context.Context, id string) (*store.Task, error) {
	s.n.get.Add(1)
	return s.Store.GetTask(ctx, id)
}

func (s trackedStore) UpdateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	s.n.update.Add(1)
	saved, err := s.Store.UpdateTask(ctx, t, entries)
	if err == nil && saved.Runnable && saved.State == a2a.TaskStateWorking && bytes.HasPrefix(saved.Input, answerInput) {
		s.tr.answerCommitted(saved.ID)
	}
	return saved, err
}

func (s trackedStore) ReadLog(ctx context.Context, id string, after int64, limit int) ([]store.LogEntry, error) {
	s.n.readLog.Add(1)
	return s.Store.ReadLog(ctx, id, after, limit)
}

func (s trackedStore) History(ctx context.Context, id string, last int) ([]store.LogEntry, error) {
	s.n.history.Add(1)
	return s.Store.History(ctx, id, last)
}

func (s trackedStore) ListTasks(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	s.n.list.Add(1)
	return s.Store.ListTasks(ctx, p)
}

func (s trackedStore) ClaimRunnable(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	s.n.claim.Add(1)
	return s.Store.ClaimRunnable(ctx, p)
}

func (s trackedStore) ExtendLease(ctx context.Context, id, owner string, version int64, until time.Time) error {
	s.n.extend.Add(1)
	return s.Store.ExtendLease(ctx, id, owner, version, until)
}

// trackedNotifier is a trackedStore over a store that also notifies.
type trackedNotifier struct {
	trackedStore
	n store.Notifier
}

func (s trackedNotifier) Listen(ctx context.Context, fn func(taskID string)) error {
	return s.n.Listen(ctx, fn)
}

// resumeHook notes when the agent resumes.
type resumeHook struct {
	askpoint.Agent
	tr *resumeTracker
}

func (h resumeHook) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	h.tr.resumed(call.TaskID)
	return h.Agent.Resume(ctx, call, r)
}
