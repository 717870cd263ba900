// Package postgres is askpoint's multi-node store driver: every askpoint
// process of a deployment opens the same PostgreSQL database (through
// github.com/jackc/pgx/v5 and a pgxpool) and the nodes are otherwise
// stateless.
//
// Every transition is one statement and so one round trip: a
// compare-and-set UPDATE ... WHERE id = $1 AND version = $2 whose log
// entries are inserted by a data-modifying CTE of the same statement. A
// quick step's transition holds the task's row in a transaction of its own
// from its read to that write (task locks, lock.go; decision 0020).
// Claims take runnable tasks with FOR UPDATE SKIP LOCKED, so concurrent
// claimers on any number of nodes never get the same task and never wait
// for one another.
//
// Every write that changes a task (CreateTask, UpdateTask, a claim) is
// announced, once it has committed, with pg_notify('askpoint_tasks',
// task_id): a background goroutine sends the IDs of the writes that
// committed meanwhile in one statement, on a connection of its own, and
// ReadLog reads from a small pool apart from the writes', so that neither
// the announcement nor the other node's read of the new entries waits for
// a connection behind a busy node's writes (decision 0270). (A NOTIFY
// inside the write's own transaction would hold PostgreSQL's database-wide
// notification lock through the commit's WAL flush and serialise every
// notifying commit of the database; measured here it cut concurrent writes
// several-fold. See docs/decisions/0007-postgres.md.) The Store
// implements [store.Notifier]: Listen turns the notifications into
// wake-ups of the callers waiting on this node for a task that another
// node changed. A notification is a hint: one lost (the writer died
// between commit and notify, the listener was reconnecting) only delays a
// waiter until its next poll of the store.
//
// The schema is created and upgraded by migrations embedded in the binary
// (migrations/NNNN_name.sql), applied by Open in one transaction that holds
// a transaction-scoped advisory lock, so that several nodes starting at once
// apply each migration once. Tables go to the schema named by the
// search_path of the URL (or Options.Schema), which Open creates if it is
// missing: several deployments, or tests, can share one database.
//
// Times are stored as timestamptz truncated to the millisecond and come
// back in UTC: the same precision as the SQLite driver, so that a listing
// cursor carried as unix milliseconds matches rows exactly. CreatedAt,
// UpdatedAt and a log entry's default time come from the database's clock,
// one clock for every node; lease times are the caller's.
package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/keylock"
	"github.com/askpoint/askpoint/store/internal/listing"
	"github.com/askpoint/askpoint/store/internal/pack"
)

// Channel is the LISTEN/NOTIFY channel on which every write that changes a
// task announces the task's ID, when the tables are in the default schema.
// Channels are database-wide, so a store in a schema of its own uses
// ChannelFor(schema): deployments in different schemas of one database do
// not wake each other's waiters.
const Channel = "askpoint_tasks"

// ChannelFor is the notification channel of a store whose tables are in
// schema ("" for the default).
func ChannelFor(schema string) string {
	if schema == "" {
		return Channel
	}
	sum := sha256.Sum256([]byte(schema))
	return Channel + "_" + hex.EncodeToString(sum[:8])
}

// Options tune OpenWith. The zero value is what Open uses.
type Options struct {
	// Schema puts the tables in this schema (created if missing) and sets
	// it as the search_path of every connection. Empty: the URL's
	// search_path when that names one schema (created if missing too), else
	// the server's default (usually public).
	Schema string
	// MaxConns caps the pool. Zero: the URL's pool_max_conns, else
	// 4 × GOMAXPROCS + 4 (at least 8). Besides the pool a store holds
	// the listener's connection (while Listen runs), the notifier's (once
	// it has written) and up to GOMAXPROCS (at least 2) for reading task
	// logs, so that those never wait behind the writes (decision 0270).
	MaxConns int32
	// Logger receives the listener's reconnects. Defaults to a discarding
	// logger.
	Logger *slog.Logger
	// ReadOnly opens the store for reading only, as a tool reads the
	// database of running servers (askpoint stats): no schema is created
	// and nothing is migrated, and every connection's transactions are
	// read-only (default_transaction_read_only), so a write fails in
	// PostgreSQL itself. The schema must be the one this binary's
	// migrations make.
	ReadOnly bool

	// tracer, when set, sees every statement of the store's connections
	// (the tests' record of what the store runs).
	tracer pgx.QueryTracer
}

