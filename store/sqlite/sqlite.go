// Package sqlite is the embedded default driver of askpoint's store: one
// SQLite file, opened with the pure-Go modernc.org/sqlite driver, no cgo and
// no server.
//
// The file runs in WAL mode with synchronous=FULL, so an acknowledged write
// survives a crash or power loss. All writes go through a single connection
// in BEGIN IMMEDIATE transactions (SQLite allows one writer at a time; taking
// the write lock up front avoids deadlocked upgrades), while reads use a
// small pool of read-only connections that WAL lets proceed during writes.
//
// The schema is created and upgraded by migrations embedded in the binary
// (migrations/NNNN_name.sql); Open applies the ones the file has not seen.
//
// Times are stored as unix milliseconds, so they come back truncated to the
// millisecond and in UTC.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/askpoint/askpoint/store"
)

const (
	// writerParams configure the single writer connection: WAL so readers
	// never block on it, synchronous=FULL so an acknowledged commit is on
	// disk, BEGIN IMMEDIATE for every transaction.
	writerParams = "_pragma=busy_timeout(10000)" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)" +
		"&_pragma=foreign_keys(1)" +
		"&_txlock=immediate"
	// readerParams configure the read pool; query_only turns an
	// accidental write on a reader into an error.
	readerParams = "_pragma=busy_timeout(10000)" +
		"&_pragma=foreign_keys(1)" +
		"&_pragma=query_only(1)"

	// readers is the size of the read pool.
	readers = 4
)

// Store is a store.Store kept in one SQLite file. It is safe for concurrent
// use by many goroutines; several processes may open the same file, the
// busy timeout serialising their writes.
type Store struct {
	path string
	w    *sql.DB // one connection: every write
	r    *sql.DB // read-only pool
}

var _ store.Store = (*Store)(nil)

// Open opens the SQLite database at path, creating the file if it is
// missing (but not its directory), and applies the embedded migrations the
// file has not seen yet. path is a file name, not a URI; ":memory:" is
// refused because the writer and the readers would each get their own
// empty database. Errors name the path.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open %q: need the path of a database file", path)
	}
	uri := fileURI(path)

	w, err := sql.Open("sqlite", uri+"?"+writerParams)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w%s", path, err, dirProblem(path))
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}

	r, err := sql.Open("sqlite", uri+"?"+readerParams)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	if err := r.PingContext(ctx); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	return &Store{path: path, w: w, r: r}, nil
}

// dirProblem explains why the directory of path cannot hold a database, if
// it cannot: SQLite itself only says it is unable to open the file.
func dirProblem(path string) string {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Sprintf(" (%v)", err)
	case !fi.IsDir():
		return fmt.Sprintf(" (%s is not a directory)", dir)
	}
	return ""
}

// fileURI turns a file name into an SQLite URI filename, escaping the
// characters that would otherwise start a query, a fragment or an escape.
func fileURI(path string) string {
	var b strings.Builder
	for _, c := range path {
		switch c {
		case '%':
			b.WriteString("%25")
		case '?':
			b.WriteString("%3f")
		case '#':
			b.WriteString("%23")
		default:
			b.WriteRune(c)
		}
	}
	if strings.HasPrefix(path, "/") {
		// An empty authority, so that "//x" stays a path.
		return "file://" + b.String()
	}
	return "file:" + b.String()
}

// Close closes the writer and the read pool.
func (s *Store) Close() error {
	return errors.Join(s.r.Close(), s.w.Close())
}

// taskCols are the tasks columns in the order scanTask reads them.
const taskCols = `id, context_id, tenant, owner, agent, state, version, last_seq,
	status, artifacts, metadata, checkpoint, question, input,
	runnable, lease_owner, lease_until, created_at, updated_at`

// logCols are the task_log columns in the order scanEntry reads them.
const logCols = `seq, kind, message_id, in_history, body, at`

type scanner interface{ Scan(dest ...any) error }

