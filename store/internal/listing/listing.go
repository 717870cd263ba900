// Package listing writes the statements of ListTasks for the SQL drivers,
// in one shape for both; each driver gives its dialect (Dialect).
//
// The drivers' list index is tasks_list (tenant, owner, agent, state,
// updated_at DESC, id DESC). A listing by state is one range of it, from
// the cursor on (a row-value range, so that a later page costs what the
// first does); a listing of every state merges the first rows of each
// state's range (store.TaskStates), each of them in the listing's order. A
// listing in a context reads the context's index (its tasks are few) and
// sorts them. The total is the sum of task_counts rows (per tenant, owner
// and agent) when the driver keeps them and the listing names no state,
// context or time; otherwise the tasks are counted, from the same ranges,
// without reading a task's row.
package listing

import (
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
	// Counts says the driver keeps task_counts (SQLite: triggers in the
	// transaction that creates or deletes a task); without it a total is
	// counted from the index.
	Counts bool
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

	var q Queries
	switch {
	case d.Counts && p.State == "" && len(filters) == 0:
		q.Count = "SELECT coalesce(sum(n), 0)" + d.Int + " FROM task_counts WHERE " + strings.Join(base, " AND ")
	case len(states) <= 1:
		state := ""
		if len(states) == 1 {
			state = states[0]
		}
		q.Count = "SELECT count(*) FROM " + from + " WHERE " + where(state)
	default:
		counts := make([]string, len(states))
		for i, s := range states {
			counts[i] = "SELECT count(*) AS n FROM tasks WHERE " + where(s)
		}
		q.Count = "SELECT coalesce(sum(n), 0)" + d.Int + " FROM (" + strings.Join(counts, " UNION ALL ") + ") AS c"
	}
	q.CountArgs = append([]any(nil), args...)

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