// Store is a store.Store in a PostgreSQL database. It is safe for
// concurrent use by many goroutines and by many processes on one database.
type Store struct {
	pool   *pgxpool.Pool
	logs   *pgxpool.Pool   // ReadLog's, apart from the writes (decision 0270)
	listen *pgx.ConnConfig // for the LISTEN connection, outside the pool
	schema string
	log    *slog.Logger
	notes  *notifier

	locks     keylock.Locks // LockTask's in-process half
	lockSlots chan struct{} // one per transaction task locks may hold open

	list listing.Dialect // listDialect; its bounds moved by tests

	// idle is how long the listener waits for a notification before it
	// checks its connection (listenIdle; shorter in tests), and idleChecked,
	// when set (by tests, before Listen), is called after each check passed.
	idle        time.Duration
	idleChecked func()
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// IsURL reports whether s is a PostgreSQL connection URL
// (postgres:// or postgresql://), the form Open takes.
func IsURL(s string) bool {
	l := strings.ToLower(s)
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Redact returns the URL u with its password (in the user info or in a
// password query parameter) replaced by "xxxxx", for logs and messages.
func Redact(u string) string {
	if !IsURL(u) && strings.Contains(strings.ToLower(u), "password") {
		return "(a connection string that holds a password; not shown)"
	}
	p, err := url.Parse(u)
	if err != nil {
		scheme, _, _ := strings.Cut(u, "://")
		return scheme + "://(a URL that does not parse; not shown)"
	}
	q := p.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		p.RawQuery = q.Encode()
	}
	return p.Redacted()
}

// Open connects to the PostgreSQL database at the URL (postgres://... or
// postgresql://..., every pgx parameter allowed, search_path included) and
// applies the embedded migrations the database has not seen yet.
func Open(ctx context.Context, connURL string) (*Store, error) {
	return OpenWith(ctx, connURL, Options{})
}

var plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// OpenWith is Open with options.
func OpenWith(ctx context.Context, connURL string, o Options) (*Store, error) {
	shown := Redact(connURL)
	if !IsURL(connURL) {
		return nil, fmt.Errorf("postgres: open %q: need a postgres:// or postgresql:// URL", shown)
	}
	cfg, err := pgxpool.ParseConfig(connURL)
	if err != nil {
		// pgx's message quotes the URL, hiding passwords only "best
		// effort": say it in our words, with the cause it wraps.
		msg := "the URL does not parse"
		if cause := errors.Unwrap(err); cause != nil {
			msg += ": " + cause.Error()
		}
		return nil, fmt.Errorf("postgres: open %s: %s", shown, msg)
	}
	schema := o.Schema
	if schema == "" {
		if sp := strings.TrimSpace(cfg.ConnConfig.RuntimeParams["search_path"]); plainIdent.MatchString(sp) {
			schema = sp
		}
	}
	if schema != "" {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case !strings.Contains(connURL, "pool_max_conns"):
		cfg.MaxConns = int32(max(8, 4*runtime.GOMAXPROCS(0)+4))
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "askpoint"
	}
	if cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] == "" {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = lockIdleTimeout
	}
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if o.tracer != nil {
		cfg.ConnConfig.Tracer = o.tracer
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", shown, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", shown, err)
	}
	prepareSchema := migrate
	if o.ReadOnly {
		prepareSchema = checkSchema
	}
	if err := prepareSchema(ctx, pool, schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", shown, err)
	}
	lcfg := cfg.Copy()
	lcfg.MaxConns = int32(max(2, runtime.GOMAXPROCS(0)))
	lcfg.MinConns = 0
	logs, err := pgxpool.NewWithConfig(ctx, lcfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", shown, err)
	}
	return &Store{
		pool: pool, logs: logs, listen: cfg.ConnConfig.Copy(), schema: schema, log: log,
		notes:     startNotifier(cfg.ConnConfig.Copy(), ChannelFor(schema), log),
		lockSlots: make(chan struct{}, max(1, cfg.MaxConns/2)),
		list:      listDialect,
		idle:      listenIdle,
	}, nil
}

// Close sends the change notifications still queued, then closes the pools.
// A Listen call runs on its own connection and ends with its context.
func (s *Store) Close() error {
	s.notes.stop()
	s.logs.Close()
	s.pool.Close()
	return nil
}

// nowMS is the database's clock to the millisecond, the same value for the
// whole statement.
const nowMS = `date_trunc('milliseconds', statement_timestamp())`

// taskCols are the tasks columns in the order scanTask reads them.
const taskCols = `id, context_id, tenant, owner, agent, state, version, last_seq,
	status, artifacts, metadata, checkpoint, question, input, pause,
	wake_at, hold_at, runnable, lease_owner, lease_until, created_at, updated_at`

// refCols are the columns read after taskCols of a task row (from names
// it; it has ref_seq and key too): the stored bodies of the entries its
// JSON columns are packed against (pack.PackRow), from ref_seq on, each
// one lookup of the log's primary key; NULL when there is none.
func refCols(from string) string {
	return fmt.Sprintf(`, (SELECT body FROM task_log WHERE task_key = %[1]s.key AND seq = %[1]s.ref_seq),
	(SELECT body FROM task_log WHERE task_key = %[1]s.key AND seq = %[1]s.ref_seq + 1 AND seq <= %[1]s.last_seq)`, from)
}

// logOf is the log's key of task $1 (migration 0010: the log names its
// task by tasks.key), for a statement that reads the log by task ID.
const logOf = `(SELECT key FROM tasks WHERE id = $1)`

// readCols are the columns scanTask reads from the table tasks.
var readCols = taskCols + refCols("tasks")

// writtenCols are the columns CreateTask and UpdateTask read back, in the
// order scanWritten reads them: those the database sets or keeps. The
// others are the caller's, as it gave them (asStored).
const writtenCols = `id, tenant, owner, agent, state, version, last_seq, created_at, updated_at`

// logCols are the task_log columns in the order scanEntry reads them.
const logCols = `seq, kind, message_id, in_history, notify, body, at`

func scanTask(row pgx.Row) (*store.Task, error) { return scanTaskWith(row) }

