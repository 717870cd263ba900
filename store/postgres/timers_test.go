package postgres

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// explain returns the plan of q in a transaction that forbids sequential
// and bitmap scans: an empty table's statistics favour other plans, and
// these tests ask whether the query can be an ordered range scan of its
// partial index.
func explain(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	tx := beginTx(t, s)
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func TestSweepsCanUsePartialIndexes(t *testing.T) {
	t.Parallel()
	s := open(t, dbtest.Schema(t))
	now := ms(time.Now())
	for _, c := range []struct {
		name, q, index string
		args           []any
	}{
		{"DueTasks(wake)", dueSQL[store.TimerWake], "tasks_wake", []any{now, 1000}},
		{"DueTasks(hold)", dueSQL[store.TimerHold], "tasks_hold", []any{now, 1000}},
		{"NextDue(wake)", nextDueSQL[store.TimerWake], "tasks_wake", nil},
		{"NextDue(hold)", nextDueSQL[store.TimerHold], "tasks_hold", nil},
		{"ClaimPushDeliveries", claimPushSQL, "push_configs_due", []any{now, 100, now.Add(time.Minute)}},
	} {
		if got := explain(t, s, c.q, c.args...); !strings.Contains(got, c.index) || strings.Contains(got, "Sort") {
			t.Errorf("%s query plan:\n%s\nwant an ordered scan of %s without a sort", c.name, got, c.index)
		}
	}
}

// waitBlockedBy waits until some backend waits for a lock that the backend
// pid holds. PostgreSQL announces no such event, so it asks
// pg_stat_activity again every 5ms, for at most 10s.
func waitBlockedBy(t *testing.T, s *Store, pid uint32) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(10 * time.Second)
	for {
		var n int
		if err := s.pool.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_stat_activity WHERE $1::int = ANY (pg_blocking_pids(pid))`, int32(pid)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("no backend waits for backend %d after 10s", pid)
		}
	}
}

// An append of a notify entry that took its snapshot before a push
// configuration was created, but appends after the creation committed,
// still moves that configuration: the interleaving that a single-statement
// UpdateTask (the configurations read from the statement's snapshot)
// would get wrong, leaving the entry undelivered.
func TestAppendWaitingForTheTaskRowSeesANewPushConfig(t *testing.T) {
	t.Parallel()
	s := open(t, dbtest.Schema(t))
	ctx := t.Context()
	cur, err := s.CreateTask(ctx, sampleTask("t1"), nil)
	if err != nil {
		t.Fatal(err)
	}

	// Another transaction holds a share lock on the task row (as a
	// PutPushConfig of another configuration would).
	x, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Rollback(ctx)
	if _, err := x.Exec(ctx, `SELECT 1 FROM tasks WHERE id = 't1' FOR SHARE`); err != nil {
		t.Fatal(err)
	}

	// The append starts, and waits for that lock.
	appended := make(chan error, 1)
	go func() {
		_, err := s.UpdateTask(ctx, cur, []store.LogEntry{{Kind: store.KindStatus, Notify: true}})
		appended <- err
	}()
	waitBlockedBy(t, s, x.Conn().PgConn().PID())

	// A configuration is created meanwhile: its share lock does not
	// wait behind the append's, so it commits first, seeing no entry.
	put := make(chan error, 1)
	var created *store.PushConfig
	go func() {
		var err error
		created, err = s.PutPushConfig(ctx, &store.PushConfig{TaskID: "t1", ID: "p1", Config: json.RawMessage(`{"url":"https://x"}`)})
		put <- err
	}()
	select {
	case err := <-put:
		if err != nil {
			t.Fatalf("PutPushConfig() = %v, want nil", err)
		}
		if created.TargetSeq != 0 {
			t.Fatalf("PutPushConfig() TargetSeq = %d, want 0: it should commit before the append", created.TargetSeq)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("PutPushConfig() still waits after 5s: it queued behind the append, so this test no longer sets up the race")
	}

	// The append goes on.
	if err := x.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("UpdateTask() = %v, want nil", err)
	}
	got, err := s.GetPushConfig(ctx, "t1", "p1")
	if err != nil {
		t.Fatal(err)
	}
	if got.TargetSeq != 1 || got.DueAt.IsZero() {
		t.Errorf("GetPushConfig() TargetSeq, DueAt = %d, %v, want 1 and due: the entry appended after the configuration was created is lost", got.TargetSeq, got.DueAt)
	}
}

// olderSchema makes the schema of url as a binary that knew only the first
// known migrations made it, then runs rows (its tasks and logs).
func olderSchema(t *testing.T, url string, known int, rows ...string) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	stmts := []string{`CREATE TABLE schema_migrations (version integer NOT NULL PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	for _, m := range ms[:known] {
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')`, m.Version, m.Name))
	}
	for _, q := range append(stmts, rows...) {
		if _, err := conn.Exec(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A database made by a binary that knew only 0001, with a task in it,
// upgrades to the timers and the push outbox: its rows read back with no
// timer, no pause and no notify entries, and take push configurations.
func TestUpgradeFrom0001(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	olderSchema(t, url, 1,
		`INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, status, created_at, updated_at)
			VALUES ('old', 'ctx', 'tenant', 'alice', 'echo', 'TASK_STATE_INPUT_REQUIRED', 3, 2, '{"state":"x"}', now(), now())`,
		`INSERT INTO task_log (task_id, seq, kind, in_history, body, at) VALUES ('old', 1, 'message', true, '{}', now()), ('old', 2, 'status', false, '{}', now())`)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}

	s := open(t, url)
	if got := appliedMigrations(t, s); len(got) != len(ms) {
		t.Errorf("schema_migrations after the upgrade = %v, want all %d", got, len(ms))
	}
	got, err := s.GetTask(t.Context(), "old")
	if err != nil {
		t.Fatalf("GetTask(old) = %v, want nil", err)
	}
	if got.Version != 3 || got.LastSeq != 2 || got.Pause != nil || !got.WakeAt.IsZero() || !got.HoldAt.IsZero() {
		t.Errorf("GetTask(old) = %+v, want version 3, last seq 2, no pause, no timers", got)
	}
	log, err := s.ReadLog(t.Context(), "old", 0, 0)
	if err != nil || len(log) != 2 || log[0].Notify || log[1].Notify {
		t.Errorf("ReadLog(old) = %+v, %v, want 2 entries without Notify", log, err)
	}

	next := *got
	next.WakeAt = time.Now().Add(-time.Second)
	next.Pause = json.RawMessage(`{"expiry":"cancel"}`)
	if _, err := s.UpdateTask(t.Context(), &next, []store.LogEntry{{Kind: store.KindStatus, Notify: true}}); err != nil {
		t.Fatalf("UpdateTask(old) = %v, want nil", err)
	}
	c, err := s.PutPushConfig(t.Context(), &store.PushConfig{TaskID: "old", ID: "p1", Config: json.RawMessage(`{"url":"https://x"}`)})
	if err != nil || c.TargetSeq != 3 || c.DueAt.IsZero() {
		t.Errorf("PutPushConfig(old) = %+v, %v, want TargetSeq 3 and due", c, err)
	}
	if due, err := s.DueTasks(t.Context(), store.DueParams{Timer: store.TimerWake, Now: time.Now(), Limit: 10}); err != nil || len(due) != 1 {
		t.Errorf("DueTasks(wake) = %d tasks, %v, want the old task", len(due), err)
	}
}
