package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// ListBenchStart is the UpdatedAt of the first task BenchListTasks has
// seeded; each next one is a millisecond later.
var ListBenchStart = time.UnixMilli(1_700_000_000_000)

// BenchListTasks measures ListTasks pages of 100 at 100,000 and 1,000,000
// tasks, in two mixes: "finished", one in a hundred input-required and the
// others completed (tasks that pile up until retention deletes them), and
// "waiting", one in a hundred completed and the others input-required
// (tasks paused for an answer that has not come). open gives an empty
// store, and seed puts tasks tasks in it in the driver's own dialect, of
// tenant "tenant", owner "alice" and agent "expense", every hundredth in
// state few and the others in state most, the i-th (from 1) with ID
// task-%08d and UpdatedAt ListBenchStart+i-1 milliseconds, with the counts
// the driver's writes would keep. The pages: the first, with its total;
// one from the middle of the listing, without it (as the engine reads the
// rest of a page and the later pages of a listing); the first of the
// input-required tasks and the first of the completed ones, with their
// totals. Each reports ms/page.
func BenchListTasks(b *testing.B, open func(b *testing.B) store.Store, seed func(b *testing.B, s store.Store, tasks int, few, most a2a.TaskState)) {
	for _, tasks := range []int{100_000, 1_000_000} {
		for _, mix := range []struct {
			name      string
			few, most a2a.TaskState
		}{{"finished", a2a.TaskStateInputRequired, a2a.TaskStateCompleted}, {"waiting", a2a.TaskStateCompleted, a2a.TaskStateInputRequired}} {
			b.Run(fmt.Sprintf("tasks=%d/%s", tasks, mix.name), func(b *testing.B) {
				s := open(b)
				start := time.Now()
				seed(b, s, tasks, mix.few, mix.most)
				b.Logf("seeded %d tasks in %v", tasks, time.Since(start).Round(time.Millisecond))
				benchListPages(b, s, tasks, mix.few)
			})
		}
	}
}

func benchListPages(b *testing.B, s store.Store, tasks int, few a2a.TaskState) {
	first := ListBenchStart
	firstPage := store.ListParams{Tenant: "tenant", Owner: "alice", Agent: "expense", PageSize: 100}
	mid := firstPage
	mid.NoTotal = true
	mid.After = &store.Cursor{UpdatedAt: first.Add(time.Duration(tasks/2-1) * time.Millisecond), ID: fmt.Sprintf("task-%08d", tasks/2)}
	waiting := firstPage
	waiting.State = a2a.TaskStateInputRequired
	done := firstPage
	done.State = a2a.TaskStateCompleted
	share := func(state a2a.TaskState) int {
		if state == few {
			return tasks / 100
		}
		return tasks - tasks/100
	}
	for _, c := range []struct {
		name  string
		p     store.ListParams
		total int
	}{{"first", firstPage, tasks}, {"middle", mid, 0}, {"input-required", waiting, share(a2a.TaskStateInputRequired)}, {"completed", done, share(a2a.TaskStateCompleted)}} {
		b.Run(c.name, func(b *testing.B) {
			if r, err := s.ListTasks(b.Context(), c.p); err != nil || len(r.Tasks) != 100 || r.TotalSize != c.total {
				b.Fatalf("ListTasks = %v; want 100 tasks of %d", err, c.total)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.ListTasks(b.Context(), c.p); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/page")
		})
	}
}