// scanTaskWith scans the task columns and refCols, and then extra, the
// columns a query selects after them.
func scanTaskWith(row pgx.Row, extra ...any) (*store.Task, error) {
	var (
		t                    store.Task
		state                string
		status, artifacts    []byte
		metadata, checkpoint []byte
		question, input      []byte
		pause                []byte
		ref1, ref2           []byte
		wakeAt, holdAt       pgtype.Timestamptz
		leaseUntil           pgtype.Timestamptz
		createdAt, updatedAt time.Time
	)
	dest := []any{&t.ID, &t.ContextID, &t.Tenant, &t.Owner, &t.Agent, &state, &t.Version, &t.LastSeq,
		&status, &artifacts, &metadata, &checkpoint, &question, &input, &pause,
		&wakeAt, &holdAt, &t.Runnable, &t.LeaseOwner, &leaseUntil, &createdAt, &updatedAt, &ref1, &ref2}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	t.State = a2a.TaskState(state)
	if err := pack.UnpackColumns(t.ID, t.ContextID,
		[]*json.RawMessage{&t.Status, &t.Artifacts, &t.Metadata, &t.Checkpoint, &t.Question, &t.Input, &t.Pause},
		[][]byte{status, artifacts, metadata, checkpoint, question, input, pause}, ref1, ref2); err != nil {
		return nil, fmt.Errorf("task %q: %w", t.ID, err)
	}
	t.WakeAt = fromTS(wakeAt)
	t.HoldAt = fromTS(holdAt)
	if leaseUntil.Valid && leaseUntil.InfinityModifier == pgtype.Finite {
		t.LeaseUntil = leaseUntil.Time.UTC()
	}
	t.CreatedAt = createdAt.UTC()
	t.UpdatedAt = updatedAt.UTC()
	return &t, nil
}

// asStored returns t as it reads back from the store: JSON columns nil
// when empty, the lease and timer times at millisecond precision, in UTC.
// The JSON columns are the caller's own bytes, as written (the engine
// replaces a column, never edits one in place). The caller sets the
// columns the store owns (scanWritten).
func asStored(t *store.Task) *store.Task {
	c := *t
	c.Status, c.Artifacts, c.Metadata = raw(t.Status), raw(t.Artifacts), raw(t.Metadata)
	c.Checkpoint, c.Question, c.Input, c.Pause = raw(t.Checkpoint), raw(t.Question), raw(t.Input), raw(t.Pause)
	c.WakeAt, c.HoldAt = fromTS(ts(t.WakeAt)), fromTS(ts(t.HoldAt))
	c.LeaseUntil = fromTS(leaseTS(t.LeaseUntil))
	c.PushDue, c.RequestKey = false, "" // a read leaves RequestKey empty
	return &c
}

