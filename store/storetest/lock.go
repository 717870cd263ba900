package storetest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// Task locks (store.Locker): what the engine's quick steps rely on. A
// driver without locks skips these cases (its engine takes no quick steps).

var lockCases = []testCase{
	{"LockTask/ASecondLockOfTheKeyWaitsForTheFirstsUnlock", testLockWaits},
	{"LockTask/ReadAndWriteUnderTheLockAreTheStoresOwn", testLockReadWrite},
	{"LockTask/UnlockWithoutAWriteChangesNothingAndFreesTheTask", testLockUnlockFrees},
	{"LockTask/AMissingTaskUnderTheLockIsErrNotFoundAndHoldsNothing", testLockMissing},
	{"LockTask/ANotifyingWriteUnderTheLockMovesThePushConfigurations", testLockPushDue},
}

var lockNodeCases = []nodeCase{
	{"Nodes/LockTask/AWriteOnTheOtherHandleWaitsForTheLocksWriteAndLoses", testNodesLockWriteWaits},
	{"Nodes/LockTask/ALockOnTheOtherHandleWaitsAndReadsTheLocksWrite", testNodesLockReadsWrite},
}

func locker(t *testing.T, s store.Store) store.Locker {
	t.Helper()
	l, ok := s.(store.Locker)
	if !ok {
		t.Skip("the driver has no task locks (store.Locker)")
	}
	return l
}

// lockedCtx is a context carrying lock, bounded so that a lock that holds
// what it should not fails the test instead of hanging it.
func lockedCtx(t *testing.T, lock store.TaskLock) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	if lock == nil {
		return c
	}
	return store.WithLock(c, lock)
}

func testLockWaits(t *testing.T, s store.Store) {
	l := locker(t, s)
	first := l.LockTask("k1")
	var released atomic.Bool
	started, got := make(chan struct{}), make(chan bool)
	go func() {
		close(started)
		second := l.LockTask("k1")
		got <- released.Load()
		second.Unlock()
	}()
	<-started
	other := l.LockTask("k2") // another key does not wait
	other.Unlock()
	mustCreate(t, s, newTask("t1"), nil) // time for the second to reach its wait
	released.Store(true)
	first.Unlock()
	if !<-got {
		t.Errorf(`a second LockTask("k1") returned while the first held it, want it to wait for the first's Unlock`)
	}
	first.Unlock() // a second Unlock does nothing
	again := l.LockTask("k1")
	again.Unlock()
}

func testLockReadWrite(t *testing.T, s store.Store) {
	l := locker(t, s)
	es := entries("m", 2)
	v1 := mustCreate(t, s, newTask("t1"), es)
	lock := l.LockTask("t1")
	defer lock.Unlock()
	c := lockedCtx(t, lock)
	loaded, err := s.LoadTask(c, "t1", store.LoadParams{MessageID: "m2", Request: true})
	if err != nil {
		t.Fatalf(`LoadTask("t1") under the lock = %v, want nil`, err)
	}
	checkTask(t, `LoadTask("t1").Task under the lock`, loaded.Task, v1)
	if !sameJSON(loaded.Message, es[1].Body) || !sameJSON(loaded.Request, es[0].Body) {
		t.Errorf(`LoadTask("t1", m2, request) under the lock = message %s, request %s, want %s, %s`,
			showJSON(loaded.Message), showJSON(loaded.Request), es[1].Body, es[0].Body)
	}
	if !lock.Holding() {
		t.Errorf("Holding() after a LoadTask under the lock = false, want true")
	}
	next := changed(v1)
	saved, err := s.UpdateTask(c, next, entries("n", 1))
	if err != nil {
		t.Fatalf(`UpdateTask("t1") under the lock = %v, want nil`, err)
	}
	if saved.Version != 2 || saved.LastSeq != 3 {
		t.Errorf(`UpdateTask("t1") under the lock = version %d, last seq %d, want 2, 3`, saved.Version, saved.LastSeq)
	}
	checkTask(t, `GetTask("t1") after the write under the lock`, mustGet(t, s, "t1"), saved)
	if log := mustReadLog(t, s, "t1", 2, 0); len(log) != 1 || log[0].MessageID != "n1" {
		t.Errorf(`ReadLog("t1", 2) after the write under the lock = %d entries, want n1`, len(log))
	}
	// The write ended what the lock held: a plain write goes through.
	third, err := s.UpdateTask(lockedCtx(t, nil), changed(saved), nil)
	if err != nil || third.Version != 3 {
		t.Fatalf(`UpdateTask("t1") after the write under the lock = %v, want version 3`, err)
	}
	// A compare-and-set under the lock still compares.
	_, err = s.UpdateTask(c, changed(saved), nil)
	wantErr(t, `UpdateTask("t1", version 2) under the lock after version 3`, err, store.ErrConflict)
}

