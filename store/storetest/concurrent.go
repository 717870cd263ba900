package storetest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/askpoint/askpoint/store"
)

// concurrentCases cover many writers at once, as a server's requests and
// workers write: a driver may batch their writes (store/sqlite commits
// concurrent writes together), but each write must behave as if it were
// alone and be visible to every read as soon as it returns.
var concurrentCases = []testCase{
	{"Concurrent/WritersOnOwnTasksAllSucceedAndReadTheirWrites", testConcurrentOwnTasks},
}

func testConcurrentOwnTasks(t *testing.T, s store.Store) {
	const writers, updates = 24, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("t%02d", w)
			cur, err := s.CreateTask(ctx(t), bareTask(id), entries(id+"-c", 1))
			if err != nil {
				t.Errorf("CreateTask(%q) = %v, want nil", id, err)
				return
			}
			if got, err := s.GetTask(ctx(t), id); err != nil || got.Version != 1 {
				t.Errorf("GetTask(%q) right after CreateTask = %+v, %v, want version 1", id, got, err)
				return
			}
			for u := range updates {
				next := *cur
				next.Checkpoint = json.RawMessage(fmt.Sprintf(`{"writer":%d,"update":%d}`, w, u))
				cur, err = s.UpdateTask(ctx(t), &next, entries(fmt.Sprintf("%s-u%d-", id, u), 2))
				if err != nil {
					t.Errorf("UpdateTask(%q) #%d = %v, want nil", id, u, err)
					return
				}
				want := int64(u + 2)
				if cur.Version != want || cur.LastSeq != int64(1+2*(u+1)) {
					t.Errorf("UpdateTask(%q) #%d Version, LastSeq = %d, %d, want %d, %d", id, u, cur.Version, cur.LastSeq, want, 1+2*(u+1))
				}
				got, err := s.GetTask(ctx(t), id)
				if err != nil {
					t.Errorf("GetTask(%q) after update #%d = %v", id, u, err)
					return
				}
				checkTask(t, fmt.Sprintf("GetTask(%q) right after update #%d", id, u), got, cur)
			}
		})
	}
	wg.Wait()
	for w := range writers {
		id := fmt.Sprintf("t%02d", w)
		want := withSeq(1, entries(id+"-c", 1)...)
		for u := range updates {
			want = append(want, withSeq(int64(2+2*u), entries(fmt.Sprintf("%s-u%d-", id, u), 2)...)...)
		}
		checkEntries(t, fmt.Sprintf("ReadLog(%q, 0, 0)", id), mustReadLog(t, s, id, 0, 0), want)
	}
}