// scanWritten scans writtenCols, then extra, into the task written from
// t: t as stored with the columns the database sets or keeps.
func scanWritten(row pgx.Row, t *store.Task, extra ...any) (*store.Task, error) {
	got := asStored(t)
	var state string
	var createdAt, updatedAt time.Time
	dest := []any{&got.ID, &got.Tenant, &got.Owner, &got.Agent, &state, &got.Version, &got.LastSeq, &createdAt, &updatedAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	got.State = a2a.TaskState(state)
	got.CreatedAt, got.UpdatedAt = createdAt.UTC(), updatedAt.UTC()
	return got, nil
}

// scanEntry returns the scanner of task taskID's log entries.
func scanEntry(taskID string) func(pgx.Row) (store.LogEntry, error) {
	return func(row pgx.Row) (store.LogEntry, error) { return scanEntryOf(row, taskID) }
}

func scanEntryOf(row pgx.Row, taskID string) (store.LogEntry, error) {
	var (
		e    store.LogEntry
		kind string
		body []byte
	)
	if err := row.Scan(&e.Seq, &kind, &e.MessageID, &e.InHistory, &e.Notify, &body, &e.At); err != nil {
		return store.LogEntry{}, err
	}
	e.Kind = store.Kind(kind)
	var err error
	if e.Body, err = pack.UnpackEntry(taskID, body); err != nil {
		return store.LogEntry{}, fmt.Errorf("entry %d: %w", e.Seq, err)
	}
	e.At = e.At.UTC()
	return e, nil
}

// logArgs are the columns of entries as arrays, for unnest.
type logArgs struct {
	kinds  []string
	msgIDs []string
	hist   []bool
	notify []bool
	bodies [][]byte // packed (pack.Row.Bodies)
	ats    []pgtype.Timestamptz
}

func entryArgs(entries []store.LogEntry, bodies [][]byte) logArgs {
	a := logArgs{
		kinds:  make([]string, len(entries)),
		msgIDs: make([]string, len(entries)),
		hist:   make([]bool, len(entries)),
		notify: make([]bool, len(entries)),
		bodies: bodies,
		ats:    make([]pgtype.Timestamptz, len(entries)),
	}
	for i, e := range entries {
		a.kinds[i] = string(e.Kind)
		a.msgIDs[i] = e.MessageID
		a.hist[i] = e.InHistory
		a.notify[i] = e.Notify
		a.ats[i] = ts(e.At)
	}
	return a
}

// insertLog is the CTE body that appends the entries of parameters $L1..$L6
// (kinds, message IDs, history flags, notify flags, bodies, times) to the
// log of the one task row of the CTE named src, numbering them from first
// on (an SQL expression over src).
func insertLog(src, first string, p int) string {
	return fmt.Sprintf(`
		INSERT INTO task_log (task_key, seq, kind, message_id, in_history, notify, body, at)
		SELECT %[1]s.key, %[2]s + e.ord - 1, e.kind, e.message_id, e.in_history, e.notify, e.body, coalesce(e.at, %[3]s)
		FROM %[1]s, unnest($%[4]d::text[], $%[5]d::text[], $%[6]d::boolean[], $%[7]d::boolean[], $%[8]d::bytea[], $%[9]d::timestamptz[])
			WITH ORDINALITY AS e(kind, message_id, in_history, notify, body, at, ord)`,
		src, first, nowMS, p, p+1, p+2, p+3, p+4, p+5)
}

// createTaskSQL is CreateTask's statement, and createCountedSQL the same
// with the count of the task, for a task created in a state task_counts
// counts (countColumn).
var (
	createTaskSQL    = createTask("")
	createCountedSQL = createTask(`, c AS (` + addCounts(func(c countCol) string { return c.is("t.state") }, "FROM t") + `
		)`)
)

func createTask(counts string) string {
	return `
		WITH t AS (
			INSERT INTO tasks (` + taskCols + `, request_key, ref_seq)
			VALUES ($1, $2, $3, $4, $5, $6, 1, cardinality($15::text[]),
				$7::bytea, $8::bytea, $9::bytea, $10::bytea, $11::bytea, $12::bytea,
				$22::bytea, $23::timestamptz, $24::timestamptz,
				$13, $14, $21::timestamptz, ` + nowMS + `, ` + nowMS + `, $25, $26::bigint)
			RETURNING ` + writtenCols + `, key
		), l AS (` + insertLog("t", "1", 15) + `
		)` + counts + `
		SELECT ` + writtenCols + ` FROM t`
}

// CreateTask inserts t with Version 1, LastSeq len(entries) and CreatedAt
// and UpdatedAt set to the database's now, and appends entries to its log
// with Seq 1, 2, ..., in one statement. An entry's zero At becomes now. It
// returns the stored task, or store.ErrExists when the ID is taken.
// A new task has no push configurations yet (PutPushConfig needs the task),
// so its Notify entries have no configuration to move.
func (s *Store) CreateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	if t == nil {
		return nil, errors.New("postgres: CreateTask: nil task")
	}
	p := pack.PackRow(t, entries)
	defer p.Release()
	la := entryArgs(entries, p.Bodies)
	q := createTaskSQL
	if countColumn(string(t.State)) != "" {
		q = createCountedSQL
	}
	c := &p.Cols
	got, err := scanWritten(s.pool.QueryRow(ctx, q,
		t.ID, t.ContextID, t.Tenant, t.Owner, t.Agent, string(t.State),
		c[0], c[1], c[2], c[3], c[4], c[5],
		t.Runnable, t.LeaseOwner,
		la.kinds, la.msgIDs, la.hist, la.notify, la.bodies, la.ats,
		leaseTS(t.LeaseUntil), c[6], ts(t.WakeAt), ts(t.HoldAt), pgtype.Text{String: t.RequestKey, Valid: t.RequestKey != ""},
		refArg(p.Ref)), t)
	if err != nil {
		return nil, translate("CreateTask", t.ID, err)
	}
	s.notes.add(got.ID)
	return got, nil
}

