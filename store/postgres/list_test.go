package postgres

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/listing"
	"github.com/askpoint/askpoint/store/storetest"
)

// TestListTasksReadsIndexRanges holds ListTasks's statement to its query
// plan (EXPLAIN), so that a listing costs its page, not the tasks held
// (issue 30, item 7: a page of 100 took seconds at 100,000 tasks): every
// read of tasks is an index scan of tasks_list whose condition holds every
// filter and the cursor (one per state when no state is named, merged in
// the listing's order by a Merge Append), without a filter or a sort. The
// total of a listing of every state, or by a finished one, is read from
// task_counts alone (a few rows however many tasks there are); that of a
// listing by an open state from its range and the other open states', in
// bounded steps, and task_counts; that of a filter the counts do not hold
// is counted from its ranges; all by index-only scans.
// Sequential scans, bitmap scans and sorts are priced out, as a table of
// millions of rows prices them, so that the plan of an empty test table
// says which index can serve the statement. See BenchmarkListTasks for the
// figures.
func TestListTasksReadsIndexRanges(t *testing.T) {
	s := open(t, dbtest.Schema(t))
	after := &store.Cursor{UpdatedAt: time.UnixMilli(1_700_000_000_000), ID: "task-5"}
	base := store.ListParams{Tenant: "tenant", Owner: "alice", Agent: "expense", PageSize: 100}
	with := func(f func(*store.ListParams)) store.ListParams { p := base; f(&p); return p }
	// EXPLAIN shows the arguments.
	const agentState = "(agent = 'expense'::text) AND (state = "
	const counts, ranges = "Index Scan using task_counts_pkey on task_counts", "Index Only Scan using tasks_list"
	openStates := len(store.TaskStates) - len(store.TerminalStates)
	for _, tc := range []struct {
		name   string
		p      store.ListParams
		cond   string // what each scan's index condition holds
		reads  int    // the scans of tasks_list for the page
		counts bool   // whether the total reads task_counts
		ranges int    // the ranges of tasks_list the total counts
	}{
		{"first page", base, agentState, len(store.TaskStates), true, 0},
		{"a later page", with(func(p *store.ListParams) { p.After = after }), "::text) AND (ROW(updated_at, id) < ROW(", len(store.TaskStates), true, 0},
		{"by a finished state", with(func(p *store.ListParams) { p.State = a2a.TaskStateCompleted }), agentState + "'TASK_STATE_COMPLETED'::text))", 1, true, 0},
		{"a later page by a finished state", with(func(p *store.ListParams) { p.State = a2a.TaskStateCompleted; p.After = after }),
			agentState + "'TASK_STATE_COMPLETED'::text) AND (ROW(updated_at, id) < ROW(", 1, true, 0},
		// In each step its range up to a bound and the other open
		// states' up to theirs, then its whole range when all are long.
		{"by an open state", with(func(p *store.ListParams) { p.State = a2a.TaskStateInputRequired }), agentState + "'TASK_STATE_INPUT_REQUIRED'::text))", 1, true, len(listDialect.Bounds)*openStates + 1},
		{"by a state outside TaskStates", with(func(p *store.ListParams) { p.State = "TASK_STATE_OTHER" }), agentState + "'TASK_STATE_OTHER'::text))", 1, false, 1},
		{"changed since", with(func(p *store.ListParams) { p.UpdatedAfter = after.UpdatedAt }), "::text) AND (updated_at >", len(store.TaskStates), false, len(store.TaskStates)},
	} {
		q := listQuery(listDialect, tc.p)
		plan := explainPG(t, s, q.Page, q.PageArgs)
		const scan = "Index Scan using tasks_list on tasks"
		if strings.Count(plan, scan) != tc.reads || strings.Count(plan, tc.cond) < tc.reads ||
			strings.Contains(plan, "Sort  (") || strings.Contains(plan, "Filter:") || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s: the plan is\n%s\nwant %d of %q with %s in their index condition, no filter and no sort", tc.name, plan, tc.reads, scan, tc.cond)
		}
		count := explainPG(t, s, q.Count, q.CountArgs)
		if strings.Contains(count, counts) != tc.counts || strings.Count(count, ranges) != tc.ranges || strings.Contains(count, "Seq Scan") {
			t.Errorf("%s: the count's plan is\n%s\nwant task_counts read: %v, and %d ranges of tasks_list counted", tc.name, count, tc.counts, tc.ranges)
		}
	}
}

