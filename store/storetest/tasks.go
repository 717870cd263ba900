package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// taskCases cover CreateTask, GetTask and UpdateTask.
var taskCases = []testCase{
	{"CreateTask/RoundTripsEveryColumn", testCreateRoundTrip},
	{"CreateTask/NilJSONColumnsStayNil", testCreateNilColumns},
	{"CreateTask/SetsVersionLastSeqAndTimestamps", testCreateSetsStoreColumns},
	{"CreateTask/NumbersEntriesFromOne", testCreateNumbersEntries},
	{"CreateTask/FillsZeroEntryTime", testCreateFillsZeroAt},
	{"CreateTask/TakenIDIsErrExistsAndChangesNothing", testCreateTaken},
	{"CreateTask/TakenRequestKeyIsErrExistsAndChangesNothing", testCreateTakenKey},
	{"TaskByRequestKey/FindsTheTaskCreatedWithTheKey", testTaskByRequestKey},
	{"GetTask/UnknownIDIsErrNotFound", testGetUnknown},
	{"UpdateTask/ReplacesMutableColumns", testUpdateReplaces},
	{"UpdateTask/ClearsColumns", testUpdateClears},
	{"UpdateTask/KeepsImmutableColumns", testUpdateKeepsImmutable},
	{"UpdateTask/IncrementsVersion", testUpdateIncrementsVersion},
	{"UpdateTask/AppendsEntriesContinuingSeq", testUpdateAppends},
	{"UpdateTask/StaleVersionIsErrConflictAndChangesNothing", testUpdateStale},
	{"UpdateTask/UnknownIDIsErrNotFound", testUpdateUnknown},
	{"UpdateTask/ConcurrentSameVersionExactlyOneWins", testUpdateConcurrent},
}

func testCreateRoundTrip(t *testing.T, s store.Store) {
	want := newTask("t1")
	created := mustCreate(t, s, want, entries("m", 2))
	checkContent(t, `CreateTask("t1")`, created, want)

	got := mustGet(t, s, "t1")
	checkTask(t, `GetTask("t1")`, got, created)
	checkContent(t, `GetTask("t1")`, got, want)
}

func testCreateNilColumns(t *testing.T, s store.Store) {
	want := bareTask("t1")
	created := mustCreate(t, s, want, []store.LogEntry{{Kind: store.KindStatus, At: base}})
	got := mustGet(t, s, "t1")

	// An empty JSON value is no JSON: it comes back nil too, as nil
	// marshals to null and an empty json.RawMessage fails to marshal.
	empty := bareTask("t2")
	e := json.RawMessage{}
	empty.Status, empty.Artifacts, empty.Metadata, empty.Checkpoint, empty.Question, empty.Input, empty.Pause = e, e, e, e, e, e, e
	createdEmpty := mustCreate(t, s, empty, []store.LogEntry{{Kind: store.KindStatus, Body: e, At: base}})
	gotEmpty := mustGet(t, s, "t2")
	emptyWant := bareTask("t2")

	for _, id := range []string{"t1", "t2"} {
		log := mustReadLog(t, s, id, 0, 0)
		if len(log) != 1 || log[0].Body != nil {
			t.Errorf("ReadLog(%q, 0, 0) = %+v, want one entry with a nil Body", id, log)
		}
	}
	for call, task := range map[string]*store.Task{
		`CreateTask("t1")`: created, `GetTask("t1")`: got,
		`CreateTask("t2")`: createdEmpty, `GetTask("t2")`: gotEmpty,
	} {
		want := want
		if task.ID == "t2" {
			want = emptyWant
		}
		checkContent(t, call, task, want)
		if task.Status != nil || task.Artifacts != nil || task.Metadata != nil ||
			task.Checkpoint != nil || task.Question != nil || task.Input != nil || task.Pause != nil {
			t.Errorf("%s JSON columns = %q %q %q %q %q %q %q, want all nil", call,
				task.Status, task.Artifacts, task.Metadata, task.Checkpoint, task.Question, task.Input, task.Pause)
		}
		if !task.WakeAt.IsZero() || !task.HoldAt.IsZero() {
			t.Errorf("%s WakeAt, HoldAt = %v, %v, want both zero", call, task.WakeAt, task.HoldAt)
		}
		if !task.LeaseUntil.IsZero() || task.LeaseOwner != "" || task.Runnable {
			t.Errorf("%s lease = (%v, %q, %q), want (false, \"\", zero)", call, task.Runnable, task.LeaseOwner, task.LeaseUntil)
		}
	}
}

