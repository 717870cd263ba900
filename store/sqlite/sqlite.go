// Package sqlite is the embedded default driver of askpoint's store: one
// SQLite file, opened with the pure-Go modernc.org/sqlite driver, no cgo and
// no server.
//
// The file runs in WAL mode with synchronous=FULL, so an acknowledged write
// survives a crash or power loss. All writes go through one writer
// goroutine and its single connection, in BEGIN IMMEDIATE transactions
// (SQLite allows one writer at a time; taking the write lock up front avoids
// deadlocked upgrades). The writer commits the writes of concurrent callers
// together (group commit: one transaction and one fsync for every write
// waiting) and acknowledges each write only after the commit that holds it;
// see writer.go. Reads use a small pool of read-only connections that WAL
// lets proceed during writes. Every statement the store runs more than once
// is prepared once, when the store opens.
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
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/keylock"
	"github.com/askpoint/askpoint/store/internal/listing"
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
// use by many goroutines. The file is one process's: Open refuses a file
// another process has open (owner.go); handles of one process share it.
type Store struct {
	path  string
	owner *owner  // this process's lock on the file; nil when read-only
	w     *sql.DB // one connection: every write, from the writer goroutine
	r     *sql.DB // read-only pool

	// The writer goroutine's own (wconn.go): the write statements,
	// prepared on wdc, the driver connection of w, and the argument slice
	// it reuses.
	wstmts [numWriteStmts]driver.Stmt
	wdc    any
	wargs  []driver.NamedValue
	// wlogArgs are appendLog's arguments, kept for the next write.
	wlogArgs []any

	rstmts [numReadStmts]*sql.Stmt // prepared on r

	ops        chan *op
	quit       chan struct{}
	writerDone chan struct{}
	closeMu    sync.RWMutex
	closed     bool
	closeOnce  sync.Once
	closeErr   error
	readOnly   bool // OpenWith(Options{ReadOnly: true}): no writer, no w

	batches    atomic.Int64 // transactions the writer committed
	batchedOps atomic.Int64 // writes in them

	// onQueued, when set (by tests), is called after each write joins the
	// writer's queue: a signal to wait on instead of polling the queue.
	onQueued atomic.Pointer[func()]

	locks keylock.Locks // LockTask's
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Locker = (*Store)(nil)
)

// Options tune OpenWith. The zero value is what Open does.
type Options struct {
	// ReadOnly opens an existing database for reading only, as a tool
	// reads the file of a server that may be running (askpoint stats):
	// nothing is created or migrated, no writer runs, every connection
	// is opened read-only (mode=ro, query_only), no lock is taken (the
	// owner keeps the file), and every write fails with ErrReadOnly. The file must exist and its schema must be the
	// one this binary's migrations make.
	ReadOnly bool
}

// ErrReadOnly is what a write to a store opened with Options.ReadOnly
// returns.
var ErrReadOnly = errors.New("sqlite: the store is opened read-only")

// OpenWith is Open with options.
func OpenWith(ctx context.Context, path string, o Options) (*Store, error) {
	if !o.ReadOnly {
		return Open(ctx, path)
	}
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open %q: need the path of a database file", path)
	}
	if fi, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("sqlite: open %q read-only: no such database file", path)
		}
		return nil, fmt.Errorf("sqlite: open %q read-only: %w", path, err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("sqlite: open %q read-only: not a regular file", path)
	}
	r, err := sql.Open("sqlite", fileURI(path)+"?mode=ro&"+readerParams)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q read-only: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxLifetime(0)
	r.SetConnMaxIdleTime(0)
	s := &Store{path: path, r: r, readOnly: true, quit: make(chan struct{}), writerDone: make(chan struct{})}
	close(s.writerDone) // no writer runs
	if err := checkSchema(ctx, r); err != nil {
		r.Close()
		return nil, fmt.Errorf("sqlite: open %q read-only: %w", path, err)
	}
	if err := s.prepare(ctx); err != nil {
		s.closeStmts()
		r.Close()
		return nil, fmt.Errorf("sqlite: open %q read-only: %w", path, err)
	}
	return s, nil
}

// Open opens the SQLite database at path, creating the file if it is
// missing (but not its directory), and applies the embedded migrations the
// file has not seen yet. path is a file name, not a URI; ":memory:" is
// refused because the writer and the readers would each get their own
// empty database. Errors name the path.
//
// The file is one process's: Open takes the lock "<path>.lock" and fails
// when another process holds it (owner.go). The first handle this process
// opens on the file frees the push claims in it, all left by an owner
// that ended without settling them.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("sqlite: open %q: need the path of a database file", path)
	}
	o, first, err := own(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	s, err := openOwned(ctx, path, first)
	if err != nil {
		o.release()
		return nil, err
	}
	s.owner = o
	return s, nil
}

