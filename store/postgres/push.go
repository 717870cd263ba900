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

// The push outbox. A configuration's delivery state is a cursor into the
// task's log (sent_seq) and the seq of the task's newest notify entry
// (target_seq), which UpdateTask moves in the transaction that appends the
// entry (pushTargetSQL). The writers of a configuration row (that append,
// PutPushConfig, claims, settles) each update the row itself, so under
// read committed each waits for the others' row locks and then works on
// the row as committed: none loses another's change.

// pushCols are the push_configs columns in the order scanPush reads them.
const pushCols = `task_id, id, config, created_at, sent_seq, target_seq, attempts, due_at, version`

func scanPush(row pgx.Row) (*store.PushConfig, error) {
	var (
		c         store.PushConfig
		config    []byte
		createdAt time.Time
		attempts  int32
		dueAt     pgtype.Timestamptz
	)
	if err := row.Scan(&c.TaskID, &c.ID, &config, &createdAt, &c.SentSeq, &c.TargetSeq, &attempts, &dueAt, &c.Version); err != nil {
		return nil, err
	}
	c.Config = raw(config)
	c.CreatedAt = createdAt.UTC()
	c.Attempts = int(attempts)
	c.DueAt = fromTS(dueAt)
	return &c, nil
}

// noPushConfig is the error for a configuration that does not exist.
func noPushConfig(op, taskID, id string) error {
	return fmt.Errorf("postgres: %s: no push config %q for task %q: %w", op, id, taskID, store.ErrNotFound)
}

func pushErr(op, taskID, id string, err error) error {
	return fmt.Errorf("postgres: %s push config %q of task %q: %w", op, id, taskID, err)
}

// putPushSQL creates configuration $2 of task $1 delivering after sent_seq
// $4 up to the task's newest notify entry after it (due now when there is
// one), or gives the existing one its new config $3 and nothing else. No
// row when the task does not exist.
var putPushSQL = `
	INSERT INTO push_configs (` + pushCols + `)
	SELECT t.id, $2, $3::text::json, ` + nowMS + `, $4, coalesce(n.seq, $4), 0,
		CASE WHEN n.seq IS NOT NULL THEN ` + nowMS + ` END, 1
	FROM tasks t LEFT JOIN LATERAL (
		SELECT seq FROM task_log
		WHERE task_key = t.key AND seq > $4 AND notify
		ORDER BY seq DESC
		LIMIT 1
	) n ON true
	WHERE t.id = $1 AND ($5 = 0
		OR EXISTS (SELECT 1 FROM push_configs WHERE task_id = $1 AND id = $2)
		OR (SELECT count(*) FROM push_configs WHERE task_id = $1) < $5)
	ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config
	RETURNING ` + pushCols

// PutPushConfig creates the configuration (c.TaskID, c.ID), delivering
// after c.SentSeq up to the task's newest notify entry (due now when there
// is one), or replaces the Config of the existing one and keeps its
// delivery state, CreatedAt and Version. It returns the stored
// configuration; store.ErrNotFound when the task does not exist.
//
// It first takes a share lock on the task row and then, in a statement of
// its own (so under read committed with a snapshot taken after the lock),
// reads the log and writes the configuration; both are pipelined in one
// implicit transaction. An UpdateTask that appends a notify entry holds the
// row lock from its append to its commit: either it commits first and this
// reads its entry, or it waits for this commit and its own push statement
// then sees the new configuration (see UpdateTask).
func (s *Store) PutPushConfig(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	if c == nil {
		return nil, errors.New("postgres: PutPushConfig: nil config")
	}
	b := &pgx.Batch{}
	lock := `SELECT 1 FROM tasks WHERE id = $1 FOR SHARE`
	if c.Limit > 0 {
		// Capped creates exclude each other on the task row, so the count
		// in the insert (a statement after the lock, with its own
		// snapshot) sees every configuration committed before it.
		lock = `SELECT 1 FROM tasks WHERE id = $1 FOR NO KEY UPDATE`
	}
	b.Queue(lock, c.TaskID)
	b.Queue(putPushSQL, c.TaskID, c.ID, text(c.Config), c.SentSeq, c.Limit)
	br := s.pool.SendBatch(ctx, b)
	_, lerr := br.Exec()
	got, err := scanPush(br.QueryRow())
	if cerr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) {
		if lerr = errors.Join(lerr, cerr); lerr != nil {
			err = lerr
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		if c.Limit > 0 {
			var exists bool
			if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1)`, c.TaskID).Scan(&exists); err != nil {
				return nil, pushErr("PutPushConfig", c.TaskID, c.ID, err)
			}
			if exists {
				return nil, store.ErrLimit
			}
		}
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, pushErr("PutPushConfig", c.TaskID, c.ID, err)
	}
	return got, nil
}

// GetPushConfig returns one configuration, or store.ErrNotFound.
func (s *Store) GetPushConfig(ctx context.Context, taskID, id string) (*store.PushConfig, error) {
	c, err := scanPush(s.pool.QueryRow(ctx,
		`SELECT `+pushCols+` FROM push_configs WHERE task_id = $1 AND id = $2`, taskID, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	rows, err := s.pool.Query(ctx, `
		SELECT `+pushCols+` FROM push_configs
		WHERE task_id = $1
		ORDER BY created_at, id`, taskID)
	if err != nil {
		return nil, translate("ListPushConfigs", taskID, err)
	}
	return collectPush("ListPushConfigs", taskID, rows)
}

func collectPush(op, id string, rows pgx.Rows) ([]*store.PushConfig, error) {
	out, err := scanAll(rows, scanPush)
	if err != nil {
		return nil, translate(op, id, err)
	}
	return out, nil
}

// DeletePushConfig deletes one configuration; store.ErrNotFound when
// there is none.
func (s *Store) DeletePushConfig(ctx context.Context, taskID, id string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM push_configs WHERE task_id = $1 AND id = $2`, taskID, id)
	if err != nil {
		return pushErr("DeletePushConfig", taskID, id, err)
	}
	if tag.RowsAffected() == 0 {
		return noPushConfig("DeletePushConfig", taskID, id)
	}
	return nil
}