func explainPG(t *testing.T, s *Store, query string, args []any) string {
	t.Helper()
	tx := beginTx(t, s)
	defer tx.Rollback(t.Context())
	for _, set := range []string{"enable_seqscan", "enable_bitmapscan", "enable_sort"} {
		if _, err := tx.Exec(t.Context(), "SET LOCAL "+set+" = off"); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query(t.Context(), "EXPLAIN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", query, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		b.WriteString("  " + line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestUpgradeTo0007CountsTheTasksByState: a schema made before migration
// 0007 (no counts), with tasks of every state, is migrated in place to
// counts by state that give every listing its exact total and follow the
// writes after (storetest.CheckCountsFollow).
func TestUpgradeTo0007CountsTheTasksByState(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	olderSchema(t, url, 6, countedTasksSQL())
	storetest.CheckCountsFollow(t, open(t, url))
}

// countedTasksSQL is the INSERT of storetest.CountedTasks into tasks.
func countedTasksSQL() string {
	var values []string
	for _, tk := range storetest.CountedTasks() {
		values = append(values, fmt.Sprintf("('%s', '%s', '%s', '%s', '%s', '%s', %d, 0, to_timestamp(%d / 1000.0), to_timestamp(%d / 1000.0))",
			tk.ID, tk.ContextID, tk.Tenant, tk.Owner, tk.Agent, string(tk.State), tk.Version, tk.UpdatedAt.UnixMilli(), tk.UpdatedAt.UnixMilli()))
	}
	return `INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, created_at, updated_at) VALUES ` + strings.Join(values, ", ")
}

// TestUpgradeTo0008CountsTheOpenTasks: a schema made before migration 0008
// (finished tasks counted by 0007, open ones not), with tasks of every
// state, is migrated in place to counts of the open tasks too that give
// every listing its exact total, by whichever way a listing by an open
// state is counted, and follow the writes after.
func TestUpgradeTo0008CountsTheOpenTasks(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	// 0007 applied to the tasks, as a database that had them when it was.
	olderSchema(t, url, 6, countedTasksSQL(), ms[6].SQL, `INSERT INTO schema_migrations (version, name) VALUES (7, 'counts_by_state')`)
	s := open(t, url)
	s.list.Bounds = []listing.Bound{{Own: 0, Others: 1 << 30}} // the open tasks less the others
	storetest.CheckCountsFollow(t, s)
}

// TestListTasksCountsAnOpenStateEitherWay: a listing by an open state has
// its exact total whichever way it is counted (docs/decisions/0160): from
// its own range (a short one), as the open tasks' count less the other
// open states' ranges (a long one), or from its whole range (when the
// others are long too), with the counts kept by the writes, over tasks of
// every state that were created in it and moved between open states, into
// and out of finished ones and of a state outside store.TaskStates.
func TestListTasksCountsAnOpenStateEitherWay(t *testing.T) {
	t.Parallel()
	s := open(t, dbtest.Schema(t))
	var ids []string
	for _, tk := range storetest.CountedTasks() {
		if _, err := s.CreateTask(t.Context(), tk, nil); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	// Each task moves twice, to a state further on.
	for i, id := range ids {
		for _, step := range []int{3, 5} {
			tk, err := s.GetTask(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			states := append(slices.Clone(store.TaskStates), "TASK_STATE_OTHER")
			tk.State = a2a.TaskState(states[(i*step+step)%len(states)])
			if _, err := s.UpdateTask(t.Context(), tk, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	var tasks []*store.Task
	for _, id := range ids {
		tk, err := s.GetTask(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, tk)
	}
	const long = 1 << 30
	for _, b := range []struct {
		name   string
		bounds []listing.Bound
	}{
		{"its range", []listing.Bound{{Own: long, Others: long}}},
		{"the open tasks less the others", []listing.Bound{{Own: 0, Others: long}}},
		{"in a second step", []listing.Bound{{Own: 0, Others: 0}, {Own: 0, Others: long}}},
		{"its whole range", []listing.Bound{{Own: 0, Others: 0}}},
		{"its whole range, with no steps", nil},
	} {
		t.Run(b.name, func(t *testing.T) {
			s.list.Bounds = b.bounds
			storetest.CheckTotals(t, s, tasks)
		})
	}
}
