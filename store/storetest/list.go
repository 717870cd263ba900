package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// listCases cover ListTasks.
var listCases = []testCase{
	{"ListTasks/FiltersByTenantAndOwner", testListTenantOwner},
	{"ListTasks/FiltersByContextIDAndState", testListContextState},
	{"ListTasks/FiltersByAgent", testListAgent},
	{"ListTasks/FiltersByUpdatedAfter", testListUpdatedAfter},
	{"ListTasks/NewestFirstByUpdatedAtThenID", testListOrder},
	{"ListTasks/ReturnsStoredTasks", testListReturnsStored},
	{"ListTasks/PagesVisitEveryTaskOnce", testListPaging},
	{"ListTasks/NextIsNilOnLastPage", testListLastPage},
	{"ListTasks/NoMatches", testListEmpty},
	{"ListTasks/TotalFollowsCreatesChangesOfStateAndDeletes", testListTotals},
	{"ListTasks/NoTotalListsTheSamePage", testListNoTotal},
	{"ListTasks/ListsTasksOfEveryState", testListEveryState},
}

// newestFirst sorts tasks as ListTasks must: UpdatedAt descending (to the
// millisecond), then ID descending.
func newestFirst(ts []*store.Task) []*store.Task {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b *store.Task) int {
		au, bu := a.UpdatedAt.Truncate(time.Millisecond), b.UpdatedAt.Truncate(time.Millisecond)
		if c := bu.Compare(au); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out
}

// stored re-reads the tasks with the given IDs.
func stored(t *testing.T, s store.Store, ids ...string) []*store.Task {
	t.Helper()
	out := make([]*store.Task, len(ids))
	for i, id := range ids {
		out[i] = mustGet(t, s, id)
	}
	return out
}

// waitTick returns once the clock reads more than a millisecond past
// after, so that a row the store writes next gets a later timestamp than
// one it wrote at after. It waits at least 2ms even if after is already in
// the past, for a store whose clock is behind the test's. The clock is what
// the stores stamp rows with: there is no other signal to wait on.
func waitTick(after time.Time) {
	until := time.Now().Add(2 * time.Millisecond)
	if a := after.Add(time.Millisecond); a.After(until) {
		until = a
	}
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	for {
		<-timer.C
		if time.Now().After(until) {
			return
		}
		timer.Reset(time.Until(until) + time.Microsecond)
	}
}

// listAll lists p in one page.
func listAll(t *testing.T, s store.Store, p store.ListParams) *store.ListResult {
	t.Helper()
	p.PageSize = 1000
	return mustList(t, s, p)
}

// checkList fails t unless r lists exactly want, in this order, with
// TotalSize len(want) and no Next.
func checkList(t *testing.T, call string, r *store.ListResult, want []*store.Task) {
	t.Helper()
	if got, w := ids(r.Tasks), ids(want); !slices.Equal(got, w) {
		t.Errorf("%s tasks = %v, want %v", call, got, w)
	}
	if r.TotalSize != len(want) {
		t.Errorf("%s TotalSize = %d, want %d", call, r.TotalSize, len(want))
	}
	if r.Next != nil {
		t.Errorf("%s Next = %+v, want nil", call, *r.Next)
	}
}

func task(id, tenant, owner, contextID string, state a2a.TaskState) *store.Task {
	t := bareTask(id)
	t.Tenant, t.Owner, t.ContextID, t.State = tenant, owner, contextID, state
	return t
}

func testListTenantOwner(t *testing.T, s store.Store) {
	for _, tk := range []*store.Task{
		task("a1", "tenant-a", "alice", "c1", a2a.TaskStateWorking),
		task("a2", "tenant-a", "alice", "c2", a2a.TaskStateCompleted),
		task("a3", "tenant-a", "alice", "c1", a2a.TaskStateSubmitted),
		task("b1", "tenant-a", "bob", "c1", a2a.TaskStateWorking),
		task("b2", "tenant-a", "bob", "c3", a2a.TaskStateWorking),
		task("x1", "tenant-b", "alice", "c1", a2a.TaskStateWorking),
		task("x2", "tenant-b", "alice", "c4", a2a.TaskStateWorking),
		task("e1", "", "", "c1", a2a.TaskStateWorking),
	} {
		mustCreate(t, s, tk, nil)
	}
	for _, c := range []struct {
		tenant, owner string
		want          []string
	}{
		{"tenant-a", "alice", []string{"a1", "a2", "a3"}},
		{"tenant-a", "bob", []string{"b1", "b2"}},
		{"tenant-b", "alice", []string{"x1", "x2"}},
		{"tenant-b", "bob", nil},
		{"tenant-c", "alice", nil},
		{"", "", []string{"e1"}},
	} {
		call := fmt.Sprintf("ListTasks(tenant %q, owner %q)", c.tenant, c.owner)
		checkList(t, call, listAll(t, s, store.ListParams{Tenant: c.tenant, Owner: c.owner}),
			newestFirst(stored(t, s, c.want...)))
	}
}