func testLockUnlockFrees(t *testing.T, s store.Store) {
	l := locker(t, s)
	v1 := mustCreate(t, s, newTask("t1"), entries("m", 1))
	lock := l.LockTask("t1")
	if _, err := s.LoadTask(lockedCtx(t, lock), "t1", store.LoadParams{}); err != nil {
		t.Fatalf(`LoadTask("t1") under the lock = %v, want nil`, err)
	}
	lock.Unlock()
	checkTask(t, `GetTask("t1") after Unlock`, mustGet(t, s, "t1"), v1)
	if _, err := s.UpdateTask(lockedCtx(t, nil), changed(v1), nil); err != nil {
		t.Fatalf(`UpdateTask("t1") after Unlock = %v, want nil (nothing holds the task)`, err)
	}
	lock.Unlock()
}

func testLockMissing(t *testing.T, s store.Store) {
	l := locker(t, s)
	lock := l.LockTask("nope")
	defer lock.Unlock()
	_, err := s.LoadTask(lockedCtx(t, lock), "nope", store.LoadParams{})
	wantErr(t, `LoadTask("nope") under the lock`, err, store.ErrNotFound)
	// The key's task can still be created, and written under the lock.
	created, err := s.CreateTask(lockedCtx(t, lock), newTask("nope"), nil)
	if err != nil {
		t.Fatalf(`CreateTask("nope") under the lock = %v, want nil`, err)
	}
	if _, err := s.UpdateTask(lockedCtx(t, lock), changed(created), nil); err != nil {
		t.Fatalf(`UpdateTask("nope") under the lock after it was created = %v, want nil`, err)
	}
}

// sharedLocks skips a store one process owns: its locks are in-process,
// and a second handle on its database is not a second node.
func sharedLocks(t *testing.T, s store.Store) store.Locker {
	t.Helper()
	l := locker(t, s)
	if sn, ok := s.(interface{ SingleNode() bool }); ok && sn.SingleNode() {
		t.Skip("the store is one process's (SingleNode): its locks do not reach another handle")
	}
	return l
}

func testNodesLockWriteWaits(t *testing.T, open Open) {
	a, b := open(t), open(t)
	l := sharedLocks(t, a)
	v1 := mustCreate(t, a, newTask("t1"), entries("m", 1))
	lock := l.LockTask("t1")
	defer lock.Unlock()
	c := lockedCtx(t, lock)
	if _, err := a.LoadTask(c, "t1", store.LoadParams{}); err != nil {
		t.Fatalf(`LoadTask("t1") under the lock = %v, want nil`, err)
	}
	if !lock.Holding() {
		t.Fatalf("Holding() after a LoadTask under the lock = false, want true")
	}
	var wrote atomic.Bool
	started := make(chan struct{})
	type result struct {
		err        error
		afterWrite bool
	}
	done := make(chan result, 1)
	go func() {
		next := changed(v1)
		next.Checkpoint = json.RawMessage(`{"by":"b"}`)
		close(started)
		_, err := b.UpdateTask(lockedCtx(t, nil), next, entries("b", 1))
		done <- result{err, wrote.Load()}
	}()
	<-started
	mustReadLog(t, a, "t1", 0, 0) // time for b's write to reach the row
	next := changed(v1)
	next.Checkpoint = json.RawMessage(`{"by":"a"}`)
	wrote.Store(true)
	if _, err := a.UpdateTask(c, next, entries("a", 1)); err != nil {
		t.Fatalf(`UpdateTask("t1") under the lock while another handle writes = %v, want nil`, err)
	}
	r := <-done
	wantErr(t, `UpdateTask("t1", version 1) on the other handle while the lock held the task`, r.err, store.ErrConflict)
	if !r.afterWrite {
		t.Errorf("the other handle's write returned before the lock's write, want it to wait")
	}
	got := mustGet(t, b, "t1")
	if got.Version != 2 || !sameJSON(got.Checkpoint, json.RawMessage(`{"by":"a"}`)) {
		t.Errorf(`GetTask("t1") = version %d, checkpoint %s, want 2, the lock's write`, got.Version, showJSON(got.Checkpoint))
	}
}