func testCreateSetsStoreColumns(t *testing.T, s store.Store) {
	in := newTask("t1")
	in.Version = 42 // ignored: the store starts every task at 1
	in.LastSeq = 7  // ignored: the store counts the entries
	created := mustCreate(t, s, in, entries("m", 3))
	got := mustGet(t, s, "t1")
	for call, task := range map[string]*store.Task{`CreateTask("t1")`: created, `GetTask("t1")`: got} {
		if task.Version != 1 {
			t.Errorf("%s Version = %d, want 1", call, task.Version)
		}
		if task.LastSeq != 3 {
			t.Errorf("%s LastSeq = %d, want 3", call, task.LastSeq)
		}
		if task.CreatedAt.IsZero() || task.UpdatedAt.IsZero() {
			t.Errorf("%s CreatedAt, UpdatedAt = %v, %v, want both set", call, task.CreatedAt, task.UpdatedAt)
		}
	}

	empty := mustCreate(t, s, bareTask("t2"), nil)
	if empty.Version != 1 || empty.LastSeq != 0 {
		t.Errorf(`CreateTask("t2", no entries) Version, LastSeq = %d, %d, want 1, 0`, empty.Version, empty.LastSeq)
	}
}

func testCreateNumbersEntries(t *testing.T, s store.Store) {
	es := []store.LogEntry{
		entry(store.KindMessage, "req", true, base),
		entry(store.KindStatus, "", false, base.Add(time.Millisecond)),
		entry(store.KindArtifact, "", false, base.Add(2*time.Millisecond)),
		entry(store.KindMessage, "q", true, base.Add(time.Second)),
	}
	es[1].Seq = 99 // ignored: the store assigns Seq
	mustCreate(t, s, newTask("t1"), es)
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), withSeq(1, es...))
}

func testCreateFillsZeroAt(t *testing.T, s store.Store) {
	e := entry(store.KindMessage, "m1", true, time.Time{})
	created := mustCreate(t, s, newTask("t1"), []store.LogEntry{e})
	got := mustReadLog(t, s, "t1", 0, 0)
	if len(got) != 1 {
		t.Fatalf(`ReadLog("t1", 0, 0) = %d entries, want 1`, len(got))
	}
	if got[0].At.IsZero() {
		t.Errorf(`ReadLog("t1", 0, 0)[0].At = zero, want set by the store`)
	}
	// The store's clock, as for CreatedAt: allow a generous skew.
	if d := got[0].At.Sub(created.CreatedAt); d < -time.Minute || d > time.Minute {
		t.Errorf(`ReadLog("t1", 0, 0)[0].At = %v, want close to CreatedAt %v`, got[0].At, created.CreatedAt)
	}
}

func testCreateTaken(t *testing.T, s store.Store) {
	first := mustCreate(t, s, newTask("t1"), entries("m", 2))

	other := bareTask("t1")
	other.Tenant, other.Owner, other.Agent = "tenant-b", "bob", "other"
	_, err := s.CreateTask(ctx(t), other, entries("x", 3))
	wantErr(t, `CreateTask("t1") again`, err, store.ErrExists)

	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), first)
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), withSeq(1, entries("m", 2)...))
}

func testCreateTakenKey(t *testing.T, s store.Store) {
	withKey := func(id, key string) *store.Task {
		task := newTask(id)
		task.RequestKey = key
		return task
	}
	first := mustCreate(t, s, withKey("t1", "request-1"), entries("m", 2))
	if first.RequestKey != "" {
		t.Errorf(`CreateTask("t1").RequestKey = %q, want "" (reads leave it empty)`, first.RequestKey)
	}
	_, err := s.CreateTask(ctx(t), withKey("t2", "request-1"), entries("x", 3))
	wantErr(t, `CreateTask("t2") with t1's request key`, err, store.ErrExists)
	_, err = s.GetTask(ctx(t), "t2")
	wantErr(t, `GetTask("t2") after its create was refused`, err, store.ErrNotFound)
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), first)
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), withSeq(1, entries("m", 2)...))
	checkEntries(t, `ReadLog("t2", 0, 0)`, mustReadLog(t, s, "t2", 0, 0), nil)

	// No key is no uniqueness: tasks without one never collide.
	mustCreate(t, s, withKey("t3", ""), nil)
	mustCreate(t, s, withKey("t4", ""), nil)
	// Another key is another request.
	mustCreate(t, s, withKey("t5", "request-2"), nil)
}

