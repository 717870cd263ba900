package postgres

import (
	"slices"
	"strings"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/listing"
)

// countedStates are the states whose tasks task_counts counts here one
// column each (migration 0007): the terminal ones, whose tasks pile up
// until retention deletes them. The tasks of the other states of
// store.TaskStates, the open ones, are counted together in one column,
// openColumn (migration 0008): a task enters the open states once, as it
// is created, and leaves them once, as it finishes, in the statement that
// writes its finished state's count, so a round trip writes one count more
// than 0007's, in its CreateTask; counting each open state would write two
// more in every round trip, one each time the task pauses and resumes
// (docs/decisions/0160). A listing by one open state takes the others,
// counted from their index ranges, from the open tasks' count when its own
// range is long (listing.Dialect.Open).
var countedStates = store.TerminalStates

// openStates are the states of store.TaskStates counted together in
// openColumn.
var openStates = slices.DeleteFunc(slices.Clone(store.TaskStates), func(s string) bool { return slices.Contains(countedStates, s) })

// openColumn is the column of task_counts that counts the tasks in
// openStates.
const openColumn = "open_tasks"

// shard is the SQL of the row of task_counts a write adds to, of the
// caller's and agent's: its connection's, so that writers on different
// connections, of any node, seldom wait for each other's commit on one row.
// A total is the sum of the shards; a shard's count may be negative.
const shard = `pg_backend_pid() % 64`

// countCol is a column of task_counts: its name, and the SQL of whether
// the state a given SQL expression holds is counted in it, as an integer
// (1 or 0).
type countCol struct {
	name string
	is   func(state string) string
}

// countCols are the columns of task_counts: one per counted state, then
// openColumn.
var countCols = func() []countCol {
	var cs []countCol
	for _, s := range countedStates {
		cs = append(cs, countCol{listing.CountColumn(s), func(e string) string { return "(" + e + " = '" + s + "')::int" }})
	}
	return append(cs, countCol{openColumn, func(e string) string { return "(" + e + " IN " + openIn + ")::int" }})
}()

// addCounts is the INSERT, for a CTE, that adds to task_counts, in this
// connection's shard, delta(column) tasks in each column for each row of
// from (the FROM of a SELECT giving tenant, owner and agent, and what
// follows it). A statement that adds to several callers' and agents' rows
// orders from by them, so that two such never deadlock; every other adds
// to one row.
func addCounts(delta func(c countCol) string, from string) string {
	cols, deltas, sets := make([]string, len(countCols)), make([]string, len(countCols)), make([]string, len(countCols))
	for i, c := range countCols {
		cols[i], deltas[i] = c.name, delta(c)
		sets[i] = c.name + " = k." + c.name + " + excluded." + c.name
	}
	return `
		INSERT INTO task_counts AS k (tenant, owner, agent, shard, ` + strings.Join(cols, ", ") + `)
		SELECT tenant, owner, agent, ` + shard + `, ` + strings.Join(deltas, ", ") + `
		` + from + `
		ON CONFLICT (tenant, owner, agent, shard) DO UPDATE SET ` + strings.Join(sets, ", ")
}

// countsMove is the SQL of whether a task moving from state from to state
// to (SQL expressions) changes a count: whether some column counts one of
// them and not the other.
func countsMove(from, to string) string {
	moves := make([]string, len(countCols))
	for i, c := range countCols {
		moves[i] = c.is(from) + " <> " + c.is(to)
	}
	return "(" + strings.Join(moves, " OR ") + ")"
}

// counted says whether task_counts counts the tasks in state in a column
// of its own.
func counted(state string) bool { return slices.Contains(countedStates, state) }

// isOpen says whether task_counts counts the tasks in state in openColumn.
func isOpen(state string) bool { return slices.Contains(openStates, state) }

// countColumn is the column of task_counts that counts the tasks in state,
// or "" for a state none counts (one outside store.TaskStates).
func countColumn(state string) string {
	switch {
	case counted(state):
		return listing.CountColumn(state)
	case isOpen(state):
		return openColumn
	}
	return ""
}

// countedIn and openIn are the SQL lists of countedStates and openStates,
// for IN.
var (
	countedIn = "('" + strings.Join(countedStates, "', '") + "')"
	openIn    = "('" + strings.Join(openStates, "', '") + "')"
)
