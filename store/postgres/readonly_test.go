package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// TestReadOnlyReadsAndRefusesWrites: a read-only handle on the schema of a
// store in use reads what it wrote (ScanLogs), and PostgreSQL itself
// refuses its writes.
func TestReadOnlyReadsAndRefusesWrites(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	w := open(t, url)
	if _, err := w.CreateTask(t.Context(), sampleTask("t1"), []store.LogEntry{{Kind: store.KindMessage, MessageID: "m1", Body: []byte(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenWith(t.Context(), url, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenWith(ReadOnly) = %v, want nil", err)
	}
	defer r.Close()
	n := 0
	if err := r.ScanLogs(t.Context(), nil, func(id, agent string, e store.LogEntry) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("read-only ScanLogs = %d entries, %v; want 1, nil", n, err)
	}
	if _, err := r.CreateTask(t.Context(), sampleTask("t2"), nil); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("CreateTask on a read-only handle = %v, want PostgreSQL's read-only refusal", err)
	}
	if _, err := w.GetTask(t.Context(), "t2"); err == nil {
		t.Errorf("the read-only handle's CreateTask wrote a task")
	}
}

// TestReadOnlyCreatesAndMigratesNothing: a read-only open of a schema that
// does not exist, or of one an older binary migrated, is refused and
// changes nothing.
func TestReadOnlyCreatesAndMigratesNothing(t *testing.T) {
	t.Parallel()
	base, name := dbtest.SchemaName(t)
	if s, err := OpenWith(t.Context(), base, Options{Schema: name, ReadOnly: true}); err == nil {
		s.Close()
		t.Errorf("OpenWith(ReadOnly) of a missing schema = nil, want an error")
	} else if !strings.Contains(err.Error(), "no askpoint tables") {
		t.Errorf("OpenWith(ReadOnly) of a missing schema = %v, want it to say there are no askpoint tables", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name).Scan(&exists); err != nil || exists {
		t.Errorf("a read-only open created schema %s (%v)", name, err)
	}

	url := dbtest.Schema(t)
	w := open(t, url)
	if _, err := w.pool.Exec(t.Context(), `DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenWith(t.Context(), url, Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Errorf("OpenWith(ReadOnly) of an older schema = nil, want an error")
	} else if !strings.Contains(err.Error(), "older") {
		t.Errorf("OpenWith(ReadOnly) of an older schema = %v, want it to say the schema is older", err)
	}
	if got, want := len(appliedMigrations(t, w)), len(migrationVersions(t))-1; got != want {
		t.Errorf("after a read-only open %d migrations are applied, want %d (none re-applied)", got, want)
	}
}
