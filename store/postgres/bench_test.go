package postgres

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// BenchmarkUpdateTaskParallel measures compare-and-set writes (each with
// one log entry and a change notification) from many goroutines, each on a
// task of its own, through one store: the write path of a busy node.
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench UpdateTaskParallel -cpu 1,4,16 ./store/postgres/
func BenchmarkUpdateTaskParallel(b *testing.B) {
	s, err := Open(b.Context(), dbtest.Schema(b))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var next atomic.Int64
	b.SetParallelism(1) // -cpu N: N writers
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprintf("t%d", next.Add(1))
		cur, err := s.CreateTask(b.Context(), sampleTask(id), nil)
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			cur, err = s.UpdateTask(b.Context(), cur, []store.LogEntry{{Kind: store.KindStatus}})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
