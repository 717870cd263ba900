package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askpoint/askpoint/store"
)

// TestReadOnlyReadsARunningServersFile: a read-only handle on the file of
// a store that is open and writing sees what it committed, refuses every
// write, and leaves the file as it was: the writer goes on writing.
func TestReadOnlyReadsARunningServersFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	w := open(t, path)
	if _, err := w.CreateTask(t.Context(), sampleTask("t1"), []store.LogEntry{{Kind: store.KindMessage, MessageID: "m1", InHistory: true, Body: []byte(`{"n":1}`)}}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenWith(t.Context(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenWith(ReadOnly) while a writer has the file = %v, want nil", err)
	}
	defer r.Close()
	count := func() int {
		n := 0
		if err := r.ScanLogs(t.Context(), nil, func(string, string, store.LogEntry) error { n++; return nil }); err != nil {
			t.Fatalf("ScanLogs on the read-only handle = %v", err)
		}
		return n
	}
	if n := count(); n != 1 {
		t.Errorf("read-only ScanLogs = %d entries, want 1", n)
	}
	if _, err := r.CreateTask(t.Context(), sampleTask("t2"), nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CreateTask on a read-only handle = %v, want ErrReadOnly", err)
	}
	if _, err := r.DeleteFinished(t.Context(), sampleTask("x").CreatedAt, 10); !errors.Is(err, ErrReadOnly) {
		t.Errorf("DeleteFinished on a read-only handle = %v, want ErrReadOnly", err)
	}
	// The writer is not held up, and the reader sees its next commit.
	if _, err := w.CreateTask(t.Context(), sampleTask("t3"), []store.LogEntry{{Kind: store.KindMessage, MessageID: "m3", Body: []byte(`{"n":3}`)}}); err != nil {
		t.Fatalf("CreateTask on the writer while a read-only handle is open = %v", err)
	}
	if n := count(); n != 2 {
		t.Errorf("read-only ScanLogs after the writer's next commit = %d entries, want 2", n)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close of the read-only handle = %v, want nil", err)
	}
}

// TestReadOnlyOpensAClosedFile: with no server running (the WAL folded
// back and its files gone), a read-only open still reads the file.
func TestReadOnlyOpensAClosedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	w, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.CreateTask(t.Context(), sampleTask("t1"), []store.LogEntry{{Kind: store.KindStatus, Body: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OpenWith(t.Context(), path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenWith(ReadOnly) of a closed file = %v, want nil", err)
	}
	n := 0
	if err := r.ScanLogs(t.Context(), nil, func(string, string, store.LogEntry) error { n++; return nil }); err != nil || n != 1 {
		t.Errorf("ScanLogs = %d entries, %v; want 1, nil", n, err)
	}
	r.Close()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("a read-only open changed the database file")
	}
}

// TestReadOnlyCreatesAndMigratesNothing: a missing file is an error, not
// a new database; an empty file or one of an older schema is refused, and
// neither is changed.
func TestReadOnlyCreatesAndMigratesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if s, err := OpenWith(t.Context(), missing, Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Errorf("OpenWith(ReadOnly) of a missing file = nil, want an error")
	} else if !strings.Contains(err.Error(), "no such database file") {
		t.Errorf("OpenWith(ReadOnly) of a missing file = %v, want it to say there is no such file", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenWith(ReadOnly) of a missing file created it (%v)", err)
	}

	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenWith(t.Context(), empty, Options{ReadOnly: true}); err == nil {
		s.Close()
		t.Errorf("OpenWith(ReadOnly) of an empty file = nil, want an error")
	} else if !strings.Contains(err.Error(), "not an askpoint database") {
		t.Errorf("OpenWith(ReadOnly) of an empty file = %v, want it to say it is not an askpoint database", err)
	}
	if fi, _ := os.Stat(empty); fi == nil || fi.Size() != 0 {
		t.Errorf("OpenWith(ReadOnly) wrote to an empty file")
	}

	old := filepath.Join(dir, "old.db")
	s := open(t, old)
	if _, err := s.w.ExecContext(t.Context(), `DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if r, err := OpenWith(t.Context(), old, Options{ReadOnly: true}); err == nil {
		r.Close()
		t.Errorf("OpenWith(ReadOnly) of an older schema = nil, want an error")
	} else if !strings.Contains(err.Error(), "older") || !strings.Contains(err.Error(), old) {
		t.Errorf("OpenWith(ReadOnly) of an older schema = %v, want it to say the schema is older and name %s", err, old)
	}
}
