package sqlite

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// An SQLite file is one process's (docs/decisions/0082-sqlite-one-owner.md):
// the engine keeps the rows it wrote last and holds its tasks with
// in-memory locks, which no other process would see. Open makes that true
// instead of assuming it: the process takes an exclusive lock on
// "<path>.lock" (flock, which the kernel drops when the process ends,
// however it ends) and a second process's Open fails, naming the file.
// Handles the same process opens on the file share the lock (the store
// suite opens two to stand for two nodes; a test reopens the file of a
// server it runs), counted here, since flock would refuse a second open
// file description of the same process.
//
// Because nothing else can have written to the file while the lock was
// free, the first handle of the process to open it knows that every push
// claim in it was left by an owner that ended without settling it, and
// frees them (Open).

// owner is this process's hold on one database file.
type owner struct {
	lockPath string
	fi       os.FileInfo // of the lock file, to know it again (os.SameFile)
	f        *os.File    // holds the lock while open
	refs     int         // handles of this process on the file
}

// owners are the files this process holds, few enough to search in turn.
var owners struct {
	sync.Mutex
	held []*owner
}

// errHeld is what lockFile returns when another process holds the lock.
var errHeld = errors.New("held by another process")

// own takes the lock of the database at path for this process, or counts
// one more handle of a file the process already holds. first reports that
// no other handle of this process has the file open.
func own(path string) (o *owner, first bool, err error) {
	lockPath := path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("lock file: %w%s", err, dirProblem(path))
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("lock file: %w", err)
	}
	owners.Lock()
	defer owners.Unlock()
	for _, o := range owners.held {
		if os.SameFile(o.fi, fi) {
			f.Close() // closing another descriptor of it leaves the flock held
			o.refs++
			return o, false, nil
		}
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errHeld) {
			return nil, false, fmt.Errorf("the database is in use by another process, which holds %s: "+
				"one process owns an SQLite file (several nodes need PostgreSQL)", lockPath)
		}
		return nil, false, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	o = &owner{lockPath: lockPath, fi: fi, f: f, refs: 1}
	owners.held = append(owners.held, o)
	return o, true, nil
}

// release gives back one handle's share; the last one drops the lock.
func (o *owner) release() {
	owners.Lock()
	defer owners.Unlock()
	o.refs--
	if o.refs > 0 {
		return
	}
	for i, h := range owners.held {
		if h == o {
			owners.held = append(owners.held[:i], owners.held[i+1:]...)
			break
		}
	}
	o.f.Close() // drops the flock
}