func testTaskByRequestKey(t *testing.T, s store.Store) {
	task := newTask("t1")
	task.RequestKey = "request-1"
	created := mustCreate(t, s, task, entries("m", 1))
	mustCreate(t, s, newTask("t2"), nil) // no key
	got, err := s.TaskByRequestKey(ctx(t), "request-1")
	if err != nil {
		t.Fatalf(`TaskByRequestKey("request-1") = %v, want t1`, err)
	}
	checkTask(t, `TaskByRequestKey("request-1")`, got, created)
	// The key outlives changes to the task.
	next := mustUpdate(t, s, changed(created), entries("n", 1))
	got, err = s.TaskByRequestKey(ctx(t), "request-1")
	if err != nil {
		t.Fatalf(`TaskByRequestKey("request-1") after UpdateTask = %v, want t1`, err)
	}
	checkTask(t, `TaskByRequestKey("request-1") after UpdateTask`, got, next)
	for _, key := range []string{"request-2", "", "t1"} {
		_, err := s.TaskByRequestKey(ctx(t), key)
		wantErr(t, fmt.Sprintf("TaskByRequestKey(%q)", key), err, store.ErrNotFound)
	}
}

func testGetUnknown(t *testing.T, s store.Store) {
	_, err := s.GetTask(ctx(t), "nope")
	wantErr(t, `GetTask("nope")`, err, store.ErrNotFound)

	mustCreate(t, s, bareTask("t1"), nil)
	_, err = s.GetTask(ctx(t), "t2")
	wantErr(t, `GetTask("t2")`, err, store.ErrNotFound)
}

// changed returns cur with every mutable column changed.
func changed(cur *store.Task) *store.Task {
	next := *cur
	next.ContextID = "ctx-moved"
	next.State = a2a.TaskStateInputRequired
	next.Status = json.RawMessage(`{"state":"TASK_STATE_INPUT_REQUIRED"}`)
	next.Artifacts = json.RawMessage(`[{"artifactId":"a2"}]`)
	next.Metadata = json.RawMessage(`{"k":"w"}`)
	next.Checkpoint = json.RawMessage(`{"step":4}`)
	next.Question = json.RawMessage(`{"text":"sure?"}`)
	next.Input = json.RawMessage(`{"answer":"yes"}`)
	next.Pause = json.RawMessage(`{"expiry":"fail","sent":1}`)
	next.WakeAt = base.Add(20*time.Minute + 333*time.Millisecond)
	next.HoldAt = base.Add(-time.Hour + 9*time.Millisecond)
	next.Runnable = !cur.Runnable
	next.LeaseOwner = "node-z"
	next.LeaseUntil = base.Add(time.Hour + 123*time.Millisecond)
	return &next
}

func testUpdateReplaces(t *testing.T, s store.Store) {
	created := mustCreate(t, s, bareTask("t1"), nil)
	want := changed(created)
	updated := mustUpdate(t, s, want, nil)
	checkContent(t, `UpdateTask("t1")`, updated, want)
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), updated)
	if updated.UpdatedAt.IsZero() {
		t.Errorf(`UpdateTask("t1") UpdatedAt = zero, want set`)
	}
}

