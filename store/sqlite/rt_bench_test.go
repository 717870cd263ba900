package sqlite

import (
	"os"
	"runtime"
	"testing"

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
// pages each commit wrote.
//
//	go test -run '^$' -bench RoundTripWrites -benchtime 4000x -count 3 ./store/sqlite/
func BenchmarkRoundTripWrites(b *testing.B) {
	for _, ids := range []struct {
		name string
		new  func() string
	}{
		{"ids=random", uuid.NewString},
		{"ids=time-ordered", func() string { return string(a2a.NewTaskID()) }},
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
			b.ReportAllocs()
			b.SetParallelism(32 / runtime.GOMAXPROCS(0))
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
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
				b.ReportMetric(float64(s.batchedOps.Load())/float64(s.batches.Load()), "writes/commit")
			}
		})
	}
}
