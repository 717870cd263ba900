package sqlite

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// queryPlan returns the EXPLAIN QUERY PLAN details of q, joined by "; ".
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// The sweeps read their partial indexes in order: no scan of the table, no
// sort, so they cost O(due), not O(paused).
func TestSweepsUsePartialIndexes(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	now := time.Now().UnixMilli()
	for _, c := range []struct {
		name, q, index string
		args           []any
	}{
		{"DueTasks(wake)", readSQL[stmtDueWake], "tasks_wake", []any{now, 1000}},
		{"DueTasks(hold)", readSQL[stmtDueHold], "tasks_hold", []any{now, 1000}},
		{"NextDue(wake)", readSQL[stmtNextWake], "tasks_wake", nil},
		{"NextDue(hold)", readSQL[stmtNextHold], "tasks_hold", nil},
		{"ClaimPushDeliveries", writeSQL[stmtClaimPush], "push_configs_due", []any{now, now, 100}},
	} {
		got := queryPlan(t, s, c.q, c.args...)
		if !strings.Contains(got, c.index) || strings.Contains(got, "TEMP B-TREE") || strings.Contains(got, "SCAN tasks") {
			t.Errorf("%s query plan = %q, want a search of %s without a sort or a scan of tasks", c.name, got, c.index)
		}
	}
}

// olderDatabase makes the file at path as a binary that knew only the
// first known migrations made it, then runs rows (its tasks and logs).
func olderDatabase(t *testing.T, path string, known int, rows ...string) {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", fileURI(path)+"?"+writerParams)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{`CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
	for _, m := range ms[:known] {
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, '%s', 0)`, m.Version, m.Name))
	}
	for _, q := range append(stmts, rows...) {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A database made by a binary that knew only 0001, with a task in it,
// upgrades to the timers and the push outbox: its rows read back with no
// timer, no pause and no notify entries, and take push configurations.
func TestUpgradeFrom0001(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	olderDatabase(t, path, 1,
		`INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, status, created_at, updated_at)
			VALUES ('old', 'ctx', 'tenant', 'alice', 'echo', 'TASK_STATE_INPUT_REQUIRED', 3, 2, '{"state":"x"}', 1000, 2000)`,
		`INSERT INTO task_log (task_id, seq, kind, in_history, body, at) VALUES ('old', 1, 'message', 1, '{}', 1000), ('old', 2, 'status', 0, '{}', 2000)`)

	s := open(t, path)
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
	for _, tm := range []store.Timer{store.TimerWake, store.TimerHold} {
		if due, err := s.DueTasks(t.Context(), store.DueParams{Timer: tm, Now: time.Now().Add(time.Hour), Limit: 10}); err != nil || len(due) != 0 {
			t.Errorf("DueTasks(%s) = %d tasks, %v, want none", tm, len(due), err)
		}
	}

	// The old task goes on: a timer, a notify entry, a configuration.
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

// A database made before tasks kept their request key apart (0004) had the
// key as the task's ID: after the upgrade, the key finds the old task, so a
// redelivery of its first message still lands there, and the old ID is
// taken as a key too (no new task can claim it).
func TestUpgradeTo0004KeysOldTasksByTheirID(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	olderDatabase(t, path, 3, `INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, status, created_at, updated_at)
			VALUES ('derived-id', 'ctx', 'tenant', 'alice', 'echo', 'TASK_STATE_INPUT_REQUIRED', 1, 0, '{"state":"x"}', 1000, 2000)`)

	s := open(t, path)
	got, err := s.TaskByRequestKey(t.Context(), "derived-id")
	if err != nil || got.ID != "derived-id" {
		t.Fatalf(`TaskByRequestKey("derived-id") after the upgrade = %v, %v; want the old task`, got, err)
	}
	_, err = s.CreateTask(t.Context(), &store.Task{ID: "new-id", RequestKey: "derived-id", ContextID: "c", Agent: "echo", State: "TASK_STATE_SUBMITTED"}, nil)
	if !errors.Is(err, store.ErrExists) {
		t.Errorf(`CreateTask with the old task's ID as its key = %v, want %v`, err, store.ErrExists)
	}
}
