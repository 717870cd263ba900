package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// retentionCases cover what per-principal quotas and retention read and
// delete (issue 23, finding 6).
var retentionCases = []testCase{
	{"CountOpen/CountsTheOwnersTasksThatAreNotTerminal", testCountOpen},
	{"DeleteFinished/DeletesOnlyTerminalTasksUpdatedBeforeTheCutoff", testDeleteFinished},
	{"CountOpen/SeesEveryWriteThatReturnedWhileOthersRead", testCountOpenSeesWrites},
}

// testCountOpenSeesWrites: a read after a write returned sees the write,
// on whichever connection of the store it runs, however the reads around
// it ended (read to the end, cut short by their context). The open-task
// cap relies on it: a count that goes back in time lets a create past it.
func testCountOpenSeesWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rctx, cancel := context.WithCancel(ctx)
				if (i+r)%3 == 0 {
					cancel() // a read whose caller went away
				}
				switch i % 5 {
				case 0:
					_, _ = s.CountOpen(rctx, "tenant-a", "alice")
				case 1:
					_, _ = s.TaskByRequestKey(rctx, fmt.Sprintf("no-such-key-%d", i))
				case 2:
					_, _ = s.GetTask(rctx, fmt.Sprintf("c%03d", i%50))
				case 3:
					_, _ = s.ReadLog(rctx, fmt.Sprintf("c%03d", i%50), 0, 10)
				case 4:
					_, _ = s.ListTasks(rctx, store.ListParams{Tenant: "tenant-a", Owner: "alice", Agent: "echo", PageSize: 5})
				}
				cancel()
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 200 {
		mustCreate(t, s, taskIn(fmt.Sprintf("c%03d", i), "alice", a2a.TaskStateInputRequired), nil)
		for range 3 {
			n, err := s.CountOpen(ctx, "tenant-a", "alice")
			if err != nil {
				t.Fatal(err)
			}
			if n != i+1 {
				t.Fatalf("CountOpen after %d creates returned = %d, want %d: a read did not see a write that had returned", i+1, n, i+1)
			}
		}
	}
}

func taskIn(id, owner string, st a2a.TaskState) *store.Task {
	t := bareTask(id)
	t.Owner, t.State = owner, st
	return t
}

func testCountOpen(t *testing.T, s store.Store) {
	mustCreate(t, s, taskIn("a1", "alice", a2a.TaskStateWorking), nil)
	mustCreate(t, s, taskIn("a2", "alice", a2a.TaskStateInputRequired), nil)
	mustCreate(t, s, taskIn("a3", "alice", a2a.TaskStateCompleted), nil)
	mustCreate(t, s, taskIn("a4", "alice", a2a.TaskStateCanceled), nil)
	mustCreate(t, s, taskIn("b1", "bob", a2a.TaskStateWorking), nil)
	other := taskIn("a5", "alice", a2a.TaskStateWorking)
	other.Tenant = "tenant-b"
	mustCreate(t, s, other, nil)
	for _, tc := range []struct {
		tenant, owner string
		want          int
	}{{"tenant-a", "alice", 2}, {"tenant-a", "bob", 1}, {"tenant-b", "alice", 1}, {"tenant-a", "carol", 0}} {
		got, err := s.CountOpen(ctx(t), tc.tenant, tc.owner)
		if err != nil || got != tc.want {
			t.Errorf("CountOpen(%q, %q) = %d, %v; want %d", tc.tenant, tc.owner, got, err, tc.want)
		}
	}
}

func testDeleteFinished(t *testing.T, s store.Store) {
	before := time.Now().Add(-time.Hour)
	states := map[string]a2a.TaskState{
		"done": a2a.TaskStateCompleted, "failed": a2a.TaskStateFailed, "canceled": a2a.TaskStateCanceled,
		"rejected": a2a.TaskStateRejected, "working": a2a.TaskStateWorking, "paused": a2a.TaskStateInputRequired,
		"auth": a2a.TaskStateAuthRequired,
	}
	for id, st := range states {
		mustCreate(t, s, taskIn(id, "alice", st), notified("n", 2))
	}
	mustPut(t, s, pushConfig("done", "p1", 0))
	if n, err := s.DeleteFinished(ctx(t), before, 100); err != nil || n != 0 {
		t.Fatalf("DeleteFinished(an hour ago) = %d, %v; want 0: nothing was finished that long ago", n, err)
	}
	cutoff := time.Now().Add(time.Hour)
	n, err := s.DeleteFinished(ctx(t), cutoff, 3)
	if err != nil || n != 3 {
		t.Fatalf("DeleteFinished(limit 3) = %d, %v; want 3", n, err)
	}
	n, err = s.DeleteFinished(ctx(t), cutoff, 100)
	if err != nil || n != 1 {
		t.Fatalf("DeleteFinished(the rest) = %d, %v; want the fourth finished task", n, err)
	}
	for id, st := range states {
		_, err := s.GetTask(ctx(t), id)
		if st.Terminal() {
			wantErr(t, "GetTask("+id+") after DeleteFinished", err, store.ErrNotFound)
		} else if err != nil {
			t.Errorf("GetTask(%s) = %v; a %s task must stay", id, err, st)
		}
	}
	if got := mustListPush(t, s, "done"); len(got) != 0 {
		t.Errorf("the deleted task's push configurations remain: %v", pushKeys(got))
	}
	if log, err := s.ReadLog(ctx(t), "done", 0, 0); err == nil && len(log) != 0 {
		t.Errorf("the deleted task's log remains: %d entries", len(log))
	}
}