func testListContextState(t *testing.T, s store.Store) {
	for _, tk := range []*store.Task{
		task("t1", "tenant-a", "alice", "c1", a2a.TaskStateWorking),
		task("t2", "tenant-a", "alice", "c1", a2a.TaskStateCompleted),
		task("t3", "tenant-a", "alice", "c2", a2a.TaskStateWorking),
		task("t4", "tenant-a", "alice", "c2", a2a.TaskStateInputRequired),
		task("t5", "tenant-a", "alice", "c1", a2a.TaskStateWorking),
		task("o1", "tenant-a", "bob", "c1", a2a.TaskStateWorking),   // other owner, same context
		task("o2", "tenant-b", "alice", "c1", a2a.TaskStateWorking), // other tenant, same context
	} {
		mustCreate(t, s, tk, nil)
	}
	for _, c := range []struct {
		contextID string
		state     a2a.TaskState
		want      []string
	}{
		{"", "", []string{"t1", "t2", "t3", "t4", "t5"}},
		{"c1", "", []string{"t1", "t2", "t5"}},
		{"c2", "", []string{"t3", "t4"}},
		{"c9", "", nil},
		{"", a2a.TaskStateWorking, []string{"t1", "t3", "t5"}},
		{"", a2a.TaskStateInputRequired, []string{"t4"}},
		{"", a2a.TaskStateFailed, nil},
		{"c1", a2a.TaskStateWorking, []string{"t1", "t5"}},
		{"c2", a2a.TaskStateCompleted, nil},
	} {
		call := fmt.Sprintf("ListTasks(contextID %q, state %q)", c.contextID, c.state)
		r := listAll(t, s, store.ListParams{Tenant: "tenant-a", Owner: "alice", ContextID: c.contextID, State: c.state})
		checkList(t, call, r, newestFirst(stored(t, s, c.want...)))
	}
}

func testListAgent(t *testing.T, s store.Store) {
	for _, tk := range []*store.Task{
		task("e1", "tenant-a", "alice", "c1", a2a.TaskStateWorking),
		task("e2", "tenant-a", "alice", "c1", a2a.TaskStateCompleted),
		task("s1", "tenant-a", "alice", "c1", a2a.TaskStateWorking),
	} {
		tk.Agent = "expense"
		if tk.ID == "s1" {
			tk.Agent = "script"
		}
		mustCreate(t, s, tk, nil)
	}
	for _, c := range []struct {
		agent string
		want  []string
	}{
		{"", []string{"e1", "e2", "s1"}},
		{"expense", []string{"e1", "e2"}},
		{"script", []string{"s1"}},
		{"other", nil},
	} {
		call := fmt.Sprintf("ListTasks(agent %q)", c.agent)
		r := listAll(t, s, store.ListParams{Tenant: "tenant-a", Owner: "alice", Agent: c.agent})
		checkList(t, call, r, newestFirst(stored(t, s, c.want...)))
	}
}

func testListUpdatedAfter(t *testing.T, s store.Store) {
	var cut time.Time
	for _, id := range []string{"old1", "old2", "old3"} {
		if u := mustCreate(t, s, bareTask(id), nil).UpdatedAt; u.After(cut) {
			cut = u
		}
	}
	waitTick(cut)
	mustCreate(t, s, bareTask("new1"), nil)
	mustCreate(t, s, bareTask("new2"), nil)

	p := store.ListParams{Tenant: "tenant-a", Owner: "alice", UpdatedAfter: cut}
	call := fmt.Sprintf("ListTasks(UpdatedAfter %v)", cut)
	checkList(t, call, listAll(t, s, p), newestFirst(stored(t, s, "new1", "new2")))

	// Updating an old task moves it past the cut.
	waitTick(cut)
	mustUpdate(t, s, mustGet(t, s, "old2"), nil)
	checkList(t, call+" after updating old2", listAll(t, s, p), newestFirst(stored(t, s, "new1", "new2", "old2")))

	// A cut before everything keeps everything.
	p.UpdatedAfter = mustGet(t, s, "old1").CreatedAt.Add(-time.Hour)
	checkList(t, "ListTasks(UpdatedAfter an hour before)", listAll(t, s, p),
		newestFirst(stored(t, s, "old1", "old2", "old3", "new1", "new2")))
}

