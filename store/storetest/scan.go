package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/askpoint/askpoint/store"
)

// scanCases cover ScanLogs.
var scanCases = []testCase{
	{"ScanLogs/EveryTenantAndOwnerGroupedOldestFirst", testScanLogsAll},
	{"ScanLogs/OnlyTheKindsAsked", testScanLogsKinds},
	{"ScanLogs/StopsAtTheCallbacksError", testScanLogsStops},
	{"ScanLogs/EmptyStore", testScanLogsEmpty},
}

type scanned struct {
	task, agent string
	e           store.LogEntry
}

func scanAll(t *testing.T, s store.Store, kinds []store.Kind) []scanned {
	t.Helper()
	var out []scanned
	err := s.ScanLogs(t.Context(), kinds, func(id, agent string, e store.LogEntry) error {
		out = append(out, scanned{id, agent, e})
		return nil
	})
	if err != nil {
		t.Fatalf("ScanLogs(%v) = %v, want nil", kinds, err)
	}
	return out
}

// byTask splits a scan into each task's entries, failing when a task's
// entries are not together or its agent changes.
func byTask(t *testing.T, call string, got []scanned) (map[string][]store.LogEntry, map[string]string) {
	t.Helper()
	logs, agents := map[string][]store.LogEntry{}, map[string]string{}
	var order []string
	for i, g := range got {
		if i == 0 || got[i-1].task != g.task {
			if slices.Contains(order, g.task) {
				t.Errorf("%s: the entries of task %q are not together (tasks in order %v, then %q again)", call, g.task, order, g.task)
			}
			order = append(order, g.task)
		}
		if a, ok := agents[g.task]; ok && a != g.agent {
			t.Errorf("%s: task %q has agent %q and %q", call, g.task, a, g.agent)
		}
		agents[g.task] = g.agent
		logs[g.task] = append(logs[g.task], g.e)
	}
	return logs, agents
}

func testScanLogsAll(t *testing.T, s store.Store) {
	// Tasks of two tenants, three owners and two agents, logs written
	// over several updates; IDs chosen so that creation order is not ID
	// order.
	type spec struct{ id, tenant, owner, agent string }
	specs := []spec{{"t2", "tenant-a", "alice", "echo"}, {"t1", "tenant-b", "bob", "expense"}, {"t3", "", "", "echo"}, {"t0", "tenant-a", "carol", "expense"}}
	want := map[string][]store.LogEntry{}
	for i, sp := range specs {
		task := newTask(sp.id)
		task.Tenant, task.Owner, task.Agent = sp.tenant, sp.owner, sp.agent
		first := entries(sp.id+"-a", 2+i)
		cur := mustCreate(t, s, task, first)
		more := mixedLog()
		mustUpdate(t, s, cur, more)
		want[sp.id] = append(withSeq(1, first...), withSeq(int64(len(first)+1), more...)...)
	}
	mustCreate(t, s, bareTask("t-empty"), nil) // no entries: nothing to scan

	got := scanAll(t, s, nil)
	logs, agents := byTask(t, "ScanLogs(nil)", got)
	if len(logs) != len(specs) {
		t.Errorf("ScanLogs(nil) gave the entries of %d tasks, want %d (every tenant's and owner's, none of the task without entries)", len(logs), len(specs))
	}
	for _, sp := range specs {
		checkEntries(t, fmt.Sprintf("ScanLogs(nil) of task %q", sp.id), logs[sp.id], want[sp.id])
		if agents[sp.id] != sp.agent {
			t.Errorf("ScanLogs(nil): task %q has agent %q, want %q", sp.id, agents[sp.id], sp.agent)
		}
	}
}

func testScanLogsKinds(t *testing.T, s store.Store) {
	log := mixedLog()
	mustCreate(t, s, newTask("t1"), log)
	for _, kinds := range [][]store.Kind{
		{store.KindMessage},
		{store.KindStatus, store.KindMessage},
		{store.KindReminder},
		{store.KindArtifact},
	} {
		var want []store.LogEntry
		for _, e := range withSeq(1, log...) {
			if slices.Contains(kinds, e.Kind) {
				want = append(want, e)
			}
		}
		logs, _ := byTask(t, fmt.Sprintf("ScanLogs(%v)", kinds), scanAll(t, s, kinds))
		checkEntries(t, fmt.Sprintf("ScanLogs(%v)", kinds), logs["t1"], want)
	}
	if got := scanAll(t, s, []store.Kind{"no-such-kind"}); len(got) != 0 {
		t.Errorf("ScanLogs([no-such-kind]) = %d entries, want none", len(got))
	}
}

func testScanLogsStops(t *testing.T, s store.Store) {
	for _, id := range []string{"t1", "t2", "t3"} {
		mustCreate(t, s, newTask(id), entries(id, 4))
	}
	stop := errors.New("enough")
	n := 0
	err := s.ScanLogs(t.Context(), nil, func(string, string, store.LogEntry) error {
		n++
		if n == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 5 {
		t.Errorf("ScanLogs with a callback failing at the 5th entry = %v after %d calls, want its error after 5", err, n)
	}
	// The store still answers after a scan stopped half-way (its
	// connection was given back).
	for range 3 {
		if got := scanAll(t, s, nil); len(got) != 12 {
			t.Fatalf("ScanLogs after a stopped scan = %d entries, want 12", len(got))
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.ScanLogs(ctx, nil, func(string, string, store.LogEntry) error { return nil }); err == nil {
		t.Errorf("ScanLogs with a canceled context = nil, want an error")
	}
}

func testScanLogsEmpty(t *testing.T, s store.Store) {
	if got := scanAll(t, s, nil); len(got) != 0 {
		t.Errorf("ScanLogs on an empty store = %d entries, want none", len(got))
	}
}