func testUpdateClears(t *testing.T, s store.Store) {
	created := mustCreate(t, s, newTask("t1"), nil)
	want := *created
	want.Status, want.Artifacts, want.Metadata = nil, nil, nil
	want.Checkpoint, want.Question, want.Input, want.Pause = nil, nil, nil, nil
	want.WakeAt, want.HoldAt = time.Time{}, time.Time{}
	want.Runnable = false
	want.LeaseOwner, want.LeaseUntil = "", time.Time{}
	updated := mustUpdate(t, s, &want, nil)
	got := mustGet(t, s, "t1")
	for call, task := range map[string]*store.Task{`UpdateTask("t1")`: updated, `GetTask("t1")`: got} {
		checkContent(t, call, task, &want)
		if task.Status != nil || task.Artifacts != nil || task.Metadata != nil ||
			task.Checkpoint != nil || task.Question != nil || task.Input != nil || task.Pause != nil {
			t.Errorf("%s JSON columns = %q %q %q %q %q %q %q, want all nil", call,
				task.Status, task.Artifacts, task.Metadata, task.Checkpoint, task.Question, task.Input, task.Pause)
		}
		if !task.WakeAt.IsZero() || !task.HoldAt.IsZero() {
			t.Errorf("%s WakeAt, HoldAt = %v, %v, want both zero", call, task.WakeAt, task.HoldAt)
		}
		if task.Runnable || task.LeaseOwner != "" || !task.LeaseUntil.IsZero() {
			t.Errorf("%s lease = (%v, %q, %v), want (false, \"\", zero)", call, task.Runnable, task.LeaseOwner, task.LeaseUntil)
		}
	}
}

func testUpdateKeepsImmutable(t *testing.T, s store.Store) {
	created := mustCreate(t, s, newTask("t1"), nil)
	in := changed(created)
	in.Tenant, in.Owner, in.Agent = "tenant-other", "mallory", "other-agent"
	in.CreatedAt = base.Add(-24 * time.Hour)
	updated := mustUpdate(t, s, in, nil)
	got := mustGet(t, s, "t1")
	for call, task := range map[string]*store.Task{`UpdateTask("t1")`: updated, `GetTask("t1")`: got} {
		if task.ID != "t1" || task.Tenant != created.Tenant || task.Owner != created.Owner || task.Agent != created.Agent {
			t.Errorf("%s ID, Tenant, Owner, Agent = %q, %q, %q, %q, want %q, %q, %q, %q", call,
				task.ID, task.Tenant, task.Owner, task.Agent, "t1", created.Tenant, created.Owner, created.Agent)
		}
		if !sameMilli(task.CreatedAt, created.CreatedAt) {
			t.Errorf("%s CreatedAt = %v, want %v", call, task.CreatedAt, created.CreatedAt)
		}
	}
}

func testUpdateIncrementsVersion(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), nil)
	for want := int64(2); want <= 4; want++ {
		cur = mustUpdate(t, s, changed(cur), nil)
		if cur.Version != want {
			t.Errorf(`UpdateTask("t1") Version = %d, want %d`, cur.Version, want)
		}
		if got := mustGet(t, s, "t1"); got.Version != want {
			t.Errorf(`GetTask("t1") Version = %d, want %d`, got.Version, want)
		}
	}
	if cur.LastSeq != 0 {
		t.Errorf(`UpdateTask("t1") without entries LastSeq = %d, want 0`, cur.LastSeq)
	}
}

func testUpdateAppends(t *testing.T, s store.Store) {
	first := entries("a", 2)
	cur := mustCreate(t, s, newTask("t1"), first)
	second := []store.LogEntry{
		entry(store.KindStatus, "", false, base.Add(time.Minute)),
		entry(store.KindMessage, "b1", true, base.Add(2*time.Minute)),
		entry(store.KindArtifact, "", false, base.Add(3*time.Minute)),
	}
	cur = mustUpdate(t, s, cur, second)
	if cur.LastSeq != 5 {
		t.Errorf(`UpdateTask("t1", 3 entries) LastSeq = %d, want 5`, cur.LastSeq)
	}
	cur = mustUpdate(t, s, cur, nil)
	if cur.LastSeq != 5 {
		t.Errorf(`UpdateTask("t1", no entries) LastSeq = %d, want 5`, cur.LastSeq)
	}
	third := entries("c", 1)
	cur = mustUpdate(t, s, cur, third)
	if cur.LastSeq != 6 {
		t.Errorf(`UpdateTask("t1", 1 entry) LastSeq = %d, want 6`, cur.LastSeq)
	}
	if got := mustGet(t, s, "t1"); got.LastSeq != 6 {
		t.Errorf(`GetTask("t1") LastSeq = %d, want 6`, got.LastSeq)
	}
	want := append(append(withSeq(1, first...), withSeq(3, second...)...), withSeq(6, third...)...)
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), want)
}