func testListOrder(t *testing.T, s store.Store) {
	// Created in the order a, c, b, a clock tick apart: b is newest
	// although c has the greater ID.
	prev := mustCreate(t, s, bareTask("a"), nil)
	waitTick(prev.UpdatedAt)
	prev = mustCreate(t, s, bareTask("c"), nil)
	waitTick(prev.UpdatedAt)
	prev = mustCreate(t, s, bareTask("b"), nil)
	p := store.ListParams{Tenant: "tenant-a", Owner: "alice"}
	checkList(t, "ListTasks()", listAll(t, s, p), stored(t, s, "b", "c", "a"))

	// Updating a makes it the newest.
	waitTick(prev.UpdatedAt)
	mustUpdate(t, s, mustGet(t, s, "a"), nil)
	checkList(t, `ListTasks() after updating "a"`, listAll(t, s, p), stored(t, s, "a", "b", "c"))

	// Tasks written within one clock tick tie on UpdatedAt and are then
	// ordered by ID, descending.
	all := []string{"a", "b", "c"}
	for i := range 20 {
		id := fmt.Sprintf("burst-%02d", (i*7)%20)
		mustCreate(t, s, bareTask(id), nil)
		all = append(all, id)
	}
	checkList(t, "ListTasks() after a burst", listAll(t, s, p), newestFirst(stored(t, s, all...)))
}

func testListReturnsStored(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("full"), entries("m", 2))
	mustCreate(t, s, bareTask("bare"), nil)
	r := listAll(t, s, store.ListParams{Tenant: "tenant-a", Owner: "alice"})
	if len(r.Tasks) != 2 {
		t.Fatalf("ListTasks() = %v, want 2 tasks", ids(r.Tasks))
	}
	for _, got := range r.Tasks {
		checkTask(t, fmt.Sprintf("ListTasks() task %q", got.ID), got, mustGet(t, s, got.ID))
	}
}

func testListPaging(t *testing.T, s store.Store) {
	const n = 23
	var all []string
	for i := range n {
		id := fmt.Sprintf("t%02d", (i*11)%n)
		tk := bareTask(id)
		if i%3 == 0 {
			tk.State = a2a.TaskStateCompleted
		}
		mustCreate(t, s, tk, nil)
		all = append(all, id)
	}
	// Bump a few so that UpdatedAt and ID orders disagree.
	for _, id := range []string{"t03", "t17", "t00"} {
		mustUpdate(t, s, mustGet(t, s, id), nil)
	}
	mustCreate(t, s, task("other", "tenant-a", "bob", "c", a2a.TaskStateWorking), nil)

	for _, c := range []struct {
		state    a2a.TaskState
		pageSize int
	}{
		{"", 5}, {"", 1}, {"", 22}, {"", 23}, {"", 24}, {a2a.TaskStateCompleted, 3}, {a2a.TaskStateWorking, 4},
	} {
		p := store.ListParams{Tenant: "tenant-a", Owner: "alice", State: c.state, PageSize: c.pageSize}
		var want []*store.Task
		for _, tk := range stored(t, s, all...) {
			if c.state == "" || tk.State == c.state {
				want = append(want, tk)
			}
		}
		want = newestFirst(want)
		call := fmt.Sprintf("ListTasks(state %q, page size %d)", c.state, c.pageSize)

		var got []string
		seen := map[string]bool{}
		for page := 1; ; page++ {
			if page > len(want)+1 {
				t.Fatalf("%s: more than %d pages", call, len(want)+1)
			}
			r := mustList(t, s, p)
			if r.TotalSize != len(want) {
				t.Errorf("%s page %d TotalSize = %d, want %d", call, page, r.TotalSize, len(want))
			}
			if len(r.Tasks) > c.pageSize {
				t.Errorf("%s page %d = %d tasks, want at most %d", call, page, len(r.Tasks), c.pageSize)
			}
			for _, tk := range r.Tasks {
				if seen[tk.ID] {
					t.Errorf("%s page %d: task %q listed twice", call, page, tk.ID)
				}
				seen[tk.ID] = true
				got = append(got, tk.ID)
			}
			if r.Next == nil {
				break
			}
			if len(r.Tasks) != c.pageSize {
				t.Errorf("%s page %d = %d tasks with a Next, want a full page of %d", call, page, len(r.Tasks), c.pageSize)
			}
			p.After = r.Next
		}
		if w := ids(want); !slices.Equal(got, w) {
			t.Errorf("%s visited %v, want %v", call, got, w)
		}
	}
}

