package sqlite

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/askpoint/askpoint/store"
)

// BenchmarkRoundTripWrites is the store's half of one ask -> answer ->
// complete round trip as the engine writes it on SQLite: a CreateTask with
// the message and two statuses, then an UpdateTask with the answer, a
// status, the artifact and the final status, from 32 goroutines. With
// random task IDs every index keyed by task ID takes each write at another
// page; with time-ordered IDs (what the engine makes, decision 0017) the
// writes of one commit share the newest pages. frames/commit is the WAL
// pages each commit wrote, frames/rt those of a round trip; -test.v logs
// the b-trees they were pages of (walFrames). Their bodies are 700 bytes
// of one letter each; bodies=example writes the worked example's tasks and
// entries instead (exampleWrite), with time-ordered IDs.
//
//	go test -run '^$' -bench RoundTripWrites -benchtime 4000x -count 3 ./store/sqlite/
func BenchmarkRoundTripWrites(b *testing.B) {
	for _, ids := range []struct {
		name    string
		new     func() string
		example bool
	}{
		{"ids=random", uuid.NewString, false},
		{"ids=time-ordered", func() string { return string(a2a.NewTaskID()) }, false},
		{"bodies=example", nil, true},
	} {
		b.Run(ids.name, func(b *testing.B) {
			s := benchOpen(b)
			// Frames are counted from the WAL's size: no checkpoint
			// truncates it during the run.
			if _, err := s.w.ExecContext(b.Context(), `PRAGMA wal_autocheckpoint=0`); err != nil {
				b.Fatal(err)
			}
			msg := func() store.LogEntry {
				return store.LogEntry{Kind: store.KindMessage, MessageID: a2a.NewMessageID(), InHistory: true, Body: benchBlob}
			}
			status := func(final bool) store.LogEntry {
				return store.LogEntry{Kind: store.KindStatus, InHistory: final, Notify: final, Body: benchBlob}
			}
			var examples []exampleWrite
			var next atomic.Int64
			if ids.example {
				examples = make([]exampleWrite, b.N)
				for i := range examples {
					examples[i] = newExampleWrite()
				}
			}
			b.ReportAllocs()
			b.SetParallelism(32 / runtime.GOMAXPROCS(0))
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if ids.example {
						if err := examples[next.Add(1)-1].run(b, s); err != nil {
							b.Error(err)
							return
						}
						continue
					}
					t := benchTask(ids.new())
					t.RequestKey = uuid.NewString()
					t.ContextID = a2a.NewContextID()
					saved, err := s.CreateTask(b.Context(), t, []store.LogEntry{msg(), status(false), status(true)})
					if err != nil {
						b.Error(err)
						return
					}
					saved.State = a2a.TaskStateCompleted
					if _, err := s.UpdateTask(b.Context(), saved, []store.LogEntry{msg(), status(false), {Kind: store.KindArtifact, Body: benchBlob}, status(true)}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			reportCPU(b, cpu0)
			if fi, err := os.Stat(s.path + "-wal"); err == nil && s.batches.Load() > 0 {
				b.ReportMetric(float64(fi.Size())/float64(4096+24)/float64(s.batches.Load()), "frames/commit")
				b.ReportMetric(float64(fi.Size())/float64(4096+24)/float64(b.N), "frames/rt")
				b.ReportMetric(float64(s.batchedOps.Load())/float64(s.batches.Load()), "writes/commit")
			}
			byTree := walFrames(b, s)
			for _, name := range slices.SortedFunc(maps.Keys(byTree), func(x, y string) int { return byTree[y] - byTree[x] }) {
				if n := float64(byTree[name]) / float64(b.N); n >= 0.005 {
					b.Logf("%-26s %.2f frames a round trip", name, n)
				}
			}
		})
	}
}

// exampleWrite is the worked example's round trip as the store sees it,
// for a task of its own: the paused task and its first three entries
// (CreateTask), then the completed task's columns and the four entries its
// answer appends (UpdateTask).
type exampleWrite struct {
	paused, done       *store.Task
	created, completed []store.LogEntry
}

// newExampleWrite is exampleTasks with new task and context IDs.
func newExampleWrite() exampleWrite {
	tasks, logs := exampleTasks()
	id, ctx := string(a2a.NewTaskID()), string(a2a.NewContextID())
	r := strings.NewReplacer(exTask, id, exCtx, ctx, exTask2, id, exCtx2, ctx)
	fix := func(t *store.Task) {
		t.ID, t.ContextID = id, ctx
		for _, c := range []*json.RawMessage{&t.Status, &t.Artifacts, &t.Checkpoint, &t.Question, &t.Pause} {
			if *c != nil {
				*c = json.RawMessage(r.Replace(string(*c)))
			}
		}
	}
	entries := func(es []store.LogEntry) []store.LogEntry {
		out := make([]store.LogEntry, len(es))
		for i, e := range es {
			e.Seq, e.Body = 0, json.RawMessage(r.Replace(string(e.Body)))
			out[i] = e
		}
		return out
	}
	w := exampleWrite{paused: tasks[0], done: tasks[1], created: entries(logs[0]), completed: entries(logs[1][3:])}
	fix(w.paused)
	fix(w.done)
	w.paused.RequestKey = uuid.NewString()
	return w
}

func (w exampleWrite) run(b *testing.B, s *Store) error {
	saved, err := s.CreateTask(b.Context(), w.paused, w.created)
	if err != nil {
		return err
	}
	saved.State, saved.Status, saved.Artifacts = w.done.State, w.done.Status, w.done.Artifacts
	saved.Checkpoint, saved.Question, saved.Pause, saved.WakeAt = nil, nil, nil, time.Time{}
	_, err = s.UpdateTask(b.Context(), saved, w.completed)
	return err
}

// walFrames counts the frames of s's WAL by the b-tree (table or index)
// their page now belongs to (dbstat), "page 1" for the file's header page
// (the schema's root, written when the file grows): which pages a
// workload's commits write. The WAL must hold every frame since the
// store was opened (wal_autocheckpoint=0).
func walFrames(b *testing.B, s *Store) map[string]int {
	b.Helper()
	wal, err := os.ReadFile(s.path + "-wal")
	if err != nil {
		b.Fatal(err)
	}
	names := map[uint32]string{1: "page 1"}
	rows, err := s.r.QueryContext(b.Context(), `SELECT name, pageno FROM dbstat WHERE pageno > 1`)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var name string
		var page uint32
		if err := rows.Scan(&name, &page); err != nil {
			b.Fatal(err)
		}
		names[page] = name
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		b.Fatal(err)
	}
	const header, frame = 32, 24 + 4096 // the WAL's header; a frame's header and page
	count := map[string]int{}
	for off := header; off+frame <= len(wal); off += frame {
		name, ok := names[binary.BigEndian.Uint32(wal[off:])]
		if !ok {
			name = "free"
		}
		count[name]++
	}
	return count
}
