package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// The group-commit writer (writer.go): concurrent writes share a
// transaction, each is acknowledged only after its commit, one write's
// failure is not another's, and a caller that gives up before its write
// started leaves nothing behind.

// holdWriter makes the writer run an op that waits until the returned
// release is called, so that the writes sent meanwhile queue up and are
// committed together in the next batch.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, gate := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.write(context.Background(), func(*batch) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(gate)
			if err := <-done; err != nil {
				t.Errorf("the holding write = %v, want nil", err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// watchQueue returns a channel that receives a value each time a write
// joins s's writer queue from now on.
func watchQueue(t *testing.T, s *Store) <-chan struct{} {
	t.Helper()
	q := make(chan struct{}, queueLen)
	f := func() {
		select {
		case q <- struct{}{}:
		default: // more writes than the test waits for: never block the writer
		}
	}
	s.onQueued.Store(&f)
	t.Cleanup(func() { s.onQueued.Store(nil) })
	return q
}

// waitQueued waits until n more writes joined the queue that q watches.
func waitQueued(t *testing.T, q <-chan struct{}, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for i := range n {
		select {
		case <-q:
		case <-timeout:
			t.Fatalf("%d writes joined the queue within 10s, want %d", i, n)
		}
	}
}

func TestConcurrentWritesShareACommit(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	const n = 20
	for i := range n {
		if _, err := s.CreateTask(t.Context(), sampleTask(fmt.Sprint("t", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	release := holdWriter(t, s)
	q := watchQueue(t, s)
	batches0 := s.batches.Load()

	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			cur, err := s.GetTask(t.Context(), fmt.Sprint("t", i))
			if err == nil {
				next := *cur
				next.Checkpoint = []byte(fmt.Sprintf(`{"n":%d}`, i))
				_, err = s.UpdateTask(t.Context(), &next, []store.LogEntry{{Kind: store.KindStatus, Body: []byte(`{}`)}})
			}
			errs[i] = err
		})
	}
	waitQueued(t, q, n)
	release()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("UpdateTask(t%d) = %v, want nil", i, err)
		}
	}
	// The holding op's batch, then one for all n updates.
	if got := s.batches.Load() - batches0; got != 2 {
		t.Errorf("%d concurrent updates took %d commits, want 2 (the held one, then one for all)", n, got)
	}
	for i := range n {
		got, err := s.GetTask(t.Context(), fmt.Sprint("t", i))
		if err != nil || got.Version != 2 || string(got.Checkpoint) != fmt.Sprintf(`{"n":%d}`, i) {
			t.Errorf("GetTask(t%d) = %+v, %v, want version 2 with its own checkpoint", i, got, err)
		}
	}
}

func TestWriteIsAcknowledgedOnlyAfterItsCommit(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	release := holdWriter(t, s)
	q := watchQueue(t, s)
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateTask(t.Context(), sampleTask("t1"), nil)
		done <- err
	}()
	waitQueued(t, q, 1)
	select {
	case err := <-done:
		t.Fatalf("CreateTask returned %v while the writer was busy, want it to wait for its commit", err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := s.GetTask(t.Context(), "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetTask before the commit = %v, want ErrNotFound", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("CreateTask = %v, want nil", err)
	}
	if _, err := s.GetTask(t.Context(), "t1"); err != nil {
		t.Errorf("GetTask after CreateTask returned = %v, want the task", err)
	}
}

func TestCanceledQueuedWriteChangesNothing(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	created, err := s.CreateTask(t.Context(), sampleTask("t1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	q := watchQueue(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		next := *created
		next.Checkpoint = []byte(`{"late":true}`)
		_, err := s.UpdateTask(ctx, &next, []store.LogEntry{{Kind: store.KindStatus}})
		done <- err
	}()
	waitQueued(t, q, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("UpdateTask canceled while queued = %v, want context.Canceled", err)
	}
	release()
	// A later write goes through the writer after the withdrawn one.
	if _, err := s.CreateTask(t.Context(), sampleTask("t2"), nil); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetTask(t.Context(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || string(got.Checkpoint) == `{"late":true}` || got.LastSeq != 0 {
		t.Errorf("GetTask after a withdrawn update = version %d, checkpoint %s, last seq %d, want it unchanged", got.Version, got.Checkpoint, got.LastSeq)
	}
}

func TestFailingWriteDoesNotFailItsBatch(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	release := holdWriter(t, s)
	q := watchQueue(t, s)
	boom := errors.New("boom")
	var wg sync.WaitGroup
	var errA, errB, errBad, errTaken error
	wg.Go(func() { _, errA = s.CreateTask(t.Context(), sampleTask("a"), nil) })
	waitQueued(t, q, 1)
	wg.Go(func() {
		// Writes a task, then fails: a failure the batch cannot keep.
		errBad = s.write(t.Context(), func(b *batch) error {
			bad := sampleTask("bad")
			p := packTask(bad, nil)
			if _, err := b.createTask(bad, nil, &p, time.Now().UnixMilli()); err != nil {
				return err
			}
			return boom
		})
	})
	waitQueued(t, q, 1)
	wg.Go(func() { _, errTaken = s.CreateTask(t.Context(), sampleTask("a"), nil) })
	waitQueued(t, q, 1)
	wg.Go(func() { _, errB = s.CreateTask(t.Context(), sampleTask("b"), nil) })
	waitQueued(t, q, 1)
	release()
	wg.Wait()
	if errA != nil || errB != nil {
		t.Errorf("the good writes = %v, %v, want nil, nil", errA, errB)
	}
	if !errors.Is(errBad, boom) {
		t.Errorf("the failing write = %v, want %v", errBad, boom)
	}
	if !errors.Is(errTaken, store.ErrExists) {
		t.Errorf("CreateTask(a) again in the same batch = %v, want ErrExists", errTaken)
	}
	for id, want := range map[string]error{"a": nil, "b": nil, "bad": store.ErrNotFound} {
		if _, err := s.GetTask(t.Context(), id); !errors.Is(err, want) {
			t.Errorf("GetTask(%s) = %v, want %v", id, err, want)
		}
	}
}

func TestCloseFinishesQueuedWritesThenRefuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "askpoint.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriter(t, s)
	q := watchQueue(t, s)
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateTask(t.Context(), sampleTask("t1"), nil)
		done <- err
	}()
	waitQueued(t, q, 1)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	release()
	if err := <-done; err != nil {
		t.Errorf("CreateTask queued before Close = %v, want nil", err)
	}
	if err := <-closed; err != nil {
		t.Fatalf("Close() = %v", err)
	}
	if _, err := s.CreateTask(t.Context(), sampleTask("t2"), nil); err == nil {
		t.Errorf("CreateTask after Close = nil, want an error")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close() again = %v, want nil", err)
	}
	s = open(t, path)
	if _, err := s.GetTask(t.Context(), "t1"); err != nil {
		t.Errorf("GetTask(t1) after reopening = %v, want the task written before Close", err)
	}
}

func TestCreateTasksIsAllOrNothing(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	if _, err := s.CreateTask(t.Context(), sampleTask("t2"), nil); err != nil {
		t.Fatal(err)
	}
	entries := []store.LogEntry{{Kind: store.KindMessage, MessageID: "m1", InHistory: true, Body: []byte(`{}`)}}
	err := s.CreateTasks(t.Context(), []*store.Task{sampleTask("t1"), sampleTask("t2"), sampleTask("t3")}, [][]store.LogEntry{entries, entries, entries})
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("CreateTasks with a taken ID = %v, want ErrExists", err)
	}
	for _, id := range []string{"t1", "t3"} {
		if _, err := s.GetTask(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetTask(%s) after a failed CreateTasks = %v, want ErrNotFound", id, err)
		}
	}
	if err := s.CreateTasks(t.Context(), []*store.Task{sampleTask("t1"), sampleTask("t3")}, [][]store.LogEntry{entries}); err != nil {
		t.Fatalf("CreateTasks = %v", err)
	}
	for id, seq := range map[string]int64{"t1": 1, "t3": 0} {
		got, err := s.GetTask(t.Context(), id)
		if err != nil || got.Version != 1 || got.LastSeq != seq {
			t.Errorf("GetTask(%s) = %+v, %v, want version 1, last seq %d", id, got, err, seq)
		}
	}
	if log, err := s.ReadLog(t.Context(), "t1", 0, 0); err != nil || len(log) != 1 || log[0].Seq != 1 || log[0].MessageID != "m1" {
		t.Errorf("ReadLog(t1) = %+v, %v, want entry 1 m1", log, err)
	}
}

// TestWriterPreparesAgainOnANewConnection: the writer's statements are
// prepared on its driver connection (wconn.go); when database/sql replaces
// that connection (here: its lifetime runs out), the next batch prepares
// them on the new one, and writes and reads go on as before.
func TestWriterPreparesAgainOnANewConnection(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "w.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	first := &store.Task{ID: "t-1", ContextID: "c-1", Agent: "a", State: "TASK_STATE_SUBMITTED"}
	if _, err := s.CreateTask(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	before := s.wdc
	s.w.SetConnMaxLifetime(time.Nanosecond) // the connection, opened at Open, is older
	second := &store.Task{ID: "t-2", ContextID: "c-2", Agent: "a", State: "TASK_STATE_SUBMITTED"}
	saved, err := s.CreateTask(ctx, second, []store.LogEntry{{Kind: store.KindMessage, MessageID: "m", InHistory: true, Body: []byte(`{"messageId":"m"}`)}})
	s.w.SetConnMaxLifetime(0)
	if err != nil {
		t.Fatalf("CreateTask on a new connection: %v", err)
	}
	if s.wdc == before {
		t.Fatal("the writer ran on the connection whose lifetime was over")
	}
	saved.State = "TASK_STATE_WORKING"
	if _, err := s.UpdateTask(ctx, saved, nil); err != nil {
		t.Fatalf("UpdateTask on the new connection: %v", err)
	}
	for _, id := range []string{"t-1", "t-2"} {
		got, err := s.GetTask(ctx, id)
		if err != nil {
			t.Fatalf("GetTask(%s): %v", id, err)
		}
		if id == "t-2" && (got.State != "TASK_STATE_WORKING" || got.Version != 2 || got.LastSeq != 1) {
			t.Errorf("t-2 = state %s, version %d, last seq %d; want TASK_STATE_WORKING, 2, 1", got.State, got.Version, got.LastSeq)
		}
	}
	if _, err := s.CreateTask(ctx, first, nil); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateTask of a taken ID = %v, want store.ErrExists", err)
	}
}

// TestUpdateLeavesTheContextIndexAlone: the UpdateTask the engine's
// writes take (stmtUpdateTask: same context) opens no cursor on
// tasks_context, so an update writes none of its pages (SQLite deletes
// and inserts again the key of every index whose columns are SET, even
// to the same value); the statement for a context that moves does.
// Read from the statements' programs (EXPLAIN), whatever the load.
func TestUpdateLeavesTheContextIndexAlone(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	roots := map[string]int64{}
	for _, name := range []string{"tasks_context", "tasks_list"} {
		var root int64
		if err := s.r.QueryRowContext(t.Context(), `SELECT rootpage FROM sqlite_schema WHERE name = ?`, name).Scan(&root); err != nil {
			t.Fatal(err)
		}
		roots[name] = root
	}
	// written returns which of roots the statement q opens for writing.
	written := func(q string) map[string]bool {
		rows, err := s.r.QueryContext(t.Context(), "EXPLAIN "+q, make([]any, strings.Count(q, "?"))...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		got := map[string]bool{}
		for rows.Next() {
			var addr, p1, p2, p3, p5 int64
			var op string
			var p4, comment any
			if err := rows.Scan(&addr, &op, &p1, &p2, &p3, &p4, &p5, &comment); err != nil {
				t.Fatal(err)
			}
			for name, root := range roots {
				if op == "OpenWrite" && p2 == root {
					got[name] = true
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if w := written(writeSQL[stmtUpdateTask]); w["tasks_context"] || !w["tasks_list"] {
		t.Errorf("UpdateTask within its context writes %v, want tasks_list and not tasks_context", w)
	}
	if w := written(writeSQL[stmtUpdateTaskContext]); !w["tasks_context"] {
		t.Errorf("UpdateTask to another context writes %v, want tasks_context", w)
	}
}

// TestLongAppendsReadBackInOrder: appendLog inserts up to logRows entries
// a statement; a write with more is cut into several, numbered on from
// each other, and every entry reads back in its place.
func TestLongAppendsReadBackInOrder(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	entries := func(from, n int) []store.LogEntry {
		es := make([]store.LogEntry, n)
		for i := range es {
			k := from + i
			es[i] = store.LogEntry{Kind: store.KindStatus, InHistory: k%2 == 0, Notify: k%3 == 0, Body: []byte(fmt.Sprintf(`{"n":%d}`, k))}
			if k%4 == 0 {
				es[i].Kind, es[i].MessageID = store.KindMessage, fmt.Sprintf("m-%d", k)
			}
		}
		return es
	}
	first, second := 2*logRows+3, logRows+1
	saved, err := s.CreateTask(t.Context(), sampleTask("t1"), entries(1, first))
	if err != nil {
		t.Fatal(err)
	}
	saved.State = "TASK_STATE_COMPLETED"
	if saved, err = s.UpdateTask(t.Context(), saved, entries(first+1, second)); err != nil {
		t.Fatal(err)
	}
	if saved.LastSeq != int64(first+second) {
		t.Errorf("LastSeq = %d, want %d", saved.LastSeq, first+second)
	}
	got, err := s.ReadLog(t.Context(), "t1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := entries(1, first+second)
	if len(got) != len(want) {
		t.Fatalf("ReadLog = %d entries, want %d", len(got), len(want))
	}
	for i, e := range got {
		w := want[i]
		if e.Seq != int64(i+1) || e.Kind != w.Kind || e.MessageID != w.MessageID || e.InHistory != w.InHistory || e.Notify != w.Notify || string(e.Body) != string(w.Body) {
			t.Errorf("entry %d = seq %d %s %q history %v notify %v %s, want seq %d %s %q history %v notify %v %s", i,
				e.Seq, e.Kind, e.MessageID, e.InHistory, e.Notify, e.Body, i+1, w.Kind, w.MessageID, w.InHistory, w.Notify, w.Body)
		}
	}
}

// TestAFailedCommitIsRolledBack: a batch whose COMMIT fails (here a
// deferred foreign key its op broke, which only COMMIT checks) fails its
// write with the commit's error, leaves nothing of it, and the writer's
// connection is out of the transaction: the next write begins and
// commits as usual.
func TestAFailedCommitIsRolledBack(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	err := s.write(t.Context(), func(b *batch) error {
		if _, err := b.exec(`PRAGMA defer_foreign_keys = ON`); err != nil {
			return err
		}
		_, err := b.exec(`INSERT INTO task_log (task_key, seq, kind, at) VALUES (424242, 1, 'status', 0)`)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "commit") {
		t.Fatalf("the write whose commit fails = %v, want the commit's error", err)
	}
	var n int
	if err := s.r.QueryRowContext(t.Context(), `SELECT count(*) FROM task_log WHERE task_key = 424242`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("entries of the failed commit = %d, %v; want 0", n, err)
	}
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatalf("CreateTask after a failed commit = %v, want nil", err)
	}
	if _, err := s.GetTask(t.Context(), "t1"); err != nil {
		t.Fatalf("GetTask after a failed commit = %v, want the task", err)
	}
}