func testListLastPage(t *testing.T, s store.Store) {
	for i := range 10 {
		mustCreate(t, s, bareTask(fmt.Sprintf("t%d", i)), nil)
	}
	p := store.ListParams{Tenant: "tenant-a", Owner: "alice", PageSize: 5}
	r := mustList(t, s, p)
	if len(r.Tasks) != 5 || r.Next == nil {
		t.Fatalf("ListTasks(page 1 of 2) = %d tasks, Next %v, want 5 and a Next", len(r.Tasks), r.Next)
	}
	p.After = r.Next
	r = mustList(t, s, p)
	if len(r.Tasks) != 5 || r.Next != nil {
		t.Errorf("ListTasks(page 2 of 2) = %d tasks, Next %+v, want 5 and nil", len(r.Tasks), r.Next)
	}

	p = store.ListParams{Tenant: "tenant-a", Owner: "alice", PageSize: 10}
	if r := mustList(t, s, p); len(r.Tasks) != 10 || r.Next != nil || r.TotalSize != 10 {
		t.Errorf("ListTasks(one exact page) = %d tasks, Next %+v, TotalSize %d, want 10, nil, 10", len(r.Tasks), r.Next, r.TotalSize)
	}
}

func testListEmpty(t *testing.T, s store.Store) {
	p := store.ListParams{Tenant: "tenant-a", Owner: "alice", PageSize: 10}
	r := mustList(t, s, p)
	if len(r.Tasks) != 0 || r.TotalSize != 0 || r.Next != nil {
		t.Errorf("ListTasks(empty store) = %v, TotalSize %d, Next %v, want none, 0, nil", ids(r.Tasks), r.TotalSize, r.Next)
	}
	mustCreate(t, s, bareTask("t1"), nil)
	p.Owner = "bob"
	r = mustList(t, s, p)
	if len(r.Tasks) != 0 || r.TotalSize != 0 || r.Next != nil {
		t.Errorf("ListTasks(owner bob) = %v, TotalSize %d, Next %v, want none, 0, nil", ids(r.Tasks), r.TotalSize, r.Next)
	}
}

// testListTotals holds TotalSize (and CountOpen) to the tasks that match,
// by every filter, as tasks are created, change state and are deleted:
// a driver that keeps counts beside the tasks keeps them in step.
func testListTotals(t *testing.T, s store.Store) {
	var created []string
	for i := range 14 {
		tk := task(fmt.Sprintf("t%02d", i), "tenant-a", "alice", fmt.Sprintf("c%d", i%3), a2a.TaskStateWorking)
		tk.Agent = []string{"expense", "script"}[i%2]
		switch i {
		case 11:
			tk.Owner = "bob"
		case 12:
			tk.State = a2a.TaskStateSubmitted
		case 13:
			tk.State = otherState // listed, and counted, by its state only
		}
		mustCreate(t, s, tk, nil)
		created = append(created, tk.ID)
		waitTick(time.Now()) // UpdatedAt apart, for UpdatedAfter
	}
	check := func(step string) {
		t.Helper()
		var tasks []*store.Task
		for _, id := range created {
			if tk, err := s.GetTask(ctx(t), id); err == nil {
				tasks = append(tasks, tk)
			}
		}
		CheckTotals(t, s, tasks)
		open := 0
		for _, tk := range tasks {
			if tk.Owner == "alice" && !slices.Contains(store.TerminalStates, string(tk.State)) {
				open++
			}
		}
		if n, err := s.CountOpen(ctx(t), "tenant-a", "alice"); err != nil || n != open {
			t.Errorf("%s: CountOpen = %d, %v; want %d", step, n, err, open)
		}
	}
	check("after the creates")
	for i, id := range []string{"t00", "t01", "t02", "t03", "t04", "t05", "t06", "t12", "t13"} {
		tk := mustGet(t, s, id)
		tk.State = []a2a.TaskState{a2a.TaskStateInputRequired, a2a.TaskStateCompleted, a2a.TaskStateFailed}[i%3]
		mustUpdate(t, s, tk, nil)
	}
	tk := mustGet(t, s, "t07")
	mustUpdate(t, s, tk, nil) // a change that keeps the state
	tk = mustGet(t, s, "t00")
	tk.State = a2a.TaskStateWorking // back again
	mustUpdate(t, s, tk, nil)
	tk = mustGet(t, s, "t08")
	tk.State = otherState // to a state without a count
	mustUpdate(t, s, tk, nil)
	check("after the changes of state")
	n, err := s.DeleteFinished(ctx(t), time.Now().Add(time.Hour), 100)
	if err != nil || n == 0 {
		t.Fatalf("DeleteFinished = %d, %v; want the finished tasks deleted", n, err)
	}
	check("after the deletes")
}