// GetTask returns the task, or store.ErrNotFound.
func (s *Store) GetTask(ctx context.Context, id string) (*store.Task, error) {
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+readCols+` FROM tasks WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+readCols+` FROM tasks WHERE request_key = $1`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, translate("TaskByRequestKey", key, err)
	}
	return t, nil
}

// loadTaskSQL reads a task with what a transition needs besides the row:
// $2 a messageId to look up (” for none), $3 whether the request is wanted.
// Each lateral join is one index lookup (task_log_message, the log's key).
var loadTaskSQL = `
		SELECT ` + taskCols + refCols("t") + `, m.body, r.body
		FROM tasks t
		LEFT JOIN LATERAL (
			SELECT body FROM task_log
			WHERE task_key = t.key AND kind = 'message' AND message_id = $2 AND $2 <> ''
			ORDER BY seq LIMIT 1
		) m ON true
		LEFT JOIN LATERAL (
			SELECT body FROM task_log WHERE task_key = t.key AND seq = 1 AND $3
		) r ON true
		WHERE t.id = $1`

// LoadTask returns the task with what p asks for, in one statement.
func (s *Store) LoadTask(ctx context.Context, id string, p store.LoadParams) (*store.Loaded, error) {
	if l := s.lockOf(ctx, id); l != nil {
		return l.load(ctx, p)
	}
	return s.loadFrom(s.pool.QueryRow(ctx, loadTaskSQL, id, p.MessageID, p.Request), id)
}

// loadFrom scans what loadTaskSQL (or its locking form) read.
func (s *Store) loadFrom(row pgx.Row, id string) (*store.Loaded, error) {
	var msg, req []byte
	t, err := scanTaskWith(row, &msg, &req)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, translate("LoadTask", id, err)
	}
	l := &store.Loaded{Task: t}
	if l.Message, err = pack.UnpackEntry(id, msg); err == nil {
		l.Request, err = pack.UnpackEntry(id, req)
	}
	if err != nil {
		return nil, translate("LoadTask", id, err)
	}
	return l, nil
}

// update is one of UpdateTask's statements, in its two forms: sql, and
// held, the same statement for a task lock's transaction (which holds the
// task's row since before the statement's snapshot) that also moves the
// task's push configurations to its newest notify entry (pushTargetSQL's
// work, in a CTE) and returns after the task's columns whether it moved
// any (store.Task.PushDue).
type update struct{ sql, held string }

// updateSQL is UpdateTask's compare-and-set with its log append: $1 ID,
// $2 version, $3.. the mutable columns, $13..$18 the entries; where is
// what else the row must match, counts the CTEs of its counts (each
// ", name AS (...)").
func updateSQL(where, counts string) update {
	head := `
		WITH u AS (
			UPDATE tasks SET
				context_id = $3, state = $4,
				status = $5::bytea, artifacts = $6::bytea, metadata = $7::bytea,
				checkpoint = $8::bytea, question = $9::bytea, input = $10::bytea,
				pause = $20::bytea, ref_seq = last_seq + $23::bigint, wake_at = $21::timestamptz, hold_at = $22::timestamptz,
				runnable = $11, lease_owner = $12, lease_until = $19,
				updated_at = ` + nowMS + `, version = version + 1, last_seq = last_seq + cardinality($13::text[])
			WHERE id = $1 AND version = $2` + where + `
			RETURNING ` + writtenCols + `, key
		), l AS (` + insertLog("u", "u.last_seq - cardinality($13::text[]) + 1", 13) + `
		)` + counts
	return update{
		sql: head + `
		SELECT ` + writtenCols + ` FROM u`,
		// The newest notify entry is the last of this write's that
		// notifies; the statement writes held only when one does.
		held: head + `, p AS (
			UPDATE push_configs p SET target_seq = n.seq, due_at = coalesce(p.due_at, ` + nowMS + `)
			FROM (
				SELECT u.last_seq - cardinality($13::text[]) + max(e.ord) AS seq
				FROM u, unnest($16::boolean[]) WITH ORDINALITY AS e(notify, ord)
				WHERE e.notify
				GROUP BY u.last_seq
			) n
			WHERE p.task_id = $1 AND p.target_seq < n.seq
			RETURNING 1
		)
		SELECT ` + writtenCols + `, EXISTS (SELECT FROM p) FROM u`,
	}
}

// The statements of UpdateTask, by what the task's counts need: a task in
// an open state ($4 its new state) that stays in one (updateOpenSQL: no
// count) or finishes (updateFinishingSQL: one more in the new state's
// count, one less in the open tasks'), or any task (updateAnySQL: the
// state it had, o, read from the statement's snapshot, leaves its count
// and the new one gets it). o is the state the row had at $2: u changes
// the row only if the version it reads in the snapshot is $2 and is still
// $2 once it holds the row (a caller knows of version $2 only once it was
// committed, so before the snapshot), and every write that changes the
// state moves the version. A round trip writes one count as it finishes
// its task (and one as CreateTask creates it).
var (
	updateOpenSQL      = updateSQL(" AND state IN "+openIn, "")
	updateFinishingSQL = updateSQL(" AND state IN "+openIn, `, c AS (`+
		addCounts(func(c countCol) string {
			if c.name == openColumn {
				return "-1"
			}
			return c.is("u.state")
		}, "FROM u")+`
		)`)
	updateAnySQL = updateSQL("", `, o AS (
			SELECT state FROM tasks WHERE id = $1 AND version = $2
		), c AS (`+addCounts(func(c countCol) string { return c.is("u.state") + " - " + c.is("o.state") },
		"FROM u, o WHERE u.state <> o.state AND "+countsMove("o.state", "u.state"))+`
		)`)
)

// pushTargetSQL brings every push configuration of task $1 up to the
// task's newest notify entry: its target_seq moves there, and it is due now
// unless it already has a due time (a retry's backoff, a claim's lease).
// The version stays, so a delivery under way still settles. It is
// idempotent (target_seq never moves back), so it is harmless after a
// compare-and-set that lost.
var pushTargetSQL = `
		UPDATE push_configs p SET target_seq = n.seq, due_at = coalesce(p.due_at, ` + nowMS + `)
		FROM (
			SELECT seq FROM task_log
			WHERE task_key = ` + logOf + ` AND notify
			ORDER BY seq DESC
			LIMIT 1
		) n
		WHERE p.task_id = $1 AND p.target_seq < n.seq`

// UpdateTask replaces the mutable columns of the task (all but ID, Tenant,
// Owner, Agent and CreatedAt) with those of t, sets UpdatedAt to the
// database's now, increments the version and appends entries to its log,
// in one statement, if the stored version is still t.Version. It returns
// the stored task; store.ErrConflict when the version moved,
// store.ErrNotFound when there is no such task.
//
// Under PostgreSQL's read committed isolation a concurrent writer of the
// same row waits for the first to commit and then re-checks the WHERE
// clause against the committed row: the version has moved, so it matches
// nothing and loses. Exactly one of any number of writers of one version
// wins.
//
// When an entry has Notify set, a second statement (pushTargetSQL) moves
// the task's push configurations to it, pipelined with the first in one
// implicit transaction (still one round trip). It must be a statement of
// its own: under read committed it then reads the configurations as of
// after the first statement took the task's row lock, so it sees a
// configuration that PutPushConfig created while this write waited for
// that lock. (PutPushConfig holds a share lock on the task row, so it
// either finishes before this write takes the row, or reads the log after
// this write commits.) A single statement's snapshot predates the wait and
// would miss such a configuration, leaving the entry undelivered. Under a
// task lock that holds the row (LoadTask under it took the row lock in a
// statement of its own) there is no such wait: the write and the move are
// one statement (update.held).
// Concurrent settles and claims of a configuration take its row lock too,
// so each sees the other's write.
func (s *Store) UpdateTask(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	if t == nil {
		return nil, errors.New("postgres: UpdateTask: nil task")
	}
	if l := s.lockOf(ctx, t.ID); l != nil {
		return l.update(ctx, t, entries)
	}
	return s.updateOn(ctx, s.pool, t, entries, "", false)
}

// querier is what a write is sent through: the pool, or the connection
// of a task lock's transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// updateOn is UpdateTask through q; commit ends the transaction q holds
// open (a task lock's) in the same round trip. was is the state the task
// is in at t.Version when the caller knows it (a task lock that read it
// holds the row), else "": the write then first takes the task to be in an
// open state, and only if that matched no row writes again as for any
// state (updateAnySQL).
func (s *Store) updateOn(ctx context.Context, q querier, t *store.Task, entries []store.LogEntry, was string, commit bool) (*store.Task, error) {
	st := updateAnySQL
	if was == "" || isOpen(was) {
		switch {
		case isOpen(string(t.State)):
			st = updateOpenSQL
		case counted(string(t.State)):
			st = updateFinishingSQL
		}
	}
	p := pack.PackRow(t, entries)
	defer p.Release()
	got, err := s.updateWith(ctx, q, st, t, entries, &p, commit)
	if errors.Is(err, pgx.ErrNoRows) && was == "" && !commit && st != updateAnySQL {
		// Not at that version, or not in an open state.
		got, err = s.updateWith(ctx, q, updateAnySQL, t, entries, &p, commit)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, s.missingOrMoved(ctx, "UpdateTask", t.ID)
	}
	if err != nil {
		return nil, translate("UpdateTask", t.ID, err)
	}
	s.notes.add(got.ID)
	return got, nil
}

// updateWith sends st, one of the statements of UpdateTask, through q
// (with pushTargetSQL after it when an entry notifies, and with commit,
// in one round trip). In a task lock's transaction (commit), which took
// the task's row lock in a statement before, one statement moves the push
// configurations too (update.held): its snapshot is taken after that lock,
// as pushTargetSQL's is after the write's. p is t and entries packed.
func (s *Store) updateWith(ctx context.Context, q querier, st update, t *store.Task, entries []store.LogEntry, p *pack.Row, commit bool) (*store.Task, error) {
	la := entryArgs(entries, p.Bodies)
	c := &p.Cols
	args := []any{
		t.ID, t.Version, t.ContextID, string(t.State),
		c[0], c[1], c[2], c[3], c[4], c[5],
		t.Runnable, t.LeaseOwner,
		la.kinds, la.msgIDs, la.hist, la.notify, la.bodies, la.ats,
		leaseTS(t.LeaseUntil), c[6], ts(t.WakeAt), ts(t.HoldAt), refArg(p.Ref),
	}
	var (
		got *store.Task
		err error
	)
	notify := slices.Contains(la.notify, true)
	if !notify && !commit {
		got, err = scanWritten(q.QueryRow(ctx, st.sql, args...), t)
	} else {
		b := &pgx.Batch{}
		held := notify && commit
		if held {
			b.Queue(st.held, args...)
		} else {
			b.Queue(st.sql, args...)
		}
		if notify && !held {
			b.Queue(pushTargetSQL, t.ID)
		}
		if commit {
			b.Queue("commit")
		}
		br := q.SendBatch(ctx, b)
		if held {
			var due bool
			if got, err = scanWritten(br.QueryRow(), t, &due); got != nil {
				got.PushDue = due
			}
		} else {
			got, err = scanWritten(br.QueryRow(), t)
		}
		var perr error
		if notify && !held {
			var tag pgconn.CommandTag
			tag, perr = br.Exec()
			if got != nil && perr == nil {
				got.PushDue = tag.RowsAffected() > 0
			}
		}
		if commit && perr == nil {
			if tag, cerr := br.Exec(); cerr != nil {
				perr = cerr
			} else if tag.String() != "COMMIT" {
				perr = fmt.Errorf("the transaction ended with %s, not COMMIT", tag)
			}
		}
		// Close reads the end of the (implicit or the lock's) transaction:
		// a write is committed only if it returns nil.
		if cerr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) {
			if perr = errors.Join(perr, cerr); perr != nil {
				err = perr
			}
		}
	}
	return got, err
}

// missingOrMoved tells why a compare-and-set on id matched no row:
// store.ErrNotFound when there is no such task, else store.ErrConflict.
// Tasks are never deleted, so a task seen now also existed then.
func (s *Store) missingOrMoved(ctx context.Context, op, id string) error {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1)`, id).Scan(&exists); err != nil {
		return translate(op, id, err)
	}
	if !exists {
		return store.ErrNotFound
	}
	return store.ErrConflict
}