// openOwned is Open once the process holds the file; first: no other
// handle of the process has it open.
func openOwned(ctx context.Context, path string, first bool) (*Store, error) {
	uri := fileURI(path)
	// The database holds push tokens and the credentials of push
	// configurations: a new one is readable by its owner only, and SQLite
	// gives its WAL and shared-memory files the database file's mode.
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	}

	w, err := sql.Open("sqlite", uri+"?"+writerParams)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := pingBusy(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w%s", path, err, dirProblem(path))
	}
	if err := migrate(ctx, w); err != nil {
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if first {
		if err := freeStaleClaims(ctx, w, time.Now()); err != nil {
			w.Close()
			return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
		}
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
	s := &Store{path: path, w: w, r: r, ops: make(chan *op, queueLen), quit: make(chan struct{}), writerDone: make(chan struct{})}
	if err := s.prepare(ctx); err != nil {
		s.closeStmts()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	go s.writer()
	return s, nil
}

// pingBusy opens the writer's connection. Several processes opening a new
// file at once race to switch it to WAL, and SQLite answers that switch
// SQLITE_BUSY at once, without waiting out the busy timeout: the open is
// tried again, a bounded number of times, until the file is in WAL mode.
func pingBusy(ctx context.Context, w *sql.DB) error {
	var err error
	for attempt := range 50 {
		if err = w.PingContext(ctx); err == nil || !strings.Contains(err.Error(), "SQLITE_BUSY") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 2 * time.Millisecond):
		}
	}
	return err
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

// Close finishes the writes already queued, stops the writer and closes
// the connections. Writes after Close fail. Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeMu.Lock() // waits for callers still handing an op to the writer
		s.closed = true
		s.closeMu.Unlock()
		close(s.quit)
		<-s.writerDone
		s.closeStmts()
		if s.w == nil {
			s.closeErr = s.r.Close()
			return
		}
		s.closeErr = errors.Join(s.r.Close(), s.w.Close())
		if s.owner != nil {
			s.owner.release() // after the connections: nothing writes any more
		}
	})
	return s.closeErr
}

// freeStaleClaims makes every push configuration a claim holds due at
// now (or when its lease ends, if that is earlier), so the first claim
// after Open takes it. Called by the first handle of the process that owns
// the file: the claims were made by an owner that ended (a crash, a kill)
// without settling them, and no delivery of theirs is still under way.
func freeStaleClaims(ctx context.Context, w *sql.DB, now time.Time) error {
	_, err := w.ExecContext(ctx, `
		UPDATE push_configs SET due_at = min(due_at, ?), claimed = 0, version = version + 1
		WHERE due_at IS NOT NULL AND claimed = 1`, now.UnixMilli())
	if err != nil {
		return fmt.Errorf("free the push claims of the previous owner: %w", err)
	}
	return nil
}

// taskCols are the tasks columns a new task is inserted with.
const taskCols = `id, context_id, tenant, owner, agent, state, version, last_seq,
	status, artifacts, metadata, checkpoint, question, input, pause,
	wake_at, hold_at, runnable, lease_owner, lease_until, created_at, updated_at, ref_seq`

// taskRow is the values of one row of CreateTasks' INSERT: taskCols and
// request_key.
var taskRow = "(" + strings.TrimSuffix(strings.Repeat("?,", 24), ",") + ")"

// taskSel is what a read of a task selects, in the order scanTask reads
// it: the columns, and the bodies of the log entries its JSON columns are
// packed against (packed.go: ref_seq and the one after it, if any), in
// place of ref_seq.
const taskSel = `id, context_id, tenant, owner, agent, state, version, last_seq,
	status, artifacts, metadata, checkpoint, question, input, pause,
	wake_at, hold_at, runnable, lease_owner, lease_until, created_at, updated_at,
	(SELECT body FROM task_log r WHERE r.task_key = tasks.key AND r.seq = tasks.ref_seq) AS ref,
	(SELECT body FROM task_log r WHERE r.task_key = tasks.key AND r.seq = tasks.ref_seq + 1) AS ref2`

// logCols are the task_log columns in the order scanEntry reads them.
const logCols = `seq, kind, message_id, in_history, notify, body, at`

// pushCols are the push_configs columns in the order scanPush reads them.
const pushCols = `task_id, id, config, created_at, sent_seq, target_seq, attempts, due_at, version`

// The statements prepared when the store opens, by index.
const (
	stmtInsertTask = iota
	stmtUpdateTask
	stmtUpdateTaskContext
	stmtTaskExists
	stmtExtendLease
	stmtClaim
	stmtPushTarget
	stmtPutPush
	stmtDeletePush
	stmtClaimPush
	stmtSettlePush
	stmtPushExists
	stmtBegin
	stmtCommit
	stmtRollback
	// stmtInsertLog+n-1 appends n entries to a log, for n up to logRows
	// (insertLogSQL).
	stmtInsertLog
	numWriteStmts = stmtInsertLog + logRows
)

// logRows is the most entries one prepared INSERT appends: a write of the
// engine appends one to four.
const logRows = 8

const (
	stmtGetTask = iota
	stmtTaskByRequest
	stmtLoadTask
	stmtReadLog
	stmtHistory
	stmtDueWake
	stmtDueHold
	stmtNextWake
	stmtNextHold
	stmtGetPush
	stmtListPush
	numReadStmts
)

// updateReturns is what an UpdateTask's statement returns: the columns the
// caller does not already hold, and whether the task has a push
// configuration. Only then does a write with a Notify entry run
// stmtPushTarget: a task without one (most) has nothing to move, and one
// statement less to run.
const updateReturns = `key, tenant, owner, agent, version, last_seq, created_at,
	EXISTS (SELECT 1 FROM push_configs p WHERE p.task_id = tasks.id)`

