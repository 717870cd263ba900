//go:build unix

package sqlite

import (
	"os"
	"path/filepath"
	"testing"
)

// Issue 23, finding 7: the database holds push tokens and push
// configurations' credentials; under the usual umask 022 its files were
// 0644, readable by every local user. The database, its WAL and its shared
// memory file (and the lock, owner.go) are created readable by the owner
// only.
func TestNewDatabaseFilesAreOwnerOnly(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	s := open(t, path)
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm", path + ".lock"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if mode := fi.Mode().Perm(); mode&0o077 != 0 {
			t.Errorf("%s has mode %v; want no access for group or others", filepath.Base(p), mode)
		}
	}
}
