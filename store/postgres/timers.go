package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/askpoint/askpoint/store"
)

// The statements of DueTasks and NextDue, by timer: each timer column has
// its own partial index (tasks_wake, tasks_hold), which these read from its
// start. The IS NOT NULL is the index's predicate spelt out, so that even a
// generic plan of the prepared statement can use the index.
var (
	dueSQL = map[store.Timer]string{
		store.TimerWake: `SELECT ` + readCols + ` FROM tasks
			WHERE wake_at IS NOT NULL AND wake_at <= $1
			ORDER BY wake_at, id
			LIMIT $2`,
		store.TimerHold: `SELECT ` + readCols + ` FROM tasks
			WHERE hold_at IS NOT NULL AND hold_at <= $1
			ORDER BY hold_at, id
			LIMIT $2`,
	}
	nextDueSQL = map[store.Timer]string{
		store.TimerWake: `SELECT wake_at FROM tasks WHERE wake_at IS NOT NULL ORDER BY wake_at LIMIT 1`,
		store.TimerHold: `SELECT hold_at FROM tasks WHERE hold_at IS NOT NULL ORDER BY hold_at LIMIT 1`,
	}
)

// DueTasks returns up to p.Limit tasks whose timer p.Timer is set and
// <= p.Now (to the millisecond), earliest first and then by ID. It reads
// the timer's partial index from its start, so it costs O(due tasks)
// however many tasks are paused. p.Limit <= 0 is an error.
func (s *Store) DueTasks(ctx context.Context, p store.DueParams) ([]*store.Task, error) {
	q, ok := dueSQL[p.Timer]
	if !ok {
		return nil, fmt.Errorf("postgres: DueTasks: unknown timer %q", p.Timer)
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("postgres: DueTasks: limit %d, want > 0", p.Limit)
	}
	rows, err := s.pool.Query(ctx, q, ms(p.Now), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: DueTasks: %w", err)
	}
	out, err := scanAll(rows, scanTask)
	if err != nil {
		return nil, fmt.Errorf("postgres: DueTasks: %w", err)
	}
	return out, nil
}

// NextDue returns the earliest time any task's timer is set to (the first
// entry of the timer's index), the zero time when none is set.
func (s *Store) NextDue(ctx context.Context, timer store.Timer) (time.Time, error) {
	q, ok := nextDueSQL[timer]
	if !ok {
		return time.Time{}, fmt.Errorf("postgres: NextDue: unknown timer %q", timer)
	}
	var at pgtype.Timestamptz
	err := s.pool.QueryRow(ctx, q).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("postgres: NextDue: %w", err)
	}
	return fromTS(at), nil
}
