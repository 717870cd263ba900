// Package listing writes the statements of ListTasks for the SQL drivers,
// in one shape for both; each driver gives its dialect (Dialect).
//
// The drivers' list index is tasks_list (tenant, owner, agent, state,
// updated_at DESC, id DESC). A listing by state is one range of it, from
// the cursor on (a row-value range, so that a later page costs what the
// first does); a listing of every state merges the first rows of each
// state's range (store.TaskStates), each of them in the listing's order. A
// listing in a context reads the context's index (its tasks are few) and
// sorts them.
//
// The drivers keep in task_counts, per tenant, owner and agent (on
// PostgreSQL in several rows of each, its shards, summed), how many tasks
// are in each of the states they count (Dialect.Counted), one column a
// state (CountColumn), and on PostgreSQL how many are in the others of
// store.TaskStates, the open ones, in one column (Dialect.Open), in the
// transaction of every write that creates a task, moves it into or out of
// a counted state, or deletes it. The total of a listing that names no
// context and no time is read from there, and for a listing by one of the
// open states from its range when that is short, else as the open tasks'
// count less the other open states' tasks, counted from their ranges (in
// bounded steps, Dialect.Bounds); any other listing is counted from the
// same ranges as its page. A count from the index reads no task's row.
package listing

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/askpoint/askpoint/store"
)

// Dialect is what a driver's SQL differs in.
type Dialect struct {
	// Param is the placeholder of the n-th argument (from 1), which every
	// statement may use more than once: "?3", "$3".
	Param func(n int) string
	// Time is a time argument as the driver stores times.
	Time func(time.Time) any
	// ByContext names the table read by context ("tasks", or with an index
	// hint for a planner without statistics).
	ByContext string
	// Int casts an expression to an integer where the sum of a bigint column
	// would not be one ("::bigint"; "" when it is).
	Int string
	// Cols are the columns of a page's rows.
	Cols string
	// Counted are the states of store.TaskStates whose tasks task_counts
	// counts, one column each.
	Counted []string
	// Open is the column of task_counts that counts together the tasks of
	// the other states of store.TaskStates, the open ones ("" when Counted
	// holds them all). A listing by one of those states is counted in
	// steps, one per Bound, until one is exact: its range up to Own tasks,
	// exact when it holds fewer; else the other open states' ranges up to
	// Others, which when they hold fewer give its total as the open tasks'
	// count less theirs. When no step is, its whole range is counted.
	Open   string
	Bounds []Bound
}

// Bound is one step of the count of an open state's tasks (Dialect.Open):
// how many tasks of its range, and then of the other open states' ranges,
// it reads at most.
type Bound struct{ Own, Others int }

// CountColumn is the task_counts column that counts the tasks in state, one
// of store.TaskStates ("TASK_STATE_INPUT_REQUIRED": "input_required"), and
// "" for any other state, whose tasks are not counted there.
func CountColumn(state string) string {
	if !slices.Contains(store.TaskStates, state) {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(state, "TASK_STATE_"))
}

// Queries are the statements of one ListTasks call and their arguments.
type Queries struct {
	Count, Page         string
	CountArgs, PageArgs []any
}