func scanTask(row scanner) (*store.Task, error) {
	var (
		t                    store.Task
		state                string
		status, artifacts    []byte
		metadata, checkpoint []byte
		question, input      []byte
		runnable             int64
		leaseUntil           int64
		createdAt, updatedAt int64
	)
	err := row.Scan(&t.ID, &t.ContextID, &t.Tenant, &t.Owner, &t.Agent, &state, &t.Version, &t.LastSeq,
		&status, &artifacts, &metadata, &checkpoint, &question, &input,
		&runnable, &t.LeaseOwner, &leaseUntil, &createdAt, &updatedAt)
	if err != nil {
		return nil, err
	}
	t.State = a2a.TaskState(state)
	t.Status = raw(status)
	t.Artifacts = raw(artifacts)
	t.Metadata = raw(metadata)
	t.Checkpoint = raw(checkpoint)
	t.Question = raw(question)
	t.Input = raw(input)
	t.Runnable = runnable != 0
	t.LeaseUntil = fromMillis(leaseUntil)
	t.CreatedAt = fromMillis(createdAt)
	t.UpdatedAt = fromMillis(updatedAt)
	return &t, nil
}

func scanEntry(row scanner) (store.LogEntry, error) {
	var (
		e         store.LogEntry
		kind      string
		inHistory int64
		body      []byte
		at        int64
	)
	if err := row.Scan(&e.Seq, &kind, &e.MessageID, &inHistory, &body, &at); err != nil {
		return store.LogEntry{}, err
	}
	e.Kind = store.Kind(kind)
	e.InHistory = inHistory != 0
	e.Body = raw(body)
	e.At = fromMillis(at)
	return e, nil
}

// CreateTask inserts t with Version 1, LastSeq len(entries) and CreatedAt
// and UpdatedAt set to now, and appends entries to its log with Seq 1, 2,
// ..., in one transaction. An entry's zero At is set to now. It returns the
// stored task, or store.ErrExists when the ID is taken.
func (s *Store) CreateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	if t == nil {
		return nil, errors.New("sqlite: CreateTask: nil task")
	}
	now := time.Now().UnixMilli()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: CreateTask %q: %w", t.ID, err)
	}
	defer tx.Rollback()

	got, err := scanTask(tx.QueryRowContext(ctx, `
		INSERT INTO tasks (`+taskCols+`)
		VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING
		RETURNING `+taskCols,
		t.ID, t.ContextID, t.Tenant, t.Owner, t.Agent, string(t.State), int64(len(entries)),
		blob(t.Status), blob(t.Artifacts), blob(t.Metadata), blob(t.Checkpoint), blob(t.Question), blob(t.Input),
		boolInt(t.Runnable), t.LeaseOwner, toMillis(t.LeaseUntil), now, now))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrExists
	}
	if err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	if err := appendLog(ctx, tx, t.ID, 1, entries, now); err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	return got, nil
}

// GetTask returns the task, or store.ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (*store.Task, error) {
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, translate("GetTask", id, err)
	}
	return t, nil
}

// UpdateTask replaces the mutable columns of the task (all but ID, Tenant,
// Owner, Agent and CreatedAt) with those of t, sets UpdatedAt to now,
// increments the version and appends entries to its log, in one
// transaction, if the stored version is still t.Version. It returns the
// stored task; store.ErrConflict when the version moved, store.ErrNotFound
// when there is no such task.
func (s *Store) UpdateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	if t == nil {
		return nil, errors.New("sqlite: UpdateTask: nil task")
	}
	now := time.Now().UnixMilli()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: UpdateTask %q: %w", t.ID, err)
	}
	defer tx.Rollback()

	n := int64(len(entries))
	got, err := scanTask(tx.QueryRowContext(ctx, `
		UPDATE tasks SET
			context_id = ?, state = ?,
			status = ?, artifacts = ?, metadata = ?, checkpoint = ?, question = ?, input = ?,
			runnable = ?, lease_owner = ?, lease_until = ?,
			updated_at = ?, version = version + 1, last_seq = last_seq + ?
		WHERE id = ? AND version = ?
		RETURNING `+taskCols,
		t.ContextID, string(t.State),
		blob(t.Status), blob(t.Artifacts), blob(t.Metadata), blob(t.Checkpoint), blob(t.Question), blob(t.Input),
		boolInt(t.Runnable), t.LeaseOwner, toMillis(t.LeaseUntil),
		now, n,
		t.ID, t.Version))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, missingOrMoved(ctx, tx, t.ID)
	}
	if err != nil {
		return nil, translate("UpdateTask", t.ID, err)
	}
	if err := appendLog(ctx, tx, t.ID, got.LastSeq-n+1, entries, now); err != nil {
		return nil, translate("UpdateTask", t.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, translate("UpdateTask", t.ID, err)
	}
	return got, nil
}