func testNodesLockReadsWrite(t *testing.T, open Open) {
	a, b := open(t), open(t)
	la := sharedLocks(t, a)
	lb := locker(t, b)
	v1 := mustCreate(t, a, newTask("t1"), entries("m", 1))
	lock := la.LockTask("t1")
	defer lock.Unlock()
	c := lockedCtx(t, lock)
	if _, err := a.LoadTask(c, "t1", store.LoadParams{}); err != nil {
		t.Fatalf(`LoadTask("t1") under the lock = %v, want nil`, err)
	}
	var wrote atomic.Bool
	started := make(chan struct{})
	type result struct {
		l          *store.Loaded
		err        error
		afterWrite bool
	}
	done := make(chan result, 1)
	go func() {
		other := lb.LockTask("t1")
		defer other.Unlock()
		close(started)
		l, err := b.LoadTask(lockedCtx(t, other), "t1", store.LoadParams{MessageID: "a1", Request: true})
		done <- result{l, err, wrote.Load()}
	}()
	<-started
	mustReadLog(t, a, "t1", 0, 0) // time for b's read to reach the row
	wrote.Store(true)
	saved, err := a.UpdateTask(c, changed(v1), entries("a", 1))
	if err != nil {
		t.Fatalf(`UpdateTask("t1") under the lock = %v, want nil`, err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf(`LoadTask("t1") under a lock on the other handle = %v, want nil`, r.err)
	}
	if !r.afterWrite {
		t.Errorf("the other handle's LoadTask under its lock returned before the first lock's write, want it to wait")
	}
	checkTask(t, `LoadTask("t1").Task under the other handle's lock`, r.l.Task, saved)
	// What the write appended is read too, not only its row.
	if r.l.Message == nil {
		t.Errorf(`LoadTask("t1", messageId a1) under the other handle's lock found no message, want the entry the first lock's write appended`)
	}
}

// testLockPushDue: a write under a lock that holds the task's row moves
// its push configurations to the write's newest notify entry and says so
// (PushDue), as a write outside a lock does; one with no notify entry
// moves none.
func testLockPushDue(t *testing.T, s store.Store) {
	l := locker(t, s)
	cur := mustCreate(t, s, newTask("t1"), plain("a", 1))
	mustPut(t, s, pushConfig("t1", "p1", cur.LastSeq))
	write := func(es []store.LogEntry) *store.Task {
		t.Helper()
		lock := l.LockTask("t1")
		defer lock.Unlock()
		c := lockedCtx(t, lock)
		if _, err := s.LoadTask(c, "t1", store.LoadParams{}); err != nil || !lock.Holding() {
			t.Fatalf(`LoadTask("t1") under the lock = %v, holding %v; want nil, true`, err, lock.Holding())
		}
		saved, err := s.UpdateTask(c, changed(cur), es)
		if err != nil {
			t.Fatalf(`UpdateTask("t1") under the lock = %v, want nil`, err)
		}
		return saved
	}
	cur = write(plain("b", 1))
	if got := mustGetPush(t, s, "t1", "p1"); cur.PushDue || got.TargetSeq != 1 || !got.DueAt.IsZero() {
		t.Errorf("UpdateTask(plain entry) under the lock: PushDue %v, the configuration's target %d, due %v; want false, 1, zero", cur.PushDue, got.TargetSeq, got.DueAt)
	}
	cur = write(append(notified("c", 2), plain("d", 1)...)) // seq 3, 4 notify; 5 not
	if got := mustGetPush(t, s, "t1", "p1"); !cur.PushDue || got.TargetSeq != 4 || got.DueAt.IsZero() {
		t.Errorf("UpdateTask(notify entries 3, 4, plain 5) under the lock: PushDue %v, the configuration's target %d, due %v; want true, 4, set", cur.PushDue, got.TargetSeq, got.DueAt)
	}
}
