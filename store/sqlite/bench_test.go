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
)

// The store's own costs, without the engine and HTTP: a point read, a
// history read, and compare-and-set updates from many goroutines (group
// commit). Rows are the size of a paused expense task (~3 KB of JSON).
//
//	go test -run '^$' -bench . -benchtime 2s ./store/sqlite/

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
