package sqlite

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/storetest"
)

// The store's own costs, without the engine and HTTP: a point read, a
// history read, and compare-and-set updates from many goroutines (group
// commit). Rows are the size of a paused expense task (~3 KB of JSON).
//
//	go test -run '^$' -bench . -benchtime 2s ./store/sqlite/

// seedLogs gives every task two log entries, as the store writes them:
// benchRequest, then a status entry with status.
func seedLogs(bt *batch, status string) error {
	_, err := bt.exec(`
		INSERT INTO task_log (task_key, seq, kind, in_history, notify, body, at)
		SELECT key, 1, 'message', 1, 0, askpoint_pack(?1, id, '', NULL, NULL), created_at FROM tasks
		UNION ALL
		SELECT key, 2, 'status', 1, 1, askpoint_pack(?2, id, '', NULL, NULL), created_at FROM tasks`,
		benchRequest, `{"status":`+status+`}`)
	return err
}

// benchRequest is the first message of the tasks seedDue and seedList
// write.
const benchRequest = `{"role":"ROLE_USER","parts":[{"text":"Lunch with the team, 120 EUR"}]}`

var benchBlob = json.RawMessage(`{"text":"` + strings.Repeat("x", 700) + `"}`)

func benchTask(id string) *store.Task {
	return &store.Task{
		ID: id, ContextID: "ctx-" + id, Agent: "expense",
		State: a2a.TaskStateInputRequired, Status: benchBlob, Checkpoint: benchBlob, Question: benchBlob, Input: benchBlob,
	}
}

func benchEntries(n int) []store.LogEntry {
	es := make([]store.LogEntry, n)
	for i := range es {
		es[i] = store.LogEntry{Kind: store.KindStatus, InHistory: i%2 == 0, Body: benchBlob}
	}
	return es
}