var writeSQL = [numWriteStmts]string{
	// The strings most tasks leave empty (tenant, owner, lease_owner) and
	// an entry's messageId come as NULL for "" (nullString, nullKey) and
	// are stored as '': the driver copies every TEXT or BLOB argument
	// into a buffer of its own and keeps a record of it, NULL costs
	// neither.
	stmtInsertTask: `
		INSERT INTO tasks (` + taskCols + `, request_key)
		VALUES (?, ?, ifnull(?, ''), ifnull(?, ''), ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ifnull(?, ''), ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`,
	// Only the columns the caller does not already hold come back. The
	// context ID of a task is the one it was created with (the engine
	// never moves a task to another context): this statement leaves it
	// out of its SET, so that tasks_context is not written (SQLite deletes
	// and inserts again the keys of every index whose columns are SET,
	// changed or not), and matches only a row that has it already.
	// stmtUpdateTaskContext, the same with the context set, is the
	// fallback for a write that does change it.
	stmtUpdateTask: `
		UPDATE tasks SET state = ?,
			status = ?, artifacts = ?, metadata = ?, checkpoint = ?, question = ?, input = ?, pause = ?,
			wake_at = ?, hold_at = ?, runnable = ?, lease_owner = ifnull(?, ''), lease_until = ?,
			updated_at = ?, version = version + 1, last_seq = last_seq + ?, ref_seq = last_seq + ?
		WHERE id = ? AND version = ? AND context_id = ?
		RETURNING ` + updateReturns,
	stmtUpdateTaskContext: `
		UPDATE tasks SET state = ?,
			status = ?, artifacts = ?, metadata = ?, checkpoint = ?, question = ?, input = ?, pause = ?,
			wake_at = ?, hold_at = ?, runnable = ?, lease_owner = ifnull(?, ''), lease_until = ?,
			updated_at = ?, version = version + 1, last_seq = last_seq + ?, ref_seq = last_seq + ?,
			context_id = ?
		WHERE id = ? AND version = ?
		RETURNING ` + updateReturns,
	stmtTaskExists: `SELECT 1 FROM tasks WHERE id = ?`,
	stmtExtendLease: `
		UPDATE tasks SET lease_until = ?
		WHERE id = ? AND lease_owner = ? AND version = ?`,
	stmtClaim: `
		UPDATE tasks SET lease_owner = ?, lease_until = ?, version = version + 1
		WHERE id IN (
			SELECT id FROM tasks
			WHERE runnable = 1 AND lease_until <= ?
			ORDER BY lease_until
			LIMIT ?
		)
		RETURNING ` + taskSel,
	// Entries with notify set were appended: every configuration of the
	// task now has them to deliver, and is due now unless it already has
	// a due time (a retry's backoff, a claim's lease). The version stays:
	// a delivery under way still settles. target_seq never moves back
	// (a configuration created with sent_seq past the end of the log).
	stmtPushTarget: `
		UPDATE push_configs SET target_seq = ?1, due_at = coalesce(due_at, ?2)
		WHERE task_id = ?3 AND target_seq < ?1`,
	// A new configuration delivers from sent_seq (?4) on, up to the
	// task's newest notify entry after it; an existing one only gets its
	// new config. No row when the task does not exist.
	stmtPutPush: `
		INSERT INTO push_configs (` + pushCols + `)
		SELECT t.id, ?2, ?3, ?5, ?4, coalesce(n.seq, ?4), 0, iif(n.seq IS NULL, NULL, ?5), 1
		FROM tasks t LEFT JOIN (
			SELECT seq FROM task_log
			WHERE task_key = (SELECT key FROM tasks WHERE id = ?1) AND seq > ?4 AND notify = 1
			ORDER BY seq DESC
			LIMIT 1
		) n ON true
		WHERE t.id = ?1
		ON CONFLICT (task_id, id) DO UPDATE SET config = excluded.config
		RETURNING ` + pushCols,
	stmtDeletePush: `DELETE FROM push_configs WHERE task_id = ? AND id = ?`,
	stmtClaimPush: `
		UPDATE push_configs SET due_at = ?, claimed = 1, version = version + 1
		WHERE (task_id, id) IN (
			SELECT task_id, id FROM push_configs
			WHERE due_at IS NOT NULL AND due_at <= ?
			ORDER BY due_at
			LIMIT ?
		)
		RETURNING ` + pushCols,
	// due_at: the caller's retry time (?3), else now (?4) when the row,
	// as it is now, has more to deliver than the caller sent, else NULL.
	stmtSettlePush: `
		UPDATE push_configs SET sent_seq = ?1, attempts = ?2,
			due_at = CASE WHEN ?3 IS NOT NULL THEN ?3 WHEN target_seq > ?1 THEN ?4 END,
			claimed = 0, version = version + 1
		WHERE task_id = ?5 AND id = ?6 AND version = ?7
		RETURNING ` + pushCols,
	stmtPushExists: `SELECT 1 FROM push_configs WHERE task_id = ? AND id = ?`,
	// The writer's transaction (inTx): immediate, as _txlock sets for
	// the transactions database/sql begins on the same connection.
	stmtBegin:    `BEGIN IMMEDIATE`,
	stmtCommit:   `COMMIT`,
	stmtRollback: `ROLLBACK`,
}

func init() {
	for n := 1; n <= logRows; n++ {
		writeSQL[stmtInsertLog+n-1] = insertLogSQL(n)
	}
}

