package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/askpoint/askpoint/store"
)

// The push outbox. A configuration's delivery state is a cursor into the
// task's log (sent_seq) and the seq of the task's newest notify entry
// (target_seq), which UpdateTask moves in the transaction that appends the
// entry (stmtPushTarget). Every write here goes through the writer, so it
// is serialised with those appends: no append can fall between reading a
// configuration's target and writing it.

func scanPush(row scanner) (*store.PushConfig, error) {
	var (
		c         store.PushConfig
		config    []byte
		createdAt int64
		attempts  int64
		dueAt     sql.NullInt64
	)
	if err := row.Scan(&c.TaskID, &c.ID, &config, &createdAt, &c.SentSeq, &c.TargetSeq, &attempts, &dueAt, &c.Version); err != nil {
		return nil, err
	}
	c.Config = raw(config)
	c.CreatedAt = fromMillis(createdAt)
	c.Attempts = int(attempts)
	c.DueAt = fromNullMillis(dueAt)
	return &c, nil
}

// noPushConfig is the error for a configuration that does not exist.
func noPushConfig(op, taskID, id string) error {
	return fmt.Errorf("sqlite: %s: no push config %q for task %q: %w", op, id, taskID, store.ErrNotFound)
}

func pushErr(op, taskID, id string, err error) error {
	return fmt.Errorf("sqlite: %s push config %q of task %q: %w", op, id, taskID, err)
}

// PutPushConfig creates the configuration (c.TaskID, c.ID), delivering
// after c.SentSeq up to the task's newest notify entry (due now when there
// is one), or replaces the Config of the existing one and keeps its
// delivery state, CreatedAt and Version. It returns the stored
// configuration; store.ErrNotFound when the task does not exist.
func (s *Store) PutPushConfig(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	if c == nil {
		return nil, errors.New("sqlite: PutPushConfig: nil config")
	}
	var got *store.PushConfig
	err := s.write(ctx, func(b *batch) error {
		var err error
		if c.Limit > 0 {
			// Writes are serialised by the writer: nothing lands between
			// this count and the insert.
			var others int
			if err := b.queryRow(`SELECT count(*) FROM push_configs WHERE task_id = ? AND id <> ?`, c.TaskID, c.ID).Scan(&others); err != nil {
				return pushErr("PutPushConfig", c.TaskID, c.ID, err)
			}
			var exists int
			if err := b.queryRow(`SELECT count(*) FROM push_configs WHERE task_id = ? AND id = ?`, c.TaskID, c.ID).Scan(&exists); err != nil {
				return pushErr("PutPushConfig", c.TaskID, c.ID, err)
			}
			if exists == 0 && others >= c.Limit {
				return store.ErrLimit
			}
		}
		got, err = scanPush(b.stmt(stmtPutPush).QueryRow(c.TaskID, c.ID, blob(c.Config), c.SentSeq, time.Now().UnixMilli()))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound // no such task: nothing was written
		}
		if err != nil {
			return pushErr("PutPushConfig", c.TaskID, c.ID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// GetPushConfig returns one configuration, or store.ErrNotFound.
func (s *Store) GetPushConfig(ctx context.Context, taskID, id string) (*store.PushConfig, error) {
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	c, err := scanPush(s.rstmts[stmtGetPush].QueryRowContext(ctx, taskID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, noPushConfig("GetPushConfig", taskID, id)
	}
	if err != nil {
		return nil, pushErr("GetPushConfig", taskID, id, err)
	}
	return c, nil
}

// ListPushConfigs returns the task's configurations, oldest first (by
// CreatedAt, then ID); none for an unknown task.
func (s *Store) ListPushConfigs(ctx context.Context, taskID string) ([]*store.PushConfig, error) {
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.rstmts[stmtListPush].QueryContext(ctx, taskID)
	if err != nil {
		return nil, translate("ListPushConfigs", taskID, err)
	}
	return collectPush("ListPushConfigs", taskID, rows)
}

func collectPush(op, id string, rows *sql.Rows) ([]*store.PushConfig, error) {
	out, err := scanAll(rows, scanPush)
	if err != nil {
		return nil, translate(op, id, err)
	}
	return out, nil
}

// DeletePushConfig deletes one configuration; store.ErrNotFound when
// there is none.
func (s *Store) DeletePushConfig(ctx context.Context, taskID, id string) error {
	return s.write(ctx, func(b *batch) error {
		res, err := b.stmt(stmtDeletePush).Exec(taskID, id)
		if err != nil {
			return pushErr("DeletePushConfig", taskID, id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return pushErr("DeletePushConfig", taskID, id, err)
		}
		if n == 0 {
			return noPushConfig("DeletePushConfig", taskID, id)
		}
		return nil
	})
}

// ClaimPushDeliveries leases up to p.Limit configurations whose DueAt is
// set and <= p.Now, earliest due first, by moving their DueAt to
// p.Now+p.LeaseFor and incrementing their version, in one transaction, and
// returns them in no particular order. p.Owner is not stored. p.Limit <= 0
// claims nothing.
func (s *Store) ClaimPushDeliveries(ctx context.Context, p store.ClaimParams) ([]*store.PushConfig, error) {
	if p.LeaseFor <= 0 {
		return nil, fmt.Errorf("sqlite: ClaimPushDeliveries: lease duration %v, want > 0", p.LeaseFor)
	}
	if p.Limit <= 0 {
		return nil, nil
	}
	var out []*store.PushConfig
	err := s.write(ctx, func(b *batch) error {
		out = nil
		rows, err := b.stmt(stmtClaimPush).Query(p.Now.Add(p.LeaseFor).UnixMilli(), p.Now.UnixMilli(), p.Limit)
		if err != nil {
			return fmt.Errorf("sqlite: ClaimPushDeliveries: %w", err)
		}
		if out, err = scanAll(rows, scanPush); err != nil {
			return fmt.Errorf("sqlite: ClaimPushDeliveries: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SettlePush writes c.SentSeq and c.Attempts to the configuration if its
// version is still c.Version, and increments the version. Its DueAt
// becomes c.DueAt when set, else now when its TargetSeq, as it is at the
// write (entries appended during the delivery attempt included), is past
// c.SentSeq, else zero. It returns the stored configuration;
// store.ErrConflict when the version moved, store.ErrNotFound when the
// configuration is gone.
func (s *Store) SettlePush(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	if c == nil {
		return nil, errors.New("sqlite: SettlePush: nil config")
	}
	var got *store.PushConfig
	err := s.write(ctx, func(b *batch) error {
		var err error
		got, err = scanPush(b.stmt(stmtSettlePush).QueryRow(
			c.SentSeq, int64(c.Attempts), nullMillisArg(c.DueAt), time.Now().UnixMilli(),
			c.TaskID, c.ID, c.Version))
		if errors.Is(err, sql.ErrNoRows) {
			var one int
			err := b.stmt(stmtPushExists).QueryRow(c.TaskID, c.ID).Scan(&one)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return noPushConfig("SettlePush", c.TaskID, c.ID)
			case err != nil:
				return pushErr("SettlePush", c.TaskID, c.ID, err)
			default:
				return store.ErrConflict
			}
		}
		if err != nil {
			return pushErr("SettlePush", c.TaskID, c.ID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}