func benchOpen(b *testing.B) *Store {
	s, err := Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, cpu0 time.Duration) {
	if d := cpuTime() - cpu0; d > 0 {
		b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkGetTask(b *testing.B) {
	s := benchOpen(b)
	for i := range 1000 {
		if _, err := s.CreateTask(b.Context(), benchTask(fmt.Sprint("t", i)), benchEntries(3)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.GetTask(b.Context(), fmt.Sprint("t", i%1000)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu0)
}

func BenchmarkHistory(b *testing.B) {
	s := benchOpen(b)
	for i := range 1000 {
		if _, err := s.CreateTask(b.Context(), benchTask(fmt.Sprint("t", i)), benchEntries(5)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.History(b.Context(), fmt.Sprint("t", i%1000), 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportCPU(b, cpu0)
}

// BenchmarkUpdateTask is compare-and-set updates with two log entries each,
// from 1 and from 32 goroutines, each on its own task.
func BenchmarkUpdateTask(b *testing.B) {
	for _, writers := range []int{1, 32} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s := benchOpen(b)
			var next atomic.Int64
			b.ReportAllocs()
			if writers > 1 {
				b.SetParallelism(writers / runtime.GOMAXPROCS(0))
			}
			cpu0 := cpuTime()
			b.ResetTimer()
			work := func(pb interface{ Next() bool }) {
				t, err := s.CreateTask(b.Context(), benchTask(fmt.Sprint("t", next.Add(1))), nil)
				if err != nil {
					b.Error(err)
					return
				}
				for pb.Next() {
					u, err := s.UpdateTask(b.Context(), t, benchEntries(2))
					if err != nil {
						b.Error(err)
						return
					}
					t = u
				}
			}
			if writers == 1 {
				work(&serial{n: b.N})
			} else {
				b.RunParallel(func(pb *testing.PB) { work(pb) })
			}
			b.StopTimer()
			reportCPU(b, cpu0)
		})
	}
}

type serial struct{ n int }

func (s *serial) Next() bool { s.n--; return s.n >= 0 }

// BenchmarkDueTasks is the expiry sweep: one DueTasks call returning the
// 1,000 due tasks (Limit 1000) among paused tasks whose other timers are
// all in the future, at 1,000 and at 1,000,000 paused tasks. With the
// partial index on wake_at the cost follows the due tasks, not the paused
// ones. The NextDue-ns metric is the mean of NextDue calls after the loop.
// Rows carry a status, a question and a pause (~300 bytes of JSON); the
// due ones are spread over the table, not clustered. Seeding (one INSERT
// through the writer) is not timed.
//
//	go test -run '^$' -bench DueTasks -benchtime 3s ./store/sqlite/
func BenchmarkDueTasks(b *testing.B) {
	const due = 1000
	for _, paused := range []int{1000, 1_000_000} {
		b.Run(fmt.Sprintf("paused=%d", paused), func(b *testing.B) {
			s := benchOpen(b)
			now := time.Now()
			seedDue(b, s, paused, due, now)
			p := store.DueParams{Timer: store.TimerWake, Now: now, Limit: due}
			if got, err := s.DueTasks(b.Context(), p); err != nil || len(got) != due {
				b.Fatalf("DueTasks() = %d tasks, %v, want %d", len(got), err, due)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.DueTasks(b.Context(), p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			const calls = 1000
			start := time.Now()
			for range calls {
				if _, err := s.NextDue(b.Context(), store.TimerWake); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Nanoseconds())/calls, "NextDue-ns")
		})
	}
}

// seedDue inserts paused input-required tasks with two SQL statements
// through the writer, as the store writes them (packed.go): two log
// entries each, the second the status entry the columns are packed
// against. Every paused/due-th one has its wake_at up to 100s before now,
// the others theirs 1 to 25 hours after now.
func seedDue(b *testing.B, s *Store, paused, due int, now time.Time) {
	b.Helper()
	start := time.Now()
	const status = `{"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-01-02T03:04:05Z","message":{"role":"agent","parts":[{"text":"Approve?"}]}}`
	err := s.write(b.Context(), func(bt *batch) error {
		if _, err := bt.exec(`
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
			INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, ref_seq,
				status, question, pause, wake_at, created_at, updated_at)
			SELECT printf('task-%08d', i), printf('ctx-%08d', i), 'tenant', 'alice', 'expense', 'TASK_STATE_INPUT_REQUIRED', 1, 2, 1,
				askpoint_pack(?3, printf('task-%08d', i), printf('ctx-%08d', i), ?7, ?8),
				askpoint_pack(?4, printf('task-%08d', i), printf('ctx-%08d', i), ?7, ?8),
				askpoint_pack(?5, printf('task-%08d', i), printf('ctx-%08d', i), ?7, ?8),
				CASE WHEN i % ?2 = 0 THEN ?6 - 1 - (i * 7919) % 100000 ELSE ?6 + 3600000 + (i * 7919) % 86400000 END,
				?6, ?6
			FROM n`,
			paused, paused/due,
			status,
			`{"text":"Approve the expense of 120 EUR for the team lunch?","schema":{"type":"boolean"}}`,
			`{"expiry":"cancel","expiresAt":"2026-01-02T04:04:05Z","reminders":["PT30M"],"sent":0}`,
			now.UnixMilli(), benchRequest, `{"status":`+status+`}`); err != nil {
			return err
		}
		return seedLogs(bt, status)
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d paused tasks (%d due) in %v", paused, due, time.Since(start).Round(time.Millisecond))
}

// BenchmarkListTasks is ListTasks pages of 100 of one caller's tasks of
// one agent, at 100,000 and at 1,000,000 tasks (one in a hundred
// input-required, the others completed), as storetest.BenchListTasks
// says. The target (issue 30, item 7) is under 50 ms a page at 1,000,000
// tasks; before migration 0007 a page of 100 took 3 to 7.7 s at 100,000
// tasks (over JSON-RPC), and before 0008 the first page by a state most
// tasks are in counted them (docs/decisions/0125). Rows carry a status of
// ~100 bytes. Seeding (one INSERT through the writer, the counts kept by
// their triggers) is not timed.
//
//	go test -run '^$' -bench ListTasks -benchtime 2s ./store/sqlite/
func BenchmarkListTasks(b *testing.B) {
	storetest.BenchListTasks(b, func(b *testing.B) store.Store { return benchOpen(b) }, seedList)
}

func seedList(b *testing.B, st store.Store, tasks int, few, most a2a.TaskState) {
	b.Helper()
	s := st.(*Store)
	const status = `{"state":"TASK_STATE_COMPLETED","message":{"role":"ROLE_AGENT","parts":[{"text":"Filed expense EXP-1234 for 42 EUR."}]}}`
	err := s.write(b.Context(), func(bt *batch) error {
		// As the store writes them (packed.go): the status packed
		// against the log's last two entries.
		if _, err := bt.exec(`
			WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
			INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, ref_seq, status, created_at, updated_at)
			SELECT printf('task-%08d', i), printf('ctx-%08d', i), 'tenant', 'alice', 'expense',
				CASE WHEN i % 100 = 0 THEN ?4 ELSE ?5 END, 1, 2, 1,
				askpoint_pack(?2, printf('task-%08d', i), printf('ctx-%08d', i), ?6, ?7), ?3 + i, ?3 + i
			FROM n`,
			tasks, status, storetest.ListBenchStart.UnixMilli()-1, string(few), string(most),
			benchRequest, `{"status":`+status+`}`); err != nil {
			return err
		}
		return seedLogs(bt, status)
	})
	if err != nil {
		b.Fatal(err)
	}
}