// missingOrMoved tells why a compare-and-set on id matched no row:
// store.ErrNotFound when there is no such task, else store.ErrConflict.
func missingOrMoved(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM tasks WHERE id = ?`, id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return fmt.Errorf("sqlite: task %q: %w", id, err)
	default:
		return store.ErrConflict
	}
}

// appendLog inserts entries into the log of task id, numbering them from
// first on. A zero At becomes now.
func appendLog(ctx context.Context, tx *sql.Tx, id string, first int64, entries []store.LogEntry, now int64) error {
	if len(entries) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, `
		INSERT INTO task_log (task_id, seq, kind, message_id, in_history, body, at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for i, e := range entries {
		at := now
		if !e.At.IsZero() {
			at = e.At.UnixMilli()
		}
		if _, err := stmt.ExecContext(ctx, id, first+int64(i), string(e.Kind), e.MessageID,
			boolInt(e.InHistory), blob(e.Body), at); err != nil {
			return err
		}
	}
	return nil
}

// ReadLog returns the task's log entries with Seq > afterSeq, oldest first,
// at most limit of them (limit <= 0: all). A task with no entries, or no
// such task, gives none.
func (s *Store) ReadLog(ctx context.Context, taskID string, afterSeq int64, limit int) ([]store.LogEntry, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT `+logCols+` FROM task_log
		WHERE task_id = ? AND seq > ?
		ORDER BY seq
		LIMIT ?`, taskID, afterSeq, limit)
	if err != nil {
		return nil, translate("ReadLog", taskID, err)
	}
	return collectEntries("ReadLog", taskID, rows)
}

// History returns the task's entries with InHistory set, oldest first; with
// last > 0 only the newest last of them.
func (s *Store) History(ctx context.Context, taskID string, last int) ([]store.LogEntry, error) {
	if last <= 0 {
		last = -1
	}
	rows, err := s.r.QueryContext(ctx, `
		SELECT `+logCols+` FROM (
			SELECT `+logCols+` FROM task_log
			WHERE task_id = ? AND in_history = 1
			ORDER BY seq DESC
			LIMIT ?
		) ORDER BY seq`, taskID, last)
	if err != nil {
		return nil, translate("History", taskID, err)
	}
	return collectEntries("History", taskID, rows)
}

func collectEntries(op, id string, rows *sql.Rows) ([]store.LogEntry, error) {
	defer rows.Close()
	var out []store.LogEntry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			return nil, translate(op, id, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, translate(op, id, err)
	}
	return out, nil
}

// ListTasks returns one page of the tasks of p.Tenant and p.Owner (both
// matched exactly, the empty string included) that pass the other filters,
// newest first by UpdatedAt then ID. UpdatedAfter keeps the tasks updated
// strictly after it. The count and the page are read from one snapshot.
func (s *Store) ListTasks(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	if p.PageSize <= 0 {
		return nil, fmt.Errorf("sqlite: ListTasks: page size %d, want > 0", p.PageSize)
	}
	where := []string{"tenant = ?", "owner = ?"}
	args := []any{p.Tenant, p.Owner}
	if p.Agent != "" {
		where = append(where, "agent = ?")
		args = append(args, p.Agent)
	}
	if p.ContextID != "" {
		where = append(where, "context_id = ?")
		args = append(args, p.ContextID)
	}
	if p.State != "" {
		where = append(where, "state = ?")
		args = append(args, string(p.State))
	}
	if !p.UpdatedAfter.IsZero() {
		where = append(where, "updated_at > ?")
		args = append(args, p.UpdatedAfter.UnixMilli())
	}

	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}
	defer tx.Rollback()

	res := &store.ListResult{}
	if err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM tasks WHERE `+strings.Join(where, " AND "), args...).Scan(&res.TotalSize); err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}

	if c := p.After; c != nil {
		ms := c.UpdatedAt.UnixMilli()
		where = append(where, "(updated_at < ? OR (updated_at = ? AND id < ?))")
		args = append(args, ms, ms, c.ID)
	}
	args = append(args, p.PageSize+1)
	rows, err := tx.QueryContext(ctx, `
		SELECT `+taskCols+` FROM tasks
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY updated_at DESC, id DESC
		LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}
	if len(res.Tasks) > p.PageSize {
		res.Tasks = res.Tasks[:p.PageSize]
		last := res.Tasks[len(res.Tasks)-1]
		res.Next = &store.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	return res, nil
}

// ClaimRunnable leases up to p.Limit runnable tasks whose lease is unset or
// lapsed (LeaseUntil <= p.Now) to p.Owner until p.Now+p.LeaseFor,
// incrementing each one's version, in one transaction, and returns them in
// no particular order. The longest-lapsed leases (unset ones first) are
// claimed first. UpdatedAt does not change. p.Limit <= 0 claims nothing.
func (s *Store) ClaimRunnable(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	if p.Owner == "" {
		return nil, errors.New("sqlite: ClaimRunnable: empty owner")
	}
	if p.LeaseFor <= 0 {
		return nil, fmt.Errorf("sqlite: ClaimRunnable: lease duration %v, want > 0", p.LeaseFor)
	}
	if p.Limit <= 0 {
		return nil, nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: ClaimRunnable: %w", err)
	}
	defer tx.Rollback()

	rows, err := tx.QueryContext(ctx, `
		UPDATE tasks SET lease_owner = ?, lease_until = ?, version = version + 1
		WHERE id IN (
			SELECT id FROM tasks
			WHERE runnable = 1 AND lease_until <= ?
			ORDER BY lease_until
			LIMIT ?
		)
		RETURNING `+taskCols,
		p.Owner, p.Now.Add(p.LeaseFor).UnixMilli(), p.Now.UnixMilli(), p.Limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: ClaimRunnable: %w", err)
	}
	var out []*store.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlite: ClaimRunnable: %w", err)
		}
		out = append(out, t)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("sqlite: ClaimRunnable: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: ClaimRunnable: %w", err)
	}
	return out, nil
}

// ExtendLease moves the lease of task id to until if owner still holds it
// at version, leaving the version alone. store.ErrConflict when the lease
// or the version moved, store.ErrNotFound when there is no such task.
func (s *Store) ExtendLease(ctx context.Context, id, owner string, version int64, until time.Time) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: ExtendLease %q: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `
		UPDATE tasks SET lease_until = ?
		WHERE id = ? AND lease_owner = ? AND version = ?`,
		toMillis(until), id, owner, version)
	if err != nil {
		return translate("ExtendLease", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return translate("ExtendLease", id, err)
	}
	if n == 0 {
		return missingOrMoved(ctx, tx, id)
	}
	if err := tx.Commit(); err != nil {
		return translate("ExtendLease", id, err)
	}
	return nil
}

// translate maps SQLite errors onto the store sentinels where one fits and
// otherwise wraps err with the operation and the task ID.
func translate(op, id string, err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY && op == "CreateTask" {
		return store.ErrExists
	}
	return fmt.Errorf("sqlite: %s %q: %w", op, id, err)
}

// blob is the column value of a JSON column: NULL when empty.
func blob(j json.RawMessage) any {
	if len(j) == 0 {
		return nil
	}
	return []byte(j)
}

// raw is the JSON column value read back: nil for NULL (or empty).
func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// toMillis stores a time as unix milliseconds; the zero time is 0.
func toMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMillis reads back a toMillis value; 0 is the zero time.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