// Build writes the statements of a listing: the count of its matching
// tasks and its page (PageSize+1 rows, to tell whether more follow).
func Build(d Dialect, p store.ListParams) Queries {
	var args []any
	arg := func(v any) string { args = append(args, v); return d.Param(len(args)) }
	base := []string{"tenant = " + arg(p.Tenant), "owner = " + arg(p.Owner)}
	if p.Agent != "" {
		base = append(base, "agent = "+arg(p.Agent))
	}
	var filters []string // besides the state
	from := "tasks"
	if p.ContextID != "" {
		filters = append(filters, "context_id = "+arg(p.ContextID))
		from = d.ByContext
	}
	if !p.UpdatedAfter.IsZero() {
		filters = append(filters, "updated_at > "+arg(d.Time(p.UpdatedAfter)))
	}
	// The states read: the one asked for, or each (in one range each),
	// or, in a context, any.
	var states []string
	switch {
	case p.State != "":
		states = []string{arg(string(p.State))}
	case p.ContextID == "":
		for _, s := range store.TaskStates {
			states = append(states, "'"+s+"'")
		}
	}
	where := func(state string, more ...string) string {
		w := append(append(append([]string(nil), base...), filters...), more...)
		if state != "" {
			w = append(w, "state = "+state)
		}
		return strings.Join(w, " AND ")
	}

	// rangeCount counts the tasks of the given states' ranges (all states,
	// in a context) from the index.
	rangeCount := func(states []string) string {
		if len(states) <= 1 {
			state := ""
			if len(states) == 1 {
				state = states[0]
			}
			return "SELECT count(*) FROM " + from + " WHERE " + where(state)
		}
		counts := make([]string, len(states))
		for i, s := range states {
			counts[i] = "SELECT count(*) AS n FROM tasks WHERE " + where(s)
		}
		return "SELECT coalesce(sum(n), 0)" + d.Int + " FROM (" + strings.Join(counts, " UNION ALL ") + ") AS c"
	}
	// sumOf sums the counts of task_counts's columns.
	sumOf := func(columns []string) string {
		return "SELECT coalesce(sum(" + strings.Join(columns, " + ") + "), 0)" + d.Int + " FROM task_counts WHERE " + strings.Join(base, " AND ")
	}
	// upTo counts the tasks of the states' ranges up to bound.
	upTo := func(states []string, bound int) string {
		reads := make([]string, len(states))
		for i, s := range states {
			reads[i] = "SELECT 1 FROM tasks WHERE " + where(s)
		}
		return "SELECT count(*) AS n FROM (" + strings.Join(reads, " UNION ALL ") + " LIMIT " + strconv.Itoa(bound) + ") AS r"
	}
	var open, others []string // the states Open counts, and those of them not asked for
	for _, s := range store.TaskStates {
		if d.Open != "" && !slices.Contains(d.Counted, s) {
			open = append(open, s)
			if s != string(p.State) {
				others = append(others, "'"+s+"'")
			}
		}
	}
	var q Queries
	switch {
	case len(filters) == 0 && (p.State == "" || slices.Contains(d.Counted, string(p.State))):
		// From task_counts, and for a listing of every state the states
		// it does not count from their ranges.
		counted, uncounted := []string{CountColumn(string(p.State))}, []string(nil)
		if p.State == "" {
			counted = nil
			for _, s := range store.TaskStates {
				switch {
				case slices.Contains(d.Counted, s):
					counted = append(counted, CountColumn(s))
				case d.Open == "":
					uncounted = append(uncounted, "'"+s+"'")
				}
			}
			if d.Open != "" {
				counted = append(counted, d.Open)
			}
		}
		q.Count = sumOf(counted)
		if len(uncounted) > 0 {
			q.Count = "SELECT (" + q.Count + ") + (" + rangeCount(uncounted) + ")"
		}
		q.CountArgs = append([]any(nil), args[:len(base)]...) // not the state's
	case len(filters) == 0 && slices.Contains(open, string(p.State)):
		// In steps (Dialect.Bounds), else from its whole range.
		if len(others) == 0 {
			q.Count = sumOf([]string{d.Open})
			q.CountArgs = append([]any(nil), args[:len(base)]...)
			break
		}
		if len(d.Bounds) == 0 {
			q.Count = rangeCount(states)
			break
		}
		var ctes, steps []string
		for i, b := range d.Bounds {
			own, rest := "own"+strconv.Itoa(i), "others"+strconv.Itoa(i)
			ctes = append(ctes, own+" AS ("+upTo(states, b.Own)+")", rest+" AS ("+upTo(others, b.Others)+")")
			steps = append(steps,
				"WHEN (SELECT n FROM "+own+") < "+strconv.Itoa(b.Own)+" THEN (SELECT n FROM "+own+")",
				"WHEN (SELECT n FROM "+rest+") < "+strconv.Itoa(b.Others)+" THEN ("+sumOf([]string{d.Open})+") - (SELECT n FROM "+rest+")")
		}
		q.Count = "WITH " + strings.Join(ctes, ", ") + " SELECT (CASE " + strings.Join(steps, " ") + " ELSE (" + rangeCount(states) + ") END)" + d.Int
	default:
		q.Count = rangeCount(states)
	}
	if q.CountArgs == nil {
		q.CountArgs = append([]any(nil), args...)
	}

	var after []string
	if c := p.After; c != nil {
		after = append(after, "(updated_at, id) < ("+arg(d.Time(c.UpdatedAt))+", "+arg(c.ID)+")")
	}
	limit := arg(p.PageSize + 1)
	const order = " ORDER BY updated_at DESC, id DESC LIMIT "
	if len(states) <= 1 {
		state := ""
		if len(states) == 1 {
			state = states[0]
		}
		q.Page = "SELECT " + d.Cols + " FROM " + from + " WHERE " + where(state, after...) + order + limit
	} else {
		pages := make([]string, len(states))
		for i, s := range states {
			pages[i] = "SELECT * FROM (SELECT " + d.Cols + " FROM tasks WHERE " + where(s, after...) + order + limit + ") AS s" + strconv.Itoa(i)
		}
		q.Page = strings.Join(pages, " UNION ALL ") + order + limit
	}
	q.PageArgs = args
	return q
}