// otherState is a state no A2A task is in: a store keeps it as it keeps
// any, and a listing that names no state lists none of its tasks.
const otherState a2a.TaskState = "TASK_STATE_OTHER"

// CheckTotals fails t unless every ListTasks of the callers (tenant and
// owner) of tasks, by each of their agents and by none, each state of
// store.TaskStates, a state outside them and none, in the context of the
// first of tasks and in none, updated after the middle of their UpdatedAt
// and at any time, has the TotalSize of the tasks it lists from tasks:
// tasks must be every task s holds for those callers, as stored. (A
// listing that names neither a state nor a context lists the tasks of
// store.TaskStates only.)
// A driver's tests use it to check the counts it keeps, after a migration
// that builds them.
func CheckTotals(t testing.TB, s store.Store, tasks []*store.Task) {
	t.Helper()
	type caller struct{ tenant, owner string }
	var callers []caller
	agents := []string{""}
	var times []time.Time
	for _, tk := range tasks {
		if c := (caller{tk.Tenant, tk.Owner}); !slices.Contains(callers, c) {
			callers = append(callers, c)
		}
		if !slices.Contains(agents, tk.Agent) {
			agents = append(agents, tk.Agent)
		}
		times = append(times, tk.UpdatedAt)
	}
	contexts, after := []string{""}, []time.Time{{}}
	if len(tasks) > 0 {
		slices.SortFunc(times, time.Time.Compare)
		contexts, after = append(contexts, tasks[0].ContextID), append(after, times[len(times)/2])
	}
	states := append([]a2a.TaskState{"", otherState}, a2aStates()...)
	for _, c := range callers {
		for _, agent := range agents {
			for _, state := range states {
				for _, contextID := range contexts {
					for _, since := range after {
						p := store.ListParams{Tenant: c.tenant, Owner: c.owner, Agent: agent, State: state, ContextID: contextID, UpdatedAfter: since, PageSize: 2}
						want := 0
						for _, tk := range tasks {
							if tk.Tenant == c.tenant && tk.Owner == c.owner && (agent == "" || tk.Agent == agent) &&
								(state == tk.State || state == "" && (contextID != "" || slices.Contains(store.TaskStates, string(tk.State)))) &&
								(contextID == "" || tk.ContextID == contextID) && tk.UpdatedAt.After(since) {
								want++
							}
						}
						r, err := s.ListTasks(context.Background(), p)
						if err != nil {
							t.Fatalf("ListTasks(%+v) = %v, want nil", p, err)
						}
						if r.TotalSize != want {
							t.Errorf("ListTasks(tenant %q, owner %q, agent %q, state %q, context %q, updated after %v) TotalSize = %d, want %d",
								c.tenant, c.owner, agent, string(state), contextID, since.Format(time.RFC3339Nano), r.TotalSize, want)
						}
					}
				}
			}
		}
	}
}

// CountedTasks are the tasks a driver's test of the migration that builds
// its counts puts in a database of the schema before it (as that schema's
// rows: ID, ContextID, Tenant, Owner, Agent, State, Version 1 and UpdatedAt
// set, of two callers and three agents, in every state of store.TaskStates
// and one outside them), for CheckCountsFollow once it is migrated.
func CountedTasks() []*store.Task {
	states := append(a2aStates(), otherState)
	out := make([]*store.Task, 40)
	for i := range out {
		out[i] = &store.Task{
			ID: fmt.Sprintf("old-%02d", i), ContextID: fmt.Sprintf("ctx-%d", i%4), Tenant: "tenant",
			Owner: []string{"alice", "bob"}[i%2], Agent: []string{"expense", "script", "echo"}[i%3],
			State: states[i%len(states)], Version: 1, UpdatedAt: ListBenchStart.Add(time.Duration(i) * time.Millisecond),
		}
	}
	return out
}

