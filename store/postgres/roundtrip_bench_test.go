package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// BenchmarkRoundTrip is the store's half of the worked example's round
// trip as askpoint bench makes it on PostgreSQL: the ask (CreateTask in
// input-required with three log entries, the question timed), then the
// answer under a task lock (LoadTask of the answer's messageId and the
// request, given the version created, as the engine keeps the row it
// wrote; UpdateTask to completed with four entries, the last one
// notifying), with a listener running as every node's does; by one caller
// at a time and by 16 at once (whose change notifications are sent
// together). The rows carry the bench's JSON. Besides the time it reports
// what PostgreSQL's backends of the store (its pool and its listener) spent
// on a round trip (backend-µs/op, from /proc/PID/schedstat, so only when
// PostgreSQL runs on this machine), the listener's part of it, and the WAL
// the database wrote meanwhile (WAL-B/op; other sessions' writes count too,
// so take the least of several runs), and this process's own CPU
// (process-µs/op: the store's client side and the callers').
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench 'RoundTrip$' -benchtime 2000x -count 5 ./store/postgres/
//
// Its phases sub-benchmark makes the round trips of one caller and splits
// the backends' CPU by call (/proc/PID/schedstat read around each): the
// ask's CreateTask (create-µs/op), the answer's LoadTask under the lock
// (lock-µs/op) and its UpdateTask with the commit (answer-µs/op), on the
// pool's backends; and the notifier's backend (notifier-µs/op), which
// announces both writes.
//
// Its unlocked sub-benchmark makes the answer's UpdateTask without the
// task lock, so without the lock's round trip (begin and the row lock)
// and the commit in the lock's transaction: what the round trip would
// cost a node that needed no row lock to hold a task against other nodes
// (decision 0330 measured it; no such mode exists).
func BenchmarkRoundTrip(b *testing.B) {
	for _, callers := range []int{1, 16} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) { benchRoundTrips(b, callers, false) })
	}
	b.Run("unlocked/callers=16", func(b *testing.B) { benchRoundTrips(b, 16, true) })
	b.Run("phases", benchRoundTripPhases)
}