// insertLogSQL is the INSERT of n log entries: one statement for the
// entries of a write, not one each.
func insertLogSQL(n int) string {
	return `INSERT INTO task_log (task_key, seq, kind, message_id, in_history, notify, body, at) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ifnull(?, ''), ?, ?, ?, ?), ", n), ", ")
}

var readSQL = [numReadStmts]string{
	stmtGetTask:       `SELECT ` + taskSel + ` FROM tasks WHERE id = ?`,
	stmtTaskByRequest: `SELECT ` + taskSel + ` FROM tasks WHERE request_key = ?`,
	// ?2: the messageId to look up ('' for none, which no message entry
	// has); ?3: whether the request is wanted. Each subquery is one
	// lookup: task_log_message, and the log's primary key. Left to
	// itself (no statistics) the planner walks the task's whole log by
	// its primary key instead, as it is in seq order and holds the body:
	// INDEXED BY keeps the lookup O(1) in the length of the log (the index
	// holds seq, the key's tail, so the first match needs no sort).
	stmtLoadTask: `
		SELECT ` + taskSel + `,
			(SELECT body FROM task_log l INDEXED BY task_log_message
				WHERE l.task_key = tasks.key AND l.kind = 'message' AND l.message_id = ?2 AND ?2 <> ''
				ORDER BY l.seq LIMIT 1),
			CASE WHEN ?3 THEN (SELECT body FROM task_log l WHERE l.task_key = tasks.key AND l.seq = 1) END
		FROM tasks WHERE id = ?1`,
	stmtReadLog: `
		SELECT ` + logCols + ` FROM task_log
		WHERE task_key = (SELECT key FROM tasks WHERE id = ?) AND seq > ?
		ORDER BY seq
		LIMIT ?`,
	// The task's log by its primary key, newest first, skipping what is
	// not history: a task's log is a few entries, most of them history
	// (migration 0009 dropped the index of history entries).
	stmtHistory: `
		SELECT ` + logCols + ` FROM (
			SELECT ` + logCols + ` FROM task_log
			WHERE task_key = (SELECT key FROM tasks WHERE id = ?) AND in_history = 1
			ORDER BY seq DESC
			LIMIT ?
		) ORDER BY seq`,
	stmtDueWake: `
		SELECT ` + taskSel + ` FROM tasks
		WHERE wake_at IS NOT NULL AND wake_at <= ?
		ORDER BY wake_at, id
		LIMIT ?`,
	stmtDueHold: `
		SELECT ` + taskSel + ` FROM tasks
		WHERE hold_at IS NOT NULL AND hold_at <= ?
		ORDER BY hold_at, id
		LIMIT ?`,
	stmtNextWake: `SELECT wake_at FROM tasks WHERE wake_at IS NOT NULL ORDER BY wake_at LIMIT 1`,
	stmtNextHold: `SELECT hold_at FROM tasks WHERE hold_at IS NOT NULL ORDER BY hold_at LIMIT 1`,
	stmtGetPush:  `SELECT ` + pushCols + ` FROM push_configs WHERE task_id = ? AND id = ?`,
	stmtListPush: `
		SELECT ` + pushCols + ` FROM push_configs
		WHERE task_id = ?
		ORDER BY created_at, id`,
}

// prepare prepares the statements the store runs again and again. The
// driver keeps each one compiled on its connection, so no call parses SQL.
func (s *Store) prepare(ctx context.Context) error {
	if s.w != nil { // else read-only
		c, err := s.w.Conn(ctx)
		if err != nil {
			return err
		}
		err = c.Raw(s.prepareWriter)
		c.Close()
		if err != nil {
			return err
		}
	}
	for i, q := range readSQL {
		st, err := s.r.PrepareContext(ctx, q)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
		s.rstmts[i] = st
	}
	return nil
}

func (s *Store) closeStmts() {
	s.closeWriterStmts()
	for _, st := range s.rstmts {
		if st != nil {
			st.Close()
		}
	}
}

type scanner interface{ Scan(dest ...any) error }

func scanTask(row scanner) (*store.Task, error) { return scanTaskWith(row) }

// scanTaskWith scans the task columns and then extra, the columns a query
// selects after them.
func scanTaskWith(row scanner, extra ...any) (*store.Task, error) {
	var (
		t                    store.Task
		state                string
		wakeAt, holdAt       sql.NullInt64
		runnable             int64
		leaseUntil           int64
		createdAt, updatedAt int64
	)
	r := newStoredRow()
	defer r.release()
	v := &r.vals
	dest := []any{&t.ID, &t.ContextID, &t.Tenant, &t.Owner, &t.Agent, &state, &t.Version, &t.LastSeq,
		&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		&wakeAt, &holdAt, &runnable, &t.LeaseOwner, &leaseUntil, &createdAt, &updatedAt, &v[7], &v[8]}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	t.State = a2a.TaskState(state)
	if err := unpackColumns(t.ID, t.ContextID,
		[]*json.RawMessage{&t.Status, &t.Artifacts, &t.Metadata, &t.Checkpoint, &t.Question, &t.Input, &t.Pause},
		[][]byte{r.value(0), r.value(1), r.value(2), r.value(3), r.value(4), r.value(5), r.value(6)},
		r.value(7), r.value(8)); err != nil {
		return nil, err
	}
	t.WakeAt = fromNullMillis(wakeAt)
	t.HoldAt = fromNullMillis(holdAt)
	t.Runnable = runnable != 0
	t.LeaseUntil = fromMillis(leaseUntil)
	t.CreatedAt = fromMillis(createdAt)
	t.UpdatedAt = fromMillis(updatedAt)
	return &t, nil
}

// scanEntry returns the scanner of task taskID's log entries.
func scanEntry(taskID string) func(scanner) (store.LogEntry, error) {
	return func(row scanner) (store.LogEntry, error) { return scanEntryOf(row, taskID) }
}

// scanEntryOf scans one row of rows (a *sql.Rows: the bytes are read in
// place, and copied as they are unpacked).
func scanEntryOf(row scanner, taskID string) (store.LogEntry, error) {
	var (
		e           store.LogEntry
		kind, msgID sql.RawBytes
		inHistory   int64
		notify      int64
		body        sql.RawBytes
		at          int64
	)
	if err := row.Scan(&e.Seq, &kind, &msgID, &inHistory, &notify, &body, &at); err != nil {
		return store.LogEntry{}, err
	}
	var err error
	if e.MessageID, err = unpackKey(msgID); err != nil {
		return store.LogEntry{}, err
	}
	e.Kind = kindOf(kind)
	e.InHistory = inHistory != 0
	e.Notify = notify != 0
	if e.Body, err = unpackEntry(taskID, body); err != nil {
		return store.LogEntry{}, err
	}
	e.At = fromMillis(at)
	return e, nil
}

// kindOf is a stored kind as a store.Kind, without a new string for the
// kinds there are.
func kindOf(b []byte) store.Kind {
	for _, k := range [...]store.Kind{store.KindMessage, store.KindStatus, store.KindArtifact, store.KindReminder} {
		if string(b) == string(k) {
			return k
		}
	}
	return store.Kind(b)
}

// asStored returns t as it reads back from the store: JSON columns nil when
// empty, the lease and timer times at millisecond precision.
// The caller sets the columns the store owns.
func asStored(t *store.Task) *store.Task {
	c := *t
	// The JSON columns are the caller's own bytes, as written: they are
	// not copied (the engine replaces a column, never edits one in place).
	c.Status = raw(t.Status)
	c.Artifacts = raw(t.Artifacts)
	c.Metadata = raw(t.Metadata)
	c.Checkpoint = raw(t.Checkpoint)
	c.Question = raw(t.Question)
	c.Input = raw(t.Input)
	c.Pause = raw(t.Pause)
	c.WakeAt = fromNullMillis(nullMillis(t.WakeAt))
	c.HoldAt = fromNullMillis(nullMillis(t.HoldAt))
	c.LeaseUntil = fromMillis(toMillis(t.LeaseUntil))
	return &c
}

// CreateTask inserts t with Version 1, LastSeq len(entries) and CreatedAt
// and UpdatedAt set to now, and appends entries to its log with Seq 1, 2,
// ..., in one transaction (shared with concurrent writes; see writer.go).
// An entry's zero At is set to now. It returns the stored task, or
// store.ErrExists when the ID is taken. A new task has no push
// configurations yet (PutPushConfig needs the task), so its Notify entries
// have no configuration to move.
func (s *Store) CreateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	if t == nil {
		return nil, errors.New("sqlite: CreateTask: nil task")
	}
	var got *store.Task
	p := packTask(t, entries)
	defer p.release()
	err := s.write(ctx, func(b *batch) error {
		var err error
		got, err = b.createTask(t, entries, &p, time.Now().UnixMilli())
		return err
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

func (b *batch) createTask(t *store.Task, entries []store.LogEntry, p *packedTask, now int64) (*store.Task, error) {
	res, err := b.stmt(stmtInsertTask).Exec(
		t.ID, t.ContextID, nullString(t.Tenant), nullString(t.Owner), t.Agent, string(t.State), int64(len(entries)),
		p.cols[0], p.cols[1], p.cols[2], p.cols[3], p.cols[4], p.cols[5], p.cols[6],
		nullMillisArg(t.WakeAt), nullMillisArg(t.HoldAt), boolInt(t.Runnable), nullString(t.LeaseOwner), toMillis(t.LeaseUntil), now, now, p.ref,
		nullKey(t.RequestKey))
	if err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, translate("CreateTask", t.ID, err)
	} else if n == 0 {
		return nil, store.ErrExists // ON CONFLICT DO NOTHING: the ID or the request key is taken
	}
	key, err := res.LastInsertId()
	if err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	if err := b.appendLog(key, 1, entries, p.bodies, now); err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	got := asStored(t)
	got.PushDue = false
	got.RequestKey = ""
	got.Version, got.LastSeq = 1, int64(len(entries)) // the version the insert writes
	got.CreatedAt, got.UpdatedAt = fromMillis(now), fromMillis(now)
	return got, nil
}

// CreateTasks inserts many tasks with their logs in one transaction, each
// as CreateTask would (Version 1, LastSeq len(logs[i]), CreatedAt and
// UpdatedAt now, log Seq 1, 2, ...). Either every task is inserted or none:
// store.ErrExists when any ID is taken. It is for bulk loads (imports, the
// benchmark's paused tasks), not for the engine, which creates tasks one at
// a time; logs may be shorter than tasks (missing logs are empty).
func (s *Store) CreateTasks(ctx context.Context, tasks []*store.Task, logs [][]store.LogEntry) error {
	if len(logs) > len(tasks) {
		return fmt.Errorf("sqlite: CreateTasks: %d logs for %d tasks", len(logs), len(tasks))
	}
	for _, t := range tasks {
		if t == nil {
			return errors.New("sqlite: CreateTasks: nil task")
		}
	}
	packed := make([]packedTask, len(tasks))
	for i, t := range tasks {
		var es []store.LogEntry
		if i < len(logs) {
			es = logs[i]
		}
		packed[i] = packTask(t, es)
	}
	defer func() {
		for i := range packed {
			packed[i].release()
		}
	}()
	return s.write(ctx, func(b *batch) error {
		// Its own savepoint: a taken ID undoes this call's inserts only,
		// not the other writes of the batch.
		if _, err := b.exec(`SAVEPOINT create_tasks`); err != nil {
			return fmt.Errorf("sqlite: CreateTasks: %w", err)
		}
		err := b.createTasks(tasks, logs, packed, time.Now().UnixMilli())
		if err != nil {
			if _, rerr := b.exec(`ROLLBACK TO create_tasks`); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if _, rerr := b.exec(`RELEASE create_tasks`); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	})
}

// bulkRows is how many rows one INSERT of CreateTasks carries.
const bulkRows = 64

// bulkLogCols are the task_log columns CreateTasks inserts, bulkLogRow
// the values of one row: the task's key is looked up by its ID, as the
// tasks of one INSERT get theirs.
const (
	bulkLogCols = "task_key, seq, kind, message_id, in_history, notify, body, at"
	bulkLogRow  = "((SELECT key FROM tasks WHERE id = ?),?,?,?,?,?,?,?)"
)

// createTasks inserts tasks and their logs with multi-row INSERTs; packed
// are their packTask.
func (b *batch) createTasks(tasks []*store.Task, logs [][]store.LogEntry, packed []packedTask, now int64) error {
	var args []any
	flush := func(table, cols, row string, rows int, onConflict string) (int64, error) {
		if rows == 0 {
			return 0, nil
		}
		q := "INSERT INTO " + table + " (" + cols + ") VALUES " +
			strings.TrimSuffix(strings.Repeat(row+",", rows), ",") + onConflict
		res, err := b.exec(q, args...)
		args = args[:0]
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	rows := 0
	for i, t := range tasks {
		var n int64
		if i < len(logs) {
			n = int64(len(logs[i]))
		}
		p := &packed[i]
		args = append(args, t.ID, t.ContextID, t.Tenant, t.Owner, t.Agent, string(t.State), int64(1), n,
			p.cols[0], p.cols[1], p.cols[2], p.cols[3], p.cols[4], p.cols[5], p.cols[6],
			nullMillisArg(t.WakeAt), nullMillisArg(t.HoldAt), boolInt(t.Runnable), t.LeaseOwner, toMillis(t.LeaseUntil), now, now, p.ref,
			nullKey(t.RequestKey))
		if rows++; rows == bulkRows || i == len(tasks)-1 {
			got, err := flush("tasks", taskCols+", request_key", taskRow, rows, " ON CONFLICT DO NOTHING")
			if err != nil {
				return translate("CreateTasks", t.ID, err)
			}
			if got != int64(rows) {
				return store.ErrExists
			}
			rows = 0
		}
	}
	var last string
	for i, entries := range logs {
		for j, e := range entries {
			at := now
			if !e.At.IsZero() {
				at = e.At.UnixMilli()
			}
			args = append(args, tasks[i].ID, int64(j+1), string(e.Kind), packKey(e.MessageID), boolInt(e.InHistory), boolInt(e.Notify), packed[i].bodies[j], at)
			last = tasks[i].ID
			if rows++; rows == bulkRows {
				if _, err := flush("task_log", bulkLogCols, bulkLogRow, rows, ""); err != nil {
					return translate("CreateTasks", last, err)
				}
				rows = 0
			}
		}
	}
	if _, err := flush("task_log", bulkLogCols, bulkLogRow, rows, ""); err != nil {
		return translate("CreateTasks", last, err)
	}
	return nil
}

// pointRead returns the context to run a short indexed read of one task
// with: ctx's error if it has ended, else ctx without its cancellation.
// The driver watches a cancellable context with a goroutine per statement
// (to interrupt SQLite), which costs more than these reads take (~15 of
// ~50 us of CPU); a point read runs to its end instead, in well under a
// millisecond. ListTasks, which may scan, keeps its cancellation.
func pointRead(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// GetTask returns the task, or store.ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (*store.Task, error) {
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	t, err := scanTask(s.rstmts[stmtGetTask].QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, translate("GetTask", id, err)
	}
	return t, nil
}

// TaskByRequestKey returns the task created with key, or store.ErrNotFound.
func (s *Store) TaskByRequestKey(ctx context.Context, key string) (*store.Task, error) {
	if key == "" {
		return nil, store.ErrNotFound
	}
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	t, err := scanTask(s.rstmts[stmtTaskByRequest].QueryRowContext(ctx, packKey(key)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, translate("TaskByRequestKey", key, err)
	}
	return t, nil
}

// LoadTask returns the task with what p asks for, in one statement.
func (s *Store) LoadTask(ctx context.Context, id string, p store.LoadParams) (*store.Loaded, error) {
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	var msg, req []byte
	t, err := scanTaskWith(s.rstmts[stmtLoadTask].QueryRowContext(ctx, id, packKey(p.MessageID), boolInt(p.Request)), &msg, &req)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, translate("LoadTask", id, err)
	}
	l := &store.Loaded{Task: t}
	if l.Message, err = unpackEntry(id, msg); err != nil {
		return nil, translate("LoadTask", id, err)
	}
	if l.Request, err = unpackEntry(id, req); err != nil {
		return nil, translate("LoadTask", id, err)
	}
	return l, nil
}

// UpdateTask replaces the mutable columns of the task (all but ID, Tenant,
// Owner, Agent and CreatedAt) with those of t, sets UpdatedAt to now,
// increments the version and appends entries to its log, in one
// transaction (shared with concurrent writes; see writer.go), if the stored
// version is still t.Version. It returns the stored task;
// store.ErrConflict when the version moved, store.ErrNotFound when there is
// no such task. When an entry has Notify set, the same transaction moves
// the task's push configurations to the newest such entry (stmtPushTarget).
func (s *Store) UpdateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	if t == nil {
		return nil, errors.New("sqlite: UpdateTask: nil task")
	}
	var got *store.Task
	p := packTask(t, entries)
	defer p.release()
	err := s.write(ctx, func(b *batch) error {
		now := time.Now().UnixMilli()
		n := int64(len(entries))
		pushDue := false
		// What the statement returns (updateReturns), in one variable: the
		// scan's destinations escape, and each would be an allocation.
		var r struct {
			key                  int64
			tenant, owner, agent string
			version, lastSeq     int64
			createdAt            int64
			hasPush              int64
		}
		dest := []any{&r.key, &r.tenant, &r.owner, &r.agent, &r.version, &r.lastSeq, &r.createdAt, &r.hasPush}
		err := b.stmt(stmtUpdateTask).QueryRow(string(t.State),
			p.cols[0], p.cols[1], p.cols[2], p.cols[3], p.cols[4], p.cols[5], p.cols[6],
			nullMillisArg(t.WakeAt), nullMillisArg(t.HoldAt), boolInt(t.Runnable), nullString(t.LeaseOwner), toMillis(t.LeaseUntil),
			now, n, p.ref,
			t.ID, t.Version, t.ContextID).Scan(dest...)
		if errors.Is(err, sql.ErrNoRows) {
			// Another context, or a version that moved, or no such task.
			err = b.stmt(stmtUpdateTaskContext).QueryRow(string(t.State),
				p.cols[0], p.cols[1], p.cols[2], p.cols[3], p.cols[4], p.cols[5], p.cols[6],
				nullMillisArg(t.WakeAt), nullMillisArg(t.HoldAt), boolInt(t.Runnable), nullString(t.LeaseOwner), toMillis(t.LeaseUntil),
				now, n, p.ref, t.ContextID,
				t.ID, t.Version).Scan(dest...)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return b.missingOrMoved(t.ID)
		}
		if err != nil {
			return translate("UpdateTask", t.ID, err)
		}
		if err := b.appendLog(r.key, r.lastSeq-n+1, entries, p.bodies, now); err != nil {
			return translate("UpdateTask", t.ID, err)
		}
		if seq := newestNotify(r.lastSeq-n+1, entries); seq > 0 && r.hasPush != 0 {
			res, err := b.stmt(stmtPushTarget).Exec(seq, now, t.ID)
			if err != nil {
				return translate("UpdateTask", t.ID, err)
			}
			if n, err := res.RowsAffected(); err == nil && n > 0 {
				pushDue = true
			}
		}
		got = asStored(t)
		got.PushDue = pushDue
		got.Tenant, got.Owner, got.Agent = r.tenant, r.owner, r.agent
		got.Version, got.LastSeq = r.version, r.lastSeq
		got.CreatedAt, got.UpdatedAt = fromMillis(r.createdAt), fromMillis(now)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// missingOrMoved tells why a compare-and-set on id matched no row:
// store.ErrNotFound when there is no such task, else store.ErrConflict.
func (b *batch) missingOrMoved(id string) error {
	var one int
	err := b.stmt(stmtTaskExists).QueryRow(id).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return fmt.Errorf("sqlite: task %q: %w", id, err)
	default:
		return store.ErrConflict
	}
}

// appendLog inserts entries into the log of the task with key, numbering
// them from first on, with bodies, their packed bodies, in one statement
// for up to logRows of them. A zero At becomes now.
func (b *batch) appendLog(key int64, first int64, entries []store.LogEntry, bodies []any, now int64) error {
	for len(entries) > 0 {
		n := min(len(entries), logRows)
		args := b.s.wlogArgs[:0]
		for i, e := range entries[:n] {
			at := now
			if !e.At.IsZero() {
				at = e.At.UnixMilli()
			}
			args = append(args, key, first+int64(i), string(e.Kind), nullKey(e.MessageID),
				boolInt(e.InHistory), boolInt(e.Notify), bodies[i], at)
		}
		b.s.wlogArgs = args
		_, err := b.stmt(stmtInsertLog + n - 1).Exec(args...)
		clear(args) // the bodies are the caller's, released after the write
		if err != nil {
			return err
		}
		entries, bodies, first = entries[n:], bodies[n:], first+int64(n)
	}
	return nil
}

// newestNotify returns the seq of the newest entry with Notify set among
// entries numbered from first on, 0 when none is.
func newestNotify(first int64, entries []store.LogEntry) int64 {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Notify {
			return first + int64(i)
		}
	}
	return 0
}

// ReadLog returns the task's log entries with Seq > afterSeq, oldest first,
// at most limit of them (limit <= 0: all). A task with no entries, or no
// such task, gives none.
func (s *Store) ReadLog(ctx context.Context, taskID string, afterSeq int64, limit int) ([]store.LogEntry, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.rstmts[stmtReadLog].QueryContext(ctx, taskID, afterSeq, limit)
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
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.rstmts[stmtHistory].QueryContext(ctx, taskID, last)
	if err != nil {
		return nil, translate("History", taskID, err)
	}
	return collectEntries("History", taskID, rows)
}

func collectEntries(op, id string, rows *sql.Rows) ([]store.LogEntry, error) {
	out, err := scanAll(rows, scanEntry(id))
	if err != nil {
		return nil, translate(op, id, err)
	}
	return out, nil
}

// scanAll reads every row with scan and closes rows (before it returns:
// inside a write transaction the statement must be done with).
func scanAll[T any](rows interface {
	scanner
	Next() bool
	Err() error
	Close() error
}, scan func(scanner) (T, error)) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, v)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
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
	q := listing.Build(listDialect, p)
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}
	defer tx.Rollback()

	res := &store.ListResult{}
	if !p.NoTotal {
		if err := tx.QueryRowContext(ctx, q.Count, q.CountArgs...).Scan(&res.TotalSize); err != nil {
			return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
		}
	}
	rows, err := tx.QueryContext(ctx, q.Page, q.PageArgs...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}
	if res.Tasks, err = scanAll(rows, scanTask); err != nil {
		return nil, fmt.Errorf("sqlite: ListTasks: %w", err)
	}
	if len(res.Tasks) > p.PageSize {
		res.Tasks = res.Tasks[:p.PageSize]
		last := res.Tasks[len(res.Tasks)-1]
		res.Next = &store.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	return res, nil
}

// listDialect is SQLite's for the ListTasks statements (store/internal/listing).
var listDialect = listing.Dialect{
	Param: func(n int) string { return "?" + strconv.Itoa(n) },
	Time:  func(t time.Time) any { return t.UnixMilli() },
	// Without statistics the planner takes the index that matches more
	// columns, and reads every task of the caller's.
	ByContext: "tasks INDEXED BY tasks_context",
	Cols:      taskSel,
	// Migration 0008's triggers count every state, in the writer's
	// transaction: about 1% of a round trip (docs/decisions/0125).
	Counted: store.TaskStates,
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
	var out []*store.Task
	err := s.write(ctx, func(b *batch) error {
		out = nil
		rows, err := b.stmt(stmtClaim).Query(
			p.Owner, p.Now.Add(p.LeaseFor).UnixMilli(), p.Now.UnixMilli(), p.Limit)
		if err != nil {
			return fmt.Errorf("sqlite: ClaimRunnable: %w", err)
		}
		if out, err = scanAll(rows, scanTask); err != nil {
			return fmt.Errorf("sqlite: ClaimRunnable: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ExtendLease moves the lease of task id to until if owner still holds it
// at version, leaving the version alone. store.ErrConflict when the lease
// or the version moved, store.ErrNotFound when there is no such task.
func (s *Store) ExtendLease(ctx context.Context, id, owner string, version int64, until time.Time) error {
	return s.write(ctx, func(b *batch) error {
		res, err := b.stmt(stmtExtendLease).Exec(toMillis(until), id, owner, version)
		if err != nil {
			return translate("ExtendLease", id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return translate("ExtendLease", id, err)
		}
		if n == 0 {
			return b.missingOrMoved(id)
		}
		return nil
	})
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

// nullString stores an empty string as NULL.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
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

// nullMillis is a nullable time column's value (wake_at, hold_at,
// due_at): unix milliseconds, invalid (NULL) for the zero time.
func nullMillis(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixMilli(), Valid: true}
}

// nullMillisArg is nullMillis as a statement argument: nil or an int64.
func nullMillisArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// fromNullMillis reads back a nullMillis value; NULL is the zero time.
func fromNullMillis(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64).UTC()
}

// fromMillis reads back a toMillis value; 0 is the zero time.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// SingleNode reports that the store is one process's: an SQLite file is the
// embedded store of one askpoint node. The engine then keeps the rows it
// wrote last (docs/decisions/0018-kept-rows.md).
func (s *Store) SingleNode() bool { return true }

// LockTask takes key's lock (store.Locker): an in-process mutex, which on
// a file one process owns holds the task against every other writer. The
// store's reads and writes are the same with or without it.
func (s *Store) LockTask(key string) store.TaskLock { return s.locks.Take(key) }

// ScanLogs streams the log entries of kinds (empty: all) of every task, in
// the order of task_log's primary key (task, then seq), so SQLite walks
// the index and sorts nothing. The scan is one statement, on one reader
// connection: one snapshot of the file, which writers do not wait for.
func (s *Store) ScanLogs(ctx context.Context, kinds []store.Kind, fn func(taskID, agent string, e store.LogEntry) error) error {
	q := `SELECT t.id, t.agent, l.seq, l.kind, l.message_id, l.in_history, l.notify, l.body, l.at
		FROM task_log l JOIN tasks t ON t.key = l.task_key`
	var args []any
	if len(kinds) > 0 {
		q += ` WHERE l.kind IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(kinds)), ", ") + `)`
		for _, k := range kinds {
			args = append(args, string(k))
		}
	}
	q += ` ORDER BY l.task_key, l.seq`
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("sqlite: ScanLogs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, agent string
		var e store.LogEntry
		var kind string
		var inHistory, notify, at int64
		var body []byte
		var msgID []byte
		if err = rows.Scan(&id, &agent, &e.Seq, &kind, &msgID, &inHistory, &notify, &body, &at); err != nil {
			return fmt.Errorf("sqlite: ScanLogs: %w", err)
		}
		if e.MessageID, err = unpackKey(msgID); err != nil {
			return fmt.Errorf("sqlite: ScanLogs: task %q: %w", id, err)
		}
		e.Kind, e.InHistory, e.Notify, e.At = store.Kind(kind), inHistory != 0, notify != 0, fromMillis(at)
		if e.Body, err = unpackEntry(id, body); err != nil {
			return fmt.Errorf("sqlite: ScanLogs: task %q: %w", id, err)
		}
		if err := fn(id, agent, e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: ScanLogs: %w", err)
	}
	return nil
}