// ReadLog returns the task's log entries with Seq > afterSeq, oldest first,
// at most limit of them (limit <= 0: all). A task with no entries, or no
// such task, gives none.
func (s *Store) ReadLog(ctx context.Context, taskID string, afterSeq int64, limit int) ([]store.LogEntry, error) {
	var lim *int64
	if limit > 0 {
		l := int64(limit)
		lim = &l
	}
	// On a pool of its own: a stream woken by a change reads the new
	// entries without waiting for a connection behind this node's writes.
	rows, err := s.logs.Query(ctx, `
		SELECT `+logCols+` FROM task_log
		WHERE task_key = `+logOf+` AND seq > $2
		ORDER BY seq
		LIMIT $3`, taskID, afterSeq, lim)
	if err != nil {
		return nil, translate("ReadLog", taskID, err)
	}
	return collectEntries("ReadLog", taskID, rows)
}

// History returns the task's entries with InHistory set, oldest first; with
// last > 0 only the newest last of them.
func (s *Store) History(ctx context.Context, taskID string, last int) ([]store.LogEntry, error) {
	var lim *int64
	if last > 0 {
		l := int64(last)
		lim = &l
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+logCols+` FROM (
			SELECT `+logCols+` FROM task_log
			WHERE task_key = `+logOf+` AND in_history
			ORDER BY seq DESC
			LIMIT $2
		) h ORDER BY seq`, taskID, lim)
	if err != nil {
		return nil, translate("History", taskID, err)
	}
	return collectEntries("History", taskID, rows)
}

