package postgres

import (
	"slices"
	"strings"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/listing"
)

// countedStates are the states whose tasks task_counts counts here
// (migration 0007): the terminal ones, whose tasks pile up until retention
// deletes them. A round trip moves a task into one of them once, so it
// writes one count; counting every state would write one more in each
// CreateTask and each change of state (about 2% of a round trip's CPU
// each, docs/decisions/0125). The tasks of the other states, the open
// ones, are counted from their index ranges.
var countedStates = store.TerminalStates

// shard is the SQL of the row of task_counts a write adds to, of the
// caller's and agent's: its connection's, so that writers on different
// connections, of any node, seldom wait for each other's commit on one row.
// A total is the sum of the shards; a shard's count may be negative.
const shard = `pg_backend_pid() % 64`

// stateCols are the columns of task_counts, one per counted state, and for
// each the SQL col(column, state), joined by commas.
func stateCols(col func(column, state string) string) (names, exprs string) {
	ns := make([]string, len(countedStates))
	es := make([]string, len(countedStates))
	for i, s := range countedStates {
		ns[i] = listing.CountColumn(s)
		es[i] = col(ns[i], s)
	}
	return strings.Join(ns, ", "), strings.Join(es, ", ")
}

// addCounts is the INSERT, for a CTE, that adds to task_counts, in this
// connection's shard, delta(state) tasks in each counted state for each
// row of from (the FROM of a SELECT giving tenant, owner and agent, and
// what follows it). A statement that adds to several callers' and agents'
// rows orders from by them, so that two such never deadlock; every other
// adds to one row.
func addCounts(delta func(state string) string, from string) string {
	cols, deltas := stateCols(func(_, s string) string { return delta(s) })
	_, sets := stateCols(func(c, _ string) string { return c + " = k." + c + " + excluded." + c })
	return `
		INSERT INTO task_counts AS k (tenant, owner, agent, shard, ` + cols + `)
		SELECT tenant, owner, agent, ` + shard + `, ` + deltas + `
		` + from + `
		ON CONFLICT (tenant, owner, agent, shard) DO UPDATE SET ` + sets
}

// isState is the SQL of whether column (a task's state) is state, as an
// integer (1 or 0).
func isState(column, state string) string {
	return "(" + column + " = '" + state + "')::int"
}

// counted says whether task_counts counts the tasks in state.
func counted(state string) bool { return slices.Contains(countedStates, state) }

// countedIn is the SQL list of countedStates, for IN.
var countedIn = "('" + strings.Join(countedStates, "', '") + "')"