func benchRoundTripPhases(b *testing.B) {
	app := "askpoint-rt-" + randomHex(4)
	s, err := Open(b.Context(), withParam(b, dbtest.Schema(b), "application_name", app))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rt := &benchRoundTrip{}
	for range 50 {
		rt.run(b, s, nil)
	}
	notifier := queryInts(b, s, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'SELECT pg_notify%'`, app)
	if len(notifier) != 1 {
		b.Fatalf("the notifier's backends: %v, want one", notifier)
	}
	pool := slices.DeleteFunc(backendPIDs(b, s, app), func(pid int) bool { return pid == notifier[0] })
	var (
		at     [4]time.Duration // the pool's backends' CPU as each phase ended, summed
		n0     = backendsCPU(b, notifier)
		phases = func(p int) { at[p] += backendsCPU(b, pool) }
	)
	b.ResetTimer()
	for b.Loop() {
		rt.run(b, s, phases)
	}
	b.StopTimer()
	if now := backendPIDs(b, s, app); len(now) != len(pool)+1 {
		b.Logf("the store's backends changed during the run: %v and %v, then %v (the new ones not counted)", pool, notifier, now)
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(b.N) }
	b.ReportMetric(per(at[1]-at[0]), "create-µs/op")
	b.ReportMetric(per(at[2]-at[1]), "lock-µs/op")
	b.ReportMetric(per(at[3]-at[2]), "answer-µs/op")
	b.ReportMetric(per(backendsCPU(b, notifier)-n0), "notifier-µs/op")
}

func benchRoundTrips(b *testing.B, callers int, unlocked bool) {
	app := "askpoint-rt-" + randomHex(4)
	s, err := Open(b.Context(), withParam(b, dbtest.Schema(b), "application_name", app))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	lctx, stop := context.WithCancel(context.Background())
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		_ = s.Listen(lctx, func(string) {})
	}()
	defer func() { stop(); <-listened }()

	rt := &benchRoundTrip{unlocked: unlocked}
	var wg sync.WaitGroup
	for range callers { // the pool's connections and the statements' plans
		wg.Go(func() {
			for range 50 {
				rt.run(b, s, nil)
			}
		})
	}
	wg.Wait()
	pids := backendPIDs(b, s, app)
	var listener int
	if err := s.pool.QueryRow(b.Context(), `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query LIKE 'LISTEN%'`, app).Scan(&listener); err != nil {
		b.Fatalf("the listener's backend: %v", err)
	}
	cpu0, l0, wal0 := backendsCPU(b, pids), backendsCPU(b, []int{listener}), walLSN(b, s)
	self0 := processCPU(b)
	b.ResetTimer()
	if callers == 1 {
		for b.Loop() {
			rt.run(b, s, nil)
		}
	} else {
		b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				rt.run(b, s, nil)
			}
		})
	}
	b.StopTimer()
	self := processCPU(b) - self0
	if now := backendPIDs(b, s, app); len(now) != len(pids) {
		b.Logf("the store's backends changed during the run: %v, then %v (the new ones not counted)", pids, now)
	}
	cpu, l, wal := backendsCPU(b, pids)-cpu0, backendsCPU(b, []int{listener})-l0, walLSN(b, s)-wal0
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "backend-µs/op")
	b.ReportMetric(float64(l.Microseconds())/float64(b.N), "listener-µs/op")
	b.ReportMetric(float64(wal)/float64(b.N), "WAL-B/op")
	b.ReportMetric(float64(self.Microseconds())/float64(b.N), "process-µs/op")
}

// processCPU is the CPU time this process has used (getrusage: user and
// system): the store's client side, and the benchmark's own callers.
func processCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRoundTrip holds the bench's JSON, with IDs filled in per round trip.
type benchRoundTrip struct {
	n atomic.Int64
	// unlocked makes the answer's UpdateTask without a task lock (no
	// LoadTask under one before it).
	unlocked bool
}

// run makes one round trip. mark, when not nil, is called with 0 before
// the ask, then with 1, 2 and 3 after each of the three calls.
func (r *benchRoundTrip) run(b *testing.B, s *Store, mark func(phase int)) {
	if mark == nil {
		mark = func(int) {}
	}
	n := r.n.Add(1)
	ctx := b.Context()
	id := fmt.Sprintf("01a237e5-2974-78a7-b358-%012d", n)
	ctxID := fmt.Sprintf("01a237e5-2974-78b2-8932-%012d", n)
	answerID := fmt.Sprintf("01a237e5-18e8-73a3-9a8e-%012d", n)
	fill := func(s string) json.RawMessage {
		return json.RawMessage(strings.NewReplacer("TASK", id, "CTX", ctxID, "ANSWER", answerID).Replace(s))
	}
	now := time.Now()
	mark(0)
	asked := &store.Task{
		ID: id, ContextID: ctxID, Agent: "expense", State: a2a.TaskStateInputRequired,
		Status: fill(benchAskStatus), Checkpoint: fill(benchCheckpoint), Question: fill(benchQuestion),
		Pause: fill(benchPause), WakeAt: now.Add(12 * time.Hour), RequestKey: "rk-" + id,
	}
	created, err := s.CreateTask(ctx, asked, []store.LogEntry{
		{Kind: store.KindMessage, MessageID: "m-" + id, InHistory: true, Body: fill(benchRequest)},
		{Kind: store.KindStatus, Body: fill(benchWorking)},
		{Kind: store.KindStatus, InHistory: true, Notify: true, Body: fill(`{"contextId":"CTX","status":` + benchAskStatus + `,"taskId":"TASK"}`)},
	})
	if err != nil {
		b.Fatal(err)
	}
	mark(1)
	done, lctx := *created, ctx
	if !r.unlocked {
		lock := s.LockTask(id)
		defer lock.Unlock()
		lctx = store.WithLock(ctx, lock)
		// The engine keeps the row it created (internal/engine's rowCache).
		l, err := s.LoadTask(lctx, id, store.LoadParams{MessageID: answerID, Request: true, Version: created.Version})
		if err != nil {
			b.Fatalf("LoadTask() = %v", err)
		}
		if !l.Unchanged { // no lock slot came free in time: read unlocked
			done = *l.Task
		}
	}
	mark(2)
	done.State, done.Status, done.Artifacts = a2a.TaskStateCompleted, fill(benchDoneStatus), fill("["+benchArtifact+"]")
	done.Checkpoint, done.Question, done.Pause, done.WakeAt = nil, nil, nil, time.Time{}
	if _, err := s.UpdateTask(lctx, &done, []store.LogEntry{
		{Kind: store.KindMessage, MessageID: answerID, InHistory: true, Body: fill(benchAnswer)},
		{Kind: store.KindStatus, Body: fill(benchWorking)},
		{Kind: store.KindArtifact, Body: fill(`{"artifact":` + benchArtifact + `,"contextId":"CTX","lastChunk":true,"taskId":"TASK"}`)},
		{Kind: store.KindStatus, InHistory: true, Notify: true, Body: fill(`{"contextId":"CTX","status":` + benchDoneStatus + `,"taskId":"TASK"}`)},
	}); err != nil {
		b.Fatal(err)
	}
	mark(3)
}

// The worked example's JSON as askpoint bench stores it.
const (
	benchRequest    = `{"messageId":"01a237e5-18d9-7706-88de-aaeaf906cf68","contextId":"CTX","parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}],"role":"ROLE_USER","taskId":"TASK"}`
	benchWorking    = `{"contextId":"CTX","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-02T17:54:50.721893819Z"},"taskId":"TASK"}`
	benchAskStatus  = `{"message":{"messageId":"01a237e5-2974-79a2-9cbf-c03b41bb2e7c","contextId":"CTX","extensions":["https://askpoint.dev/ext/question/v1"],"parts":[{"text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420."},{"data":{"answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"expires":"2026-12-03T17:54:54.965Z","options":[{"value":"CC-4410"},{"value":"CC-4420"}],"questionId":"q-0-45f1a173206f"},"mediaType":"application/json"}],"role":"ROLE_AGENT","taskId":"TASK"},"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-12-02T17:54:54.96460491Z"}`
	benchCheckpoint = `{"expense":{"amount":42,"currency":"EUR","date":"2026-12-01","vendor":"Taxi"},"costCentres":["CC-4410","CC-4420"]}`
	benchQuestion   = `{"questionId":"q-0-45f1a173206f","text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420.","expires":"2026-12-03T17:54:54.965Z","answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"options":[{"value":"CC-4410"},{"value":"CC-4420"}],"attempt":1,"maxAttempts":3}`
	benchPause      = `{"asked":"2026-12-02T17:54:54.96460491Z","question":"q-0-45f1a173206f","expires":"2026-12-03T17:54:54.965Z","onExpiry":"fail","fresh":"q-0-45f1a173206f"}`
	benchAnswer     = `{"messageId":"ANSWER","contextId":"CTX","parts":[{"data":{"costCentre":"CC-4410"},"mediaType":"application/json"}],"role":"ROLE_USER","taskId":"TASK"}`
	benchArtifact   = `{"artifactId":"01a237e5-18ea-72f3-a65c-2e5750da4066","name":"expense","parts":[{"text":"Filed expense EXP-B2DA1C0AE8: 42.00 EUR on 2026-12-01 for Taxi, charged to CC-4410."},{"data":{"amount":42,"costCentre":"CC-4410","currency":"EUR","date":"2026-12-01","expenseId":"EXP-B2DA1C0AE8","vendor":"Taxi"},"mediaType":"application/json"}]}`
	benchDoneStatus = `{"message":{"messageId":"01a237e5-18ea-733f-93dc-34b883b4c10f","contextId":"CTX","parts":[{"text":"Filed expense EXP-B2DA1C0AE8: 42.00 EUR on 2026-12-01 for Taxi, charged to CC-4410."}],"role":"ROLE_AGENT","taskId":"TASK"},"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-02T17:54:50.730188219Z"}`
)

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// withParam is the URL u with query parameter k set to v.
func withParam(tb testing.TB, u, k, v string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatal(err)
	}
	q := p.Query()
	q.Set(k, v)
	p.RawQuery = q.Encode()
	return p.String()
}

// backendPIDs are the process IDs of the backends whose application_name
// is app.
func backendPIDs(tb testing.TB, s *Store, app string) []int {
	tb.Helper()
	return queryInts(tb, s, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid`, app)
}

// backendsCPU is the time the processes pids have run on a CPU
// (/proc/PID/schedstat, in nanoseconds).
func backendsCPU(tb testing.TB, pids []int) time.Duration {
	tb.Helper()
	var sum time.Duration
	for _, pid := range pids {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
		if err != nil {
			tb.Skipf("PostgreSQL's backends are not visible here (%v): it runs elsewhere", err)
		}
		f := strings.Fields(string(raw))
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			tb.Fatalf("/proc/%d/schedstat: %q", pid, raw)
		}
		sum += time.Duration(ns)
	}
	return sum
}

// walLSN is the database's WAL insert position, in bytes.
func walLSN(tb testing.TB, s *Store) int64 {
	tb.Helper()
	var n int64
	if err := s.pool.QueryRow(tb.Context(), `SELECT pg_current_wal_insert_lsn() - '0/0'`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}
