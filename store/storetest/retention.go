package storetest

import (
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
