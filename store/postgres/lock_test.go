package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// A lock's hold on a task goes with its connection: when the backend
// holding the row goes (its node died, or PostgreSQL ended an idle
// transaction), another node's write goes through, and the lock's own
// write fails with a transient error instead of writing anything.
func TestALocksHoldGoesWithItsConnection(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	a, b := open(t, url), open(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	v1, err := a.CreateTask(ctx, sampleTask("t1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	lock := holdTask(t, ctx, a, "t1")
	lctx := store.WithLock(ctx, lock)
	pid := lock.conn.Conn().PgConn().PID()
	if _, err := b.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatalf("terminate the lock's backend: %v", err)
	}
	next := *v1
	next.Checkpoint = []byte(`{"by":"b"}`)
	if _, err := b.UpdateTask(ctx, &next, nil); err != nil {
		t.Fatalf("UpdateTask on the other handle after the lock's backend went = %v, want nil", err)
	}
	mine := *v1
	mine.Checkpoint = []byte(`{"by":"a"}`)
	_, err = a.UpdateTask(lctx, &mine, nil)
	if err == nil || !store.IsTransient(err) {
		t.Errorf("UpdateTask under the lock after its backend went = %v, want a transient error", err)
	}
	lock.Unlock()
	got, err := a.GetTask(ctx, "t1")
	if err != nil || string(got.Checkpoint) != `{"by":"b"}` {
		t.Errorf("GetTask after = %v, %v; want the other handle's write", got, err)
	}
}

// Locks hold at most half the pool: a LoadTask under one more lock waits
// for a slot, and when none comes free it reads unlocked and does not
// hold, while the rest of the pool serves other reads.
func TestLocksLeaveHalfThePool(t *testing.T) {
	t.Parallel()
	s, err := OpenWith(t.Context(), dbtest.Schema(t), Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() }) // after the locks' cleanups: Close waits for their connections
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.CreateTask(ctx, sampleTask(id), nil); err != nil {
			t.Fatal(err)
		}
	}
	first := holdTask(t, ctx, s, "t1")
	second := s.LockTask("t2")
	defer second.Unlock()
	start := time.Now()
	l, err := s.LoadTask(store.WithLock(ctx, second), "t2", store.LoadParams{})
	if err != nil || l.Task.ID != "t2" {
		t.Fatalf("LoadTask under a second lock with the one slot taken = %v, want t2 read", err)
	}
	if second.Holding() {
		t.Errorf("the second lock holds with the one slot taken, want it not to")
	}
	if waited := time.Since(start); waited < lockSlotWait {
		t.Errorf("the second LoadTask returned after %v, want it to wait %v for a slot first", waited, lockSlotWait)
	}
	if _, err := s.GetTask(ctx, "t1"); err != nil {
		t.Errorf("GetTask while a lock holds half the pool = %v, want nil", err)
	}
	first.Unlock()
	second.Unlock()
	holdTask(t, ctx, s, "t2") // the slot is free again
}