// CheckCountsFollow fails t unless, in s migrated from a database that
// held CountedTasks, every listing has its exact total (CheckTotals), and
// still has it after changes of state, a create and DeleteFinished.
func CheckCountsFollow(t *testing.T, s store.Store) {
	t.Helper()
	var ids []string
	for _, tk := range CountedTasks() {
		ids = append(ids, tk.ID)
	}
	check := func() {
		t.Helper()
		var tasks []*store.Task
		for _, id := range ids {
			if tk, err := s.GetTask(ctx(t), id); err == nil {
				tasks = append(tasks, tk)
			} else if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("GetTask(%q) = %v, want nil", id, err)
			}
		}
		CheckTotals(t, s, tasks)
	}
	check()
	for i, id := range ids[:10] {
		tk := mustGet(t, s, id)
		tk.State = a2a.TaskState(store.TaskStates[(i+3)%len(store.TaskStates)])
		mustUpdate(t, s, tk, nil)
	}
	mustCreate(t, s, &store.Task{ID: "new", ContextID: "ctx-0", Tenant: "tenant", Owner: "alice", Agent: "expense", State: a2a.TaskStateWorking}, nil)
	ids = append(ids, "new")
	if n, err := s.DeleteFinished(ctx(t), ListBenchStart.Add(20*time.Millisecond), 100); err != nil || n == 0 {
		t.Fatalf("DeleteFinished = %d, %v; want some of the old finished tasks deleted", n, err)
	}
	check()
}

// a2aStates are store.TaskStates as a2a.TaskState values.
func a2aStates() []a2a.TaskState {
	out := make([]a2a.TaskState, len(store.TaskStates))
	for i, s := range store.TaskStates {
		out[i] = a2a.TaskState(s)
	}
	return out
}

// testListNoTotal: with NoTotal a page is the same page, with TotalSize 0.
func testListNoTotal(t *testing.T, s store.Store) {
	for i := range 5 {
		mustCreate(t, s, bareTask(fmt.Sprintf("t%d", i)), nil)
	}
	p := store.ListParams{Tenant: "tenant-a", Owner: "alice", PageSize: 3}
	with := mustList(t, s, p)
	p.NoTotal = true
	without := mustList(t, s, p)
	if !slices.Equal(ids(with.Tasks), ids(without.Tasks)) || without.TotalSize != 0 || with.TotalSize != 5 {
		t.Errorf("ListTasks with NoTotal = %v (total %d); without = %v (total %d); want the same page, total 0 and 5",
			ids(without.Tasks), without.TotalSize, ids(with.Tasks), with.TotalSize)
	}
	p.After, p.PageSize = with.Next, 10
	if r := mustList(t, s, p); len(r.Tasks) != 2 || r.TotalSize != 0 {
		t.Errorf("the next page with NoTotal = %v (total %d); want 2 tasks, total 0", ids(r.Tasks), r.TotalSize)
	}
}

// testListEveryState: a listing that names no state lists the tasks of
// every state a task is stored in (a driver may read each state apart),
// newest first across them.
func testListEveryState(t *testing.T, s store.Store) {
	states := []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
		a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected}
	if len(states) != len(store.TaskStates) {
		t.Fatalf("store.TaskStates has %d states, A2A %d", len(store.TaskStates), len(states))
	}
	var created []string
	for i, st := range states {
		for j := range 2 {
			id := fmt.Sprintf("t%d-%d", i, j)
			mustCreate(t, s, task(id, "tenant-a", "alice", "c", st), nil)
			created = append(created, id)
		}
	}
	want := newestFirst(stored(t, s, created...))
	checkList(t, "ListTasks(every state)", listAll(t, s, store.ListParams{Tenant: "tenant-a", Owner: "alice", Agent: "echo"}), want)
	// Paged three at a time, across the states.
	p := store.ListParams{Tenant: "tenant-a", Owner: "alice", Agent: "echo", PageSize: 3}
	var got []string
	for range len(want) {
		r := mustList(t, s, p)
		got = append(got, ids(r.Tasks)...)
		if r.Next == nil {
			break
		}
		p.After = r.Next
	}
	if w := ids(want); !slices.Equal(got, w) {
		t.Errorf("ListTasks(every state) in pages of 3 = %v, want %v", got, w)
	}
}