func collectEntries(op, id string, rows pgx.Rows) ([]store.LogEntry, error) {
	out, err := scanAll(rows, scanEntry(id))
	if err != nil {
		return nil, translate(op, id, err)
	}
	return out, nil
}

// scanAll reads every row with scan and closes rows.
func scanAll[T any](rows pgx.Rows, scan func(pgx.Row) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ListTasks returns one page of the tasks of p.Tenant and p.Owner (both
// matched exactly, the empty string included) that pass the other filters,
// newest first by UpdatedAt then ID. UpdatedAfter keeps the tasks updated
// strictly after it. The count and the page are read by one statement, so
// from one snapshot.
func (s *Store) ListTasks(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	if p.PageSize <= 0 {
		return nil, fmt.Errorf("postgres: ListTasks: page size %d, want > 0", p.PageSize)
	}
	q := listQuery(s.list, p)
	rows, err := s.pool.Query(ctx, q.Page, q.PageArgs...)
	if err != nil {
		return nil, fmt.Errorf("postgres: ListTasks: %w", err)
	}
	defer rows.Close()
	res := &store.ListResult{}
	var total int64
	for rows.Next() {
		t, err := scanTask(countingRow{rows, &total})
		if err != nil {
			return nil, fmt.Errorf("postgres: ListTasks: %w", err)
		}
		res.Tasks = append(res.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: ListTasks: %w", err)
	}
	if len(res.Tasks) == 0 && !p.NoTotal {
		// No row carried the count: ask for it alone.
		if err := s.pool.QueryRow(ctx, q.Count, q.CountArgs...).Scan(&total); err != nil {
			return nil, fmt.Errorf("postgres: ListTasks: %w", err)
		}
	}
	res.TotalSize = int(total)
	if len(res.Tasks) > p.PageSize {
		res.Tasks = res.Tasks[:p.PageSize]
		last := res.Tasks[len(res.Tasks)-1]
		res.Next = &store.Cursor{UpdatedAt: last.UpdatedAt, ID: last.ID}
	}
	return res, nil
}

// listDialect is PostgreSQL's for the ListTasks statements
// (store/internal/listing).
var listDialect = listing.Dialect{
	Param:     func(n int) string { return "$" + strconv.Itoa(n) },
	Time:      func(t time.Time) any { return ms(t) },
	ByContext: "tasks",
	Int:       "::bigint",
	Cols:      taskCols + ", ref_seq, key",
	Counted:   countedStates,
	Open:      openColumn,
	// docs/decisions/0160.
	Bounds: []listing.Bound{{Own: 1_000, Others: 1_000}, {Own: 100_000, Others: 100_000}},
}

// listQuery is ListTasks's statement: its page, each row carrying the
// count of the matching tasks (0 with NoTotal), so that a page is one
// round trip; and the count alone, for a page with no rows.
func listQuery(d listing.Dialect, p store.ListParams) listing.Queries {
	q := listing.Build(d, p)
	total := "(" + q.Count + ")"
	if p.NoTotal {
		total = "0"
	}
	q.Page = `SELECT ` + taskCols + refCols("page") + `, ` + total + ` FROM (` + q.Page + `) AS page ORDER BY updated_at DESC, id DESC`
	return q
}

// countingRow scans a task row followed by one more column, the count.
type countingRow struct {
	rows  pgx.Rows
	count *int64
}

func (r countingRow) Scan(dest ...any) error {
	return r.rows.Scan(append(dest, r.count)...)
}

// claimSQL is ClaimRunnable's statement: $1 now, $2 the limit, $3 the
// owner, $4 the new lease end. The claim is an ordered range scan of the
// partial index tasks_claim (migration 0001).
var claimSQL = `
		WITH c AS (
			SELECT id AS claim_id FROM tasks
			WHERE runnable AND lease_until <= $1
			ORDER BY lease_until
			LIMIT $2
			FOR UPDATE SKIP LOCKED
		), u AS (
			UPDATE tasks SET lease_owner = $3, lease_until = $4, version = version + 1
			FROM c WHERE id = c.claim_id
			RETURNING ` + taskCols + `, ref_seq, key
		)
		SELECT ` + taskCols + refCols("u") + ` FROM u`

// ClaimRunnable leases up to p.Limit runnable tasks whose lease is unset or
// lapsed (LeaseUntil <= p.Now) to p.Owner until p.Now+p.LeaseFor,
// incrementing each one's version, in one statement, and returns them in no
// particular order. The rows are locked with FOR UPDATE SKIP LOCKED: a
// concurrent claimer on any node skips them instead of waiting, and never
// gets them. Unleased tasks go first, then the longest-lapsed leases.
// UpdatedAt does not change. p.Limit <= 0 claims nothing.
func (s *Store) ClaimRunnable(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	if p.Owner == "" {
		return nil, errors.New("postgres: ClaimRunnable: empty owner")
	}
	if p.LeaseFor <= 0 {
		return nil, fmt.Errorf("postgres: ClaimRunnable: lease duration %v, want > 0", p.LeaseFor)
	}
	if p.Limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimSQL, ms(p.Now), p.Limit, p.Owner, ms(p.Now.Add(p.LeaseFor)))
	if err != nil {
		return nil, fmt.Errorf("postgres: ClaimRunnable: %w", err)
	}
	out, err := scanAll(rows, scanTask)
	if err != nil {
		return nil, fmt.Errorf("postgres: ClaimRunnable: %w", err)
	}
	for _, t := range out {
		s.notes.add(t.ID)
	}
	return out, nil
}

// ExtendLease moves the lease of task id to until if owner still holds it
// at version, leaving the version and UpdatedAt alone; a zero until
// releases it. store.ErrConflict when the lease or the version moved,
// store.ErrNotFound when there is no such task. It notifies no one: nothing
// a waiter looks at changes.
func (s *Store) ExtendLease(ctx context.Context, id, owner string, version int64, until time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		UPDATE tasks SET lease_until = $4
		WHERE id = $1 AND lease_owner = $2 AND version = $3`,
		id, owner, version, leaseTS(until))
	if err != nil {
		return translate("ExtendLease", id, err)
	}
	if tag.RowsAffected() == 0 {
		return s.missingOrMoved(ctx, "ExtendLease", id)
	}
	return nil
}

// translate maps PostgreSQL errors onto the store sentinels where one fits
// and otherwise wraps err with the operation and the task ID.
func translate(op, id string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && op == "CreateTask" {
		return store.ErrExists
	}
	return fmt.Errorf("postgres: %s %q: %w", op, id, err)
}

// refArg is ref_seq's parameter, the place of the first of the write's
// entries its columns are packed against (pack.Row.Ref): NULL for none.
func refArg(ref int64) pgtype.Int8 { return pgtype.Int8{Int64: ref, Valid: ref > 0} }

// text is a JSON value's parameter: NULL when empty.
func text(j json.RawMessage) pgtype.Text {
	if len(j) == 0 {
		return pgtype.Text{}
	}
	return pgtype.Text{String: string(j), Valid: true}
}

// raw is a JSON column read back: nil for NULL (or empty).
func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return json.RawMessage(b)
}

// ms truncates t to the millisecond, the precision the store keeps.
func ms(t time.Time) time.Time {
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// ts is a nullable time parameter: NULL for the zero time, else t to the
// millisecond. (A log entry's NULL time becomes now.)
func ts(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: ms(t), Valid: true}
}

// leaseTS is a lease_until parameter: '-infinity' (unleased) for the zero
// time, else t to the millisecond.
func leaseTS(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: ms(t), Valid: true}
}

// fromTS reads back a nullable time column (wake_at, hold_at, due_at):
// the zero time for NULL, else the time in UTC.
func fromTS(t pgtype.Timestamptz) time.Time {
	if !t.Valid || t.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return t.Time.UTC()
}

// ScanLogs streams the log entries of kinds (empty: all) of every task,
// ordered by task_log's primary key (task, then seq). It is one statement,
// so one snapshot, read from the connection as it goes.
func (s *Store) ScanLogs(ctx context.Context, kinds []store.Kind, fn func(taskID, agent string, e store.LogEntry) error) error {
	q := `SELECT t.id, t.agent, l.seq, l.kind, l.message_id, l.in_history, l.notify, l.body, l.at
		FROM task_log l JOIN tasks t ON t.key = l.task_key`
	var args []any
	if len(kinds) > 0 {
		ks := make([]string, len(kinds))
		for i, k := range kinds {
			ks[i] = string(k)
		}
		q += ` WHERE l.kind = ANY($1::text[])`
		args = append(args, ks)
	}
	q += ` ORDER BY l.task_key, l.seq`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("postgres: ScanLogs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, agent, kind string
		var e store.LogEntry
		var body []byte
		if err := rows.Scan(&id, &agent, &e.Seq, &kind, &e.MessageID, &e.InHistory, &e.Notify, &body, &e.At); err != nil {
			return fmt.Errorf("postgres: ScanLogs: %w", err)
		}
		e.Kind, e.At = store.Kind(kind), e.At.UTC()
		if e.Body, err = pack.UnpackEntry(id, body); err != nil {
			return fmt.Errorf("postgres: ScanLogs: task %q: %w", id, err)
		}
		if err := fn(id, agent, e); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: ScanLogs: %w", err)
	}
	return nil
}
