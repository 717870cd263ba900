package postgres

import (
	"strconv"
	"strings"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/listing"
)

// countShards is how many rows of task_counts each caller's tasks of an
// agent are counted in (migration 0007): a write adds to the row of its
// connection's shard, so that writers on different connections seldom
// wait for each other's commit on one row.
const countShards = 64

// addCounts is the statement, for a CTE, that adds to task_counts what
// the rows of from change: for each row of from (tenant, owner, agent and
// the expressions), delta(state) tasks in each state of store.TaskStates,
// in the row of this connection's shard. from is what follows the
// expressions in the SELECT (FROM, WHERE, GROUP BY and ORDER BY: a
// statement that writes the rows of several callers writes them in key
// order, so that two such never deadlock).
func addCounts(delta func(state string) string, from string) string {
	cols := make([]string, len(store.TaskStates))
	deltas := make([]string, len(store.TaskStates))
	sets := make([]string, len(store.TaskStates))
	for i, s := range store.TaskStates {
		c := listing.CountColumn(s)
		cols[i], deltas[i], sets[i] = c, delta(s), c+" = c."+c+" + excluded."+c
	}
	return `
		INSERT INTO task_counts AS c (tenant, owner, agent, shard, ` + strings.Join(cols, ", ") + `)
		SELECT tenant, owner, agent, pg_backend_pid() % ` + strconv.Itoa(countShards) + `, ` + strings.Join(deltas, ", ") + `
		` + from + `
		ON CONFLICT (tenant, owner, agent, shard) DO UPDATE SET ` + strings.Join(sets, ", ")
}

// isState is the SQL of whether the state column of a row of table is
// state, as an integer (1 or 0).
func isState(table, state string) string {
	return "(" + table + ".state = '" + state + "')::int"
}

// knownStates is the SQL list of store.TaskStates, for IN.
var knownStates = "('" + strings.Join(store.TaskStates, "', '") + "')"
