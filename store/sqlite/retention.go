package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/askpoint/askpoint/store"
)

const terminalIn = `('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED')`

// CountOpen counts owner's tasks of tenant that are not terminal.
func (s *Store) CountOpen(ctx context.Context, tenant, owner string) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM tasks WHERE tenant = ? AND owner = ? AND state NOT IN `+terminalIn, tenant, owner).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("sqlite: CountOpen(%q): %w", owner, err)
	}
	return n, nil
}

// DeleteFinished deletes up to limit terminal tasks last updated before
// before; their log and push configurations go with them (ON DELETE
// CASCADE).
func (s *Store) DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(b *batch) error {
		res, err := b.exec(`DELETE FROM tasks WHERE id IN (
			SELECT id FROM tasks WHERE state IN `+terminalIn+` AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
			before.UnixMilli(), limit)
		if err != nil {
			return fmt.Errorf("sqlite: DeleteFinished: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

var _ store.Store = (*Store)(nil)
