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
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/storetest"
)

// TestConformance runs the store suite on a new file per subtest; its
// multi-node cases open the file a second time in this process (the
// handles share the process's lock on it: decision 0082), which checks
// the SQL of claims and compare-and-set under two writers.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) storetest.Open {
		path := filepath.Join(t.TempDir(), "askpoint.db")
		return func(t *testing.T) store.Store {
			s, err := Open(t.Context(), path)
			if err != nil {
				t.Fatalf("Open(%q) = %v, want nil", path, err)
			}
			return s
		}
	})
}

// open opens path and closes it when the test ends.
func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%q) = %v, want nil", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sampleTask(id string) *store.Task {
	return &store.Task{
		ID: id, ContextID: "ctx", Tenant: "tenant", Owner: "alice", Agent: "echo",
		State:    a2a.TaskStateWorking,
		Status:   json.RawMessage(`{"state":"TASK_STATE_WORKING"}`),
		Metadata: json.RawMessage(`{"k":"v"}`),
		Runnable: true,
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open() = %v, want nil", err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	created, err := s.CreateTask(t.Context(), sampleTask("t1"), []store.LogEntry{
		{Kind: store.KindMessage, MessageID: "m1", InHistory: true, Body: json.RawMessage(`{"n":1}`), At: at},
	})
	if err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	next := *created
	next.Checkpoint = json.RawMessage(`{"step":1}`)
	updated, err := s.UpdateTask(t.Context(), &next, []store.LogEntry{
		{Kind: store.KindStatus, Body: json.RawMessage(`{"n":2}`), At: at.Add(time.Second)},
	})
	if err != nil {
		t.Fatalf("UpdateTask() = %v, want nil", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() = %v, want nil", err)
	}

	s = open(t, path)
	got, err := s.GetTask(t.Context(), "t1")
	if err != nil {
		t.Fatalf("GetTask() after reopen = %v, want nil", err)
	}
	if got.Version != 2 || got.LastSeq != 2 || string(got.Checkpoint) != `{"step":1}` ||
		!got.UpdatedAt.Equal(updated.UpdatedAt) || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("GetTask() after reopen = %+v, want %+v", got, updated)
	}
	log, err := s.ReadLog(t.Context(), "t1", 0, 0)
	if err != nil {
		t.Fatalf("ReadLog() after reopen = %v, want nil", err)
	}
	if len(log) != 2 || log[0].MessageID != "m1" || !log[0].At.Equal(at) || log[1].Seq != 2 || string(log[1].Body) != `{"n":2}` {
		t.Errorf("ReadLog() after reopen = %+v, want entries m1 and seq 2", log)
	}
}

func appliedMigrations(t *testing.T, s *Store) []int {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("SELECT schema_migrations = %v, want nil", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

func TestMigrationsAppliedOnce(t *testing.T) {
	t.Parallel()
	ms, err := migrations()
	if err != nil {
		t.Fatalf("migrations() = %v, want nil", err)
	}
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	if len(want) == 0 || want[0] != 1 {
		t.Fatalf("migrations() versions = %v, want 1 first", want)
	}

	path := filepath.Join(t.TempDir(), "askpoint.db")
	for i := range 3 {
		s, err := Open(t.Context(), path)
		if err != nil {
			t.Fatalf("Open() #%d = %v, want nil", i+1, err)
		}
		if got := appliedMigrations(t, s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("schema_migrations after Open() #%d = %v, want %v", i+1, got, want)
		}
		if i == 0 {
			if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
				t.Fatalf("CreateTask() = %v, want nil", err)
			}
		}
		if _, err := s.GetTask(t.Context(), "t1"); err != nil {
			t.Errorf("GetTask() after Open() #%d = %v, want nil", i+1, err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close() = %v, want nil", err)
		}
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open() #%d = %v, want nil", i, err)
		}
		defer stores[i].Close()
	}
	ms, err := migrations()
	if err != nil {
		t.Fatalf("migrations() = %v, want nil", err)
	}
	var want []int
	for _, m := range ms {
		want = append(want, m.Version)
	}
	if got := appliedMigrations(t, stores[0]); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("schema_migrations = %v, want %v (each applied once)", got, want)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open() = %v, want nil", err)
	}
	if _, err := s.w.ExecContext(t.Context(),
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatalf("Open(schema from the future) = nil, want an error")
	}
	if !strings.Contains(err.Error(), "9999") || !strings.Contains(err.Error(), path) {
		t.Errorf("Open(schema from the future) = %v, want it to name version 9999 and %s", err, path)
	}
}