func testUpdateStale(t *testing.T, s store.Store) {
	v1 := mustCreate(t, s, newTask("t1"), entries("m", 1))
	v2 := mustUpdate(t, s, changed(v1), entries("n", 1))

	stale := changed(v2)
	stale.Version = v1.Version
	stale.State = a2a.TaskStateFailed
	_, err := s.UpdateTask(ctx(t), stale, entries("x", 2))
	wantErr(t, `UpdateTask("t1", stale version 1)`, err, store.ErrConflict)

	ahead := changed(v2)
	ahead.Version = v2.Version + 1
	_, err = s.UpdateTask(ctx(t), ahead, entries("y", 2))
	wantErr(t, `UpdateTask("t1", future version 3)`, err, store.ErrConflict)

	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), v2)
	want := append(withSeq(1, entries("m", 1)...), withSeq(2, entries("n", 1)...)...)
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), want)
}

func testUpdateUnknown(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), nil)
	ghost := newTask("t2")
	ghost.Version = 1
	_, err := s.UpdateTask(ctx(t), ghost, entries("m", 1))
	wantErr(t, `UpdateTask("t2")`, err, store.ErrNotFound)
	if errors.Is(err, store.ErrConflict) {
		t.Errorf(`UpdateTask("t2") = %v, want not ErrConflict`, err)
	}
	_, err = s.GetTask(ctx(t), "t2")
	wantErr(t, `GetTask("t2")`, err, store.ErrNotFound)
	if got := mustReadLog(t, s, "t2", 0, 0); len(got) != 0 {
		t.Errorf(`ReadLog("t2", 0, 0) = %d entries, want 0`, len(got))
	}
}

func testUpdateConcurrent(t *testing.T, s store.Store) {
	const n = 16
	v1 := mustCreate(t, s, newTask("t1"), entries("m", 1))

	var (
		wg        sync.WaitGroup
		start     = make(chan struct{})
		errs      = make([]error, n)
		winners   = make([]*store.Task, n)
		messageID = func(i int) string { return fmt.Sprintf("writer-%d", i) }
	)
	for i := range n {
		wg.Go(func() {
			next := changed(v1)
			next.Checkpoint = json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i))
			<-start
			winners[i], errs[i] = s.UpdateTask(ctx(t), next, []store.LogEntry{
				entry(store.KindMessage, messageID(i), true, base),
			})
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Errorf("UpdateTask by writers %d and %d both succeeded, want exactly one", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("UpdateTask by writer %d = %v, want nil or %v", i, err, store.ErrConflict)
		}
	}
	if winner < 0 {
		t.Fatalf("UpdateTask by %d writers: none succeeded, want exactly one", n)
	}

	if w := winners[winner]; w == nil || w.Version != 2 || w.LastSeq != 2 {
		t.Errorf(`UpdateTask by the winner = %+v, want Version 2, LastSeq 2`, w)
	}
	got := mustGet(t, s, "t1")
	if got.Version != 2 || got.LastSeq != 2 {
		t.Errorf(`GetTask("t1") Version, LastSeq = %d, %d, want 2, 2`, got.Version, got.LastSeq)
	}
	if want := fmt.Sprintf(`{"writer":%d}`, winner); !sameJSON(got.Checkpoint, json.RawMessage(want)) {
		t.Errorf(`GetTask("t1") Checkpoint = %s, want the winner's %s`, got.Checkpoint, want)
	}
	log := mustReadLog(t, s, "t1", 0, 0)
	if len(log) != 2 {
		t.Fatalf(`ReadLog("t1", 0, 0) = %d entries, want 2 (one new)`, len(log))
	}
	if log[1].MessageID != messageID(winner) || log[1].Seq != 2 {
		t.Errorf(`ReadLog("t1", 0, 0)[1] = seq %d %q, want seq 2 %q`, log[1].Seq, log[1].MessageID, messageID(winner))
	}
}