// claimPushSQL is ClaimPushDeliveries' statement: $1 now, $2 the limit, $3
// the new due time (the lease end). The claim is an ordered range scan of
// the partial index push_configs_due (migration 0002).
const claimPushSQL = `
		WITH c AS (
			SELECT task_id AS claim_task, id AS claim_id FROM push_configs
			WHERE due_at IS NOT NULL AND due_at <= $1
			ORDER BY due_at
			LIMIT $2
			FOR UPDATE SKIP LOCKED
		)
		UPDATE push_configs SET due_at = $3, version = version + 1
		FROM c WHERE task_id = c.claim_task AND id = c.claim_id
		RETURNING ` + pushCols

// ClaimPushDeliveries leases up to p.Limit configurations whose DueAt is
// set and <= p.Now, earliest due first, by moving their DueAt to
// p.Now+p.LeaseFor and incrementing their version, in one statement, and
// returns them in no particular order. The rows are locked with FOR UPDATE
// SKIP LOCKED: a concurrent claimer on any node skips them instead of
// waiting, and never gets them. p.Owner is not stored. p.Limit <= 0 claims
// nothing.
func (s *Store) ClaimPushDeliveries(ctx context.Context, p store.ClaimParams) ([]*store.PushConfig, error) {
	if p.LeaseFor <= 0 {
		return nil, fmt.Errorf("postgres: ClaimPushDeliveries: lease duration %v, want > 0", p.LeaseFor)
	}
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimPushSQL, ms(p.Now), p.Limit, ms(p.Now.Add(p.LeaseFor)))
	if err != nil {
		return nil, fmt.Errorf("postgres: ClaimPushDeliveries: %w", err)
	}
	out, err := scanAll(rows, scanPush)
	if err != nil {
		return nil, fmt.Errorf("postgres: ClaimPushDeliveries: %w", err)
	}
	return out, nil
}

// SettlePush writes c.SentSeq and c.Attempts to the configuration if its
// version is still c.Version, and increments the version. Its DueAt
// becomes c.DueAt when set, else now when its TargetSeq, as committed when
// the row is written (entries appended during the delivery attempt
// included: an append holding the row lock is waited for), is past
// c.SentSeq, else zero. It returns the stored configuration;
// store.ErrConflict when the version moved, store.ErrNotFound when the
// configuration is gone.
func (s *Store) SettlePush(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	if c == nil {
		return nil, errors.New("postgres: SettlePush: nil config")
	}
	got, err := scanPush(s.pool.QueryRow(ctx, `
		UPDATE push_configs SET sent_seq = $3, attempts = $4,
			due_at = CASE WHEN $5::timestamptz IS NOT NULL THEN $5::timestamptz WHEN target_seq > $3 THEN `+nowMS+` END,
			version = version + 1
		WHERE task_id = $1 AND id = $2 AND version = $6
		RETURNING `+pushCols,
		c.TaskID, c.ID, c.SentSeq, int32(c.Attempts), ts(c.DueAt), c.Version))
	if errors.Is(err, pgx.ErrNoRows) {
		var exists bool
		if err := s.pool.QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM push_configs WHERE task_id = $1 AND id = $2)`, c.TaskID, c.ID).Scan(&exists); err != nil {
			return nil, pushErr("SettlePush", c.TaskID, c.ID, err)
		}
		if !exists {
			return nil, noPushConfig("SettlePush", c.TaskID, c.ID)
		}
		return nil, store.ErrConflict
	}
	if err != nil {
		return nil, pushErr("SettlePush", c.TaskID, c.ID, err)
	}
	return got, nil
}
