package postgres

import (
	"context"
	"fmt"
	"time"
)

const terminalIn = `('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')`

// CountOpen counts owner's tasks of tenant that are not terminal.
func (s *Store) CountOpen(ctx context.Context, tenant, owner string) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM tasks WHERE tenant = $1 AND owner = $2 AND state NOT IN `+terminalIn, tenant, owner).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: CountOpen(%q): %w", owner, err)
	}
	return n, nil
}

// deleteFinishedSQL deletes the tasks with their logs and takes them from
// their counts, in one statement. The log has no foreign key on its task
// (migration 0009), so it goes here, from the same snapshot: a task whose
// log another transaction appended to after it was taken has a newer
// updated_at, which the row lock's recheck sees, and is not deleted.
var deleteFinishedSQL = `
	WITH d AS (
		DELETE FROM tasks WHERE id IN (
			SELECT id FROM tasks WHERE state IN ` + terminalIn + ` AND updated_at < $1
			ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING key, tenant, owner, agent, state
	), l AS (
		DELETE FROM task_log USING d WHERE task_log.task_key = d.key
	), c AS (` + addCounts(func(c countCol) string { return "-sum(" + c.is("d.state") + ")" },
	"FROM d GROUP BY tenant, owner, agent ORDER BY tenant, owner, agent") + `
	)
	SELECT count(*) FROM d`

// DeleteFinished deletes up to limit terminal tasks last updated before
// before, with their log; their push configurations go with them (ON
// DELETE CASCADE). Rows locked by a writer are skipped, for a later round.
func (s *Store) DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int
	if err := s.pool.QueryRow(ctx, deleteFinishedSQL, before, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: DeleteFinished: %w", err)
	}
	return n, nil
}
