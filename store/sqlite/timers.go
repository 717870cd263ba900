package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/askpoint/askpoint/store"
)

// dueStmts returns the prepared statements of DueTasks and NextDue for
// timer: each timer column has its own partial index and statements.
func dueStmts(timer store.Timer) (due, next int, err error) {
	switch timer {
	case store.TimerWake:
		return stmtDueWake, stmtNextWake, nil
	case store.TimerHold:
		return stmtDueHold, stmtNextHold, nil
	}
	return 0, 0, fmt.Errorf("unknown timer %q", timer)
}

// DueTasks returns up to p.Limit tasks whose timer p.Timer is set and
// <= p.Now (to the millisecond), earliest first and then by ID. It reads
// the timer's partial index (tasks_wake, tasks_hold) from its start, so it
// costs O(due tasks) however many tasks are paused. p.Limit <= 0 is an
// error.
func (s *Store) DueTasks(ctx context.Context, p store.DueParams) ([]*store.Task, error) {
	due, _, err := dueStmts(p.Timer)
	if err != nil {
		return nil, fmt.Errorf("sqlite: DueTasks: %w", err)
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("sqlite: DueTasks: limit %d, want > 0", p.Limit)
	}
	rows, err := s.rstmts[due].QueryContext(ctx, p.Now.UnixMilli(), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: DueTasks: %w", err)
	}
	out, err := scanAll(rows, scanTask)
	if err != nil {
		return nil, fmt.Errorf("sqlite: DueTasks: %w", err)
	}
	return out, nil
}

// NextDue returns the earliest time any task's timer is set to (the first
// entry of the timer's index), the zero time when none is set.
func (s *Store) NextDue(ctx context.Context, timer store.Timer) (time.Time, error) {
	_, next, err := dueStmts(timer)
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: NextDue: %w", err)
	}
	ctx, err = pointRead(ctx)
	if err != nil {
		return time.Time{}, err
	}
	var at sql.NullInt64
	err = s.rstmts[next].QueryRowContext(ctx).Scan(&at)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("sqlite: NextDue: %w", err)
	}
	return fromNullMillis(at), nil
}