// A caller that gives up while its load under a lock waits for another
// node's lock gets its context's error, and its lock leaves nothing
// behind: no slot, no connection, no transaction.
func TestALoadUnderALockThatIsCanceledLeavesNothingHeld(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	a, b := open(t, url), open(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := a.CreateTask(ctx, sampleTask("t1"), nil); err != nil {
		t.Fatal(err)
	}
	held := holdTask(t, ctx, a, "t1")
	waiting := b.LockTask("t1")
	wctx, giveUp := context.WithCancel(ctx)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		close(started)
		_, err := b.LoadTask(store.WithLock(wctx, waiting), "t1", store.LoadParams{})
		done <- err
	}()
	<-started
	waitBlockedBy(t, a, held.conn.Conn().PgConn().PID())
	giveUp()
	if err := <-done; err == nil {
		t.Errorf("LoadTask under a lock whose context was canceled while another node held the task = nil, want an error")
	}
	if waiting.Holding() {
		t.Errorf("the canceled lock holds, want it not to")
	}
	waiting.Unlock()
	if n := len(b.lockSlots); n != 0 {
		t.Errorf("%d lock slots taken after the canceled lock's Unlock, want 0", n)
	}
	// Every connection of the pool can be had again (a leaked one would
	// make the last acquisition wait out its context).
	var conns []*pgxpool.Conn
	for range b.pool.Config().MaxConns {
		c, err := b.pool.Acquire(ctx)
		if err != nil {
			t.Fatalf("acquire every connection of the pool after the canceled lock's Unlock: %v", err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	held.Unlock()
	next, err := b.GetTask(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.UpdateTask(ctx, next, nil); err != nil {
		t.Errorf("UpdateTask on the other node after both locks ended = %v, want nil", err)
	}
}

// A LoadTask under a lock given the version the caller keeps
// (LoadParams.Version) answers Unchanged, and no row, when the task is
// still at it, and holds the task as a read would: another node's write
// waits and loses to the lock's write of the kept copy. At any other
// version, or with no lock, it reads the task.
func TestALoadUnderALockAtTheKeptVersionReadsNoRow(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	a, b := open(t, url), open(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	kept, err := a.CreateTask(ctx, sampleTask("t1"), []store.LogEntry{{Kind: store.KindMessage, MessageID: "m1", Body: []byte(`{"n":1}`)}})
	if err != nil {
		t.Fatal(err)
	}
	lock := a.LockTask("t1").(*taskLock)
	defer lock.Unlock()
	lctx := store.WithLock(ctx, lock)
	l, err := a.LoadTask(lctx, "t1", store.LoadParams{MessageID: "m1", Request: true, Version: kept.Version})
	if err != nil || !l.Unchanged || l.Task != nil || !lock.Holding() {
		t.Fatalf("LoadTask(the kept version) under a lock = %+v, %v, holding %v; want Unchanged, no task, holding", l, err, lock.Holding())
	}
	other := make(chan error, 1)
	go func() {
		next := *kept
		next.Checkpoint = []byte(`{"by":"b"}`)
		_, err := b.UpdateTask(ctx, &next, nil)
		other <- err
	}()
	waitBlockedBy(t, a, lock.conn.Conn().PgConn().PID())
	mine := *kept
	mine.Checkpoint = []byte(`{"by":"a"}`)
	if _, err := a.UpdateTask(lctx, &mine, nil); err != nil {
		t.Fatalf("UpdateTask of the kept copy under the lock = %v, want nil", err)
	}
	if err := <-other; !errors.Is(err, store.ErrConflict) {
		t.Errorf("UpdateTask on the other handle while the lock held the task = %v, want ErrConflict", err)
	}
	lock.Unlock()

	// The kept version is no longer the task's: the lock reads it.
	again := a.LockTask("t1")
	defer again.Unlock()
	l, err = a.LoadTask(store.WithLock(ctx, again), "t1", store.LoadParams{MessageID: "m1", Request: true, Version: kept.Version})
	if err != nil || l.Unchanged || l.Task == nil || l.Task.Version != kept.Version+1 || string(l.Task.Checkpoint) != `{"by":"a"}` ||
		string(l.Message) != `{"n":1}` || string(l.Request) != `{"n":1}` || !again.Holding() {
		t.Errorf("LoadTask(an older version) under a lock = %+v, %v; want the task at version %d with its message and request, held", l, err, kept.Version+1)
	}
	again.Unlock()
	// No lock: the version is not asked about.
	if l, err := a.LoadTask(ctx, "t1", store.LoadParams{Version: kept.Version + 1}); err != nil || l.Unchanged || l.Task == nil {
		t.Errorf("LoadTask(the version) with no lock = %+v, %v; want the task read", l, err)
	}
	none := a.LockTask("none")
	defer none.Unlock()
	if _, err := a.LoadTask(store.WithLock(ctx, none), "none", store.LoadParams{Version: 1}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadTask(a missing task, a version) under a lock = %v, want ErrNotFound", err)
	}
}

// holdTask takes id's lock on s and loads the task under it, which must
// then hold the task.
func holdTask(t *testing.T, ctx context.Context, s *Store, id string) *taskLock {
	t.Helper()
	lock := s.LockTask(id).(*taskLock)
	t.Cleanup(lock.Unlock)
	if _, err := s.LoadTask(store.WithLock(ctx, lock), id, store.LoadParams{}); err != nil || !lock.Holding() {
		t.Fatalf("LoadTask(%q) under its lock = %v, holding %v; want nil, true", id, err, lock.Holding())
	}
	return lock
}