func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	if err := db.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s = %v", name, err)
	}
	return v
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	for _, c := range []struct {
		db        *sql.DB
		who, name string
		want      string
	}{
		{s.r, "reader", "journal_mode", "wal"},
		{s.w, "writer", "journal_mode", "wal"},
		{s.w, "writer", "synchronous", "2"}, // FULL
		{s.w, "writer", "foreign_keys", "1"},
		{s.w, "writer", "busy_timeout", "10000"},
		{s.r, "reader", "busy_timeout", "10000"},
		{s.r, "reader", "query_only", "1"},
	} {
		if got := pragma(t, c.db, c.name); got != c.want {
			t.Errorf("%s PRAGMA %s = %q, want %q", c.who, c.name, got, c.want)
		}
	}
}

func TestReadersDoNotWaitForTheWriter(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	tx, err := s.w.BeginTx(t.Context(), nil) // BEGIN IMMEDIATE: holds the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(t.Context(), `UPDATE tasks SET state = 'x' WHERE id = 't1'`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	got, err := s.GetTask(ctx, "t1")
	if err != nil {
		t.Fatalf("GetTask() during a write = %v, want nil", err)
	}
	if got.State != a2a.TaskStateWorking {
		t.Errorf("GetTask() during a write State = %q, want the committed %q", got.State, a2a.TaskStateWorking)
	}
	if _, err := s.ListTasks(ctx, store.ListParams{Tenant: "tenant", Owner: "alice", PageSize: 10}); err != nil {
		t.Errorf("ListTasks() during a write = %v, want nil", err)
	}
}

func TestReaderRefusesWrites(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	if _, err := s.r.ExecContext(t.Context(), `DELETE FROM tasks`); err == nil {
		t.Errorf("DELETE on a reader = nil, want an error (query_only)")
	}
}

func TestOpenUnwritablePath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, why string }{
		{filepath.Join(file, "askpoint.db"), "not a directory"},
		{filepath.Join(dir, "missing", "askpoint.db"), "no such file or directory"},
	} {
		s, err := Open(t.Context(), c.path)
		if err == nil {
			s.Close()
			t.Errorf("Open(%q) = nil, want an error", c.path)
			continue
		}
		if !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("Open(%q) = %v, want an error naming the path and saying %q", c.path, err, c.why)
		}
	}
}

func TestOpenRefusesNonFiles(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", ":memory:", "file:x.db?mode=memory"} {
		if s, err := Open(t.Context(), path); err == nil {
			s.Close()
			t.Errorf("Open(%q) = nil, want an error", path)
		}
	}
}

func TestOpenOddFileName(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "a b?mode=memory#x%20y.db")
	s := open(t, path)
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("Stat(%q) = %v, want the database file under its exact name", path, err)
	}
}

func TestOpenRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	s := open(t, "rel.db")
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	if _, err := os.Stat("rel.db"); err != nil {
		t.Errorf("Stat(rel.db) = %v, want the database file", err)
	}
}

// The statements ClaimRunnable and LoadTask run (writeSQL[stmtClaim],
// readSQL[stmtLoadTask], not copies of them) use their indexes: the claim
// reads the partial index tasks_claim in order, and LoadTask looks the
// messageId up in task_log_message (migration 0003), so a follow-up's
// deduplication costs one lookup, not a walk of the task's log.
func TestClaimUsesPartialIndex(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	now := time.Now().UnixMilli()
	got := queryPlan(t, s, writeSQL[stmtClaim], "node-a", now+60_000, now, 10)
	if !strings.Contains(got, "tasks_claim") || strings.Contains(got, "TEMP B-TREE") || strings.Contains(got, "SCAN tasks") {
		t.Errorf("ClaimRunnable's plan = %q, want a search of tasks_claim without a sort or a scan of tasks", got)
	}
}

func TestLoadTaskUsesMessageIndex(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	got := queryPlan(t, s, readSQL[stmtLoadTask], "t1", "m1", 1)
	if !strings.Contains(got, "task_log_message") || strings.Contains(got, "SCAN task_log") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("LoadTask's plan = %q, want the messageId looked up in task_log_message without a sort", got)
	}
}

func TestCreateTaskTakenIDIsErrExists(t *testing.T) {
	t.Parallel()
	// The conformance suite checks the sentinel; this checks the driver
	// does not wrap it into something errors.Is cannot see through.
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := s.CreateTask(t.Context(), sampleTask("t1"), nil)
	if !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateTask(taken) = %v, want %v", err, store.ErrExists)
	}
}
