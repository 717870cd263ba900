package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// nodeCases hold the driver to what several nodes (processes) of one
// deployment on one database rely on. Each case opens its handles with
// the Open it is given; two handles stand for two nodes.
var nodeCases = []nodeCase{
	{"Nodes/WritesOnOneHandleAreReadOnTheOther", testNodesSeeEachOther},
	{"Nodes/ClaimRunnable/ClaimersOnTwoHandlesNeverShareATask", testNodesClaim},
	{"Nodes/ClaimPushDeliveries/ClaimersOnTwoHandlesNeverShareAConfig", testNodesClaimPush},
	{"Nodes/DueTasks/BothHandlesSeeADueTaskAndExactlyOneActsOnIt", testNodesDue},
	{"Nodes/LateWritesAfterATakeoverAreErrConflictAndChangeNothing", testNodesLateWrite},
	{"Nodes/UpdateTask/SameVersionOnTwoHandlesExactlyOneWins", testNodesUpdateRace},
	{"Nodes/CreateTask/SameRequestKeyOnTwoHandlesExactlyOneCreates", testNodesCreateKeyRace},
	{"Nodes/UpdateTask/RetriedCompareAndSetOnTwoHandlesLosesNoUpdate", testNodesCounter},
	{"Nodes/Notifier/EveryHandleHearsEveryHandlesWrites", testNodesNotify},
	{"Nodes/Secret/HandlesRacingToCreateItGetTheSameBytes", testNodesSecretRace},
	{"Nodes/ListTasks/TotalsStayExactUnderConcurrentWritersOnEveryHandle", testNodesTotals},
}

type nodeCase struct {
	name string
	run  func(t *testing.T, open Open)
}

func testNodesSeeEachOther(t *testing.T, open Open) {
	a, b := open(t), open(t)
	es := entries("m", 2)
	created := mustCreate(t, a, newTask("t1"), es)
	checkTask(t, `GetTask("t1") on the other handle after CreateTask`, mustGet(t, b, "t1"), created)
	loaded, err := b.LoadTask(ctx(t), "t1", store.LoadParams{MessageID: "m2", Request: true})
	if err != nil {
		t.Fatalf(`LoadTask("t1") on the other handle = %v, want nil`, err)
	}
	checkTask(t, `LoadTask("t1").Task on the other handle`, loaded.Task, created)
	if !sameJSON(loaded.Message, es[1].Body) || !sameJSON(loaded.Request, es[0].Body) {
		t.Errorf(`LoadTask("t1", m2, request) on the other handle = message %s, request %s, want %s, %s`,
			showJSON(loaded.Message), showJSON(loaded.Request), es[1].Body, es[0].Body)
	}
	checkEntries(t, `ReadLog("t1", 0, 0) on the other handle`, mustReadLog(t, b, "t1", 0, 0), withSeq(1, es...))
	if got := mustList(t, b, store.ListParams{Tenant: "tenant-a", Owner: "alice", PageSize: 10}); len(got.Tasks) != 1 || got.Tasks[0].ID != "t1" {
		t.Errorf("ListTasks() on the other handle = %v, want [t1]", ids(got.Tasks))
	}

	// The other way round, and for every kind of write.
	more := entries("n", 1)
	updated := mustUpdate(t, b, changed(created), more)
	checkTask(t, `GetTask("t1") on the first handle after the other's UpdateTask`, mustGet(t, a, "t1"), updated)
	checkEntries(t, `History("t1", 0) on the first handle`, mustHistory(t, a, "t1", 0), withSeq(1, append(slices.Clone(es), more...)...))

	until := base.Add(time.Hour)
	if err := a.ExtendLease(ctx(t), "t1", updated.LeaseOwner, updated.Version, until); err != nil {
		t.Fatalf(`ExtendLease("t1") = %v, want nil`, err)
	}
	if got := mustGet(t, b, "t1"); !sameMilli(got.LeaseUntil, until) {
		t.Errorf(`GetTask("t1") on the other handle after ExtendLease: LeaseUntil = %v, want %v`, got.LeaseUntil, until)
	}

	put := mustPut(t, a, pushConfig("t1", "p1", 0))
	if got := mustGetPush(t, b, "t1", "p1"); got.Version != put.Version || !sameJSON(got.Config, put.Config) {
		t.Errorf(`GetPushConfig("t1", "p1") on the other handle = version %d config %s, want %d %s`, got.Version, got.Config, put.Version, put.Config)
	}
	if err := b.DeletePushConfig(ctx(t), "t1", "p1"); err != nil {
		t.Fatalf(`DeletePushConfig("t1", "p1") on the other handle = %v, want nil`, err)
	}
	_, err = a.GetPushConfig(ctx(t), "t1", "p1")
	wantErr(t, `GetPushConfig("t1", "p1") after the other handle deleted it`, err, store.ErrNotFound)
}

// claimers starts n goroutines, claimer i on handles[i%len(handles)], each
// calling claim until it returns nothing, and returns once all have
// stopped. claim reports what it got; its errors are the test's.
func claimers(t *testing.T, n int, handles []store.Store, claim func(s store.Store, i int) (int, error)) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		s := handles[i%len(handles)]
		wg.Go(func() {
			<-start
			for {
				got, err := claim(s, i)
				if err != nil {
					errs[i] = err
					return
				}
				if got == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("claimer %d (handle %d) = %v, want nil", i, i%len(handles), err)
		}
	}
}

func testNodesClaim(t *testing.T, open Open) {
	a, b := open(t), open(t)
	const tasks, n, batch = 120, 8, 3
	for i := range tasks {
		mustCreate(t, a, runnableTask(fmt.Sprintf("t%03d", i)), nil)
	}
	var (
		mu     sync.Mutex
		byTask = map[string][]string{} // task -> owners that got it
	)
	claimers(t, n, []store.Store{a, b}, func(s store.Store, i int) (int, error) {
		owner := fmt.Sprintf("node-%d", i)
		got, err := s.ClaimRunnable(ctx(t), claim(owner, base, batch))
		mu.Lock()
		defer mu.Unlock()
		for _, c := range got {
			byTask[c.ID] = append(byTask[c.ID], owner)
		}
		return len(got), err
	})
	if len(byTask) != tasks {
		t.Errorf("%d claimers on two handles claimed %d distinct tasks, want all %d", n, len(byTask), tasks)
	}
	for id, owners := range byTask {
		if len(owners) != 1 {
			t.Errorf("task %q claimed by %v, want exactly one claimer", id, owners)
			continue
		}
		for h, s := range []store.Store{a, b} {
			if got := mustGet(t, s, id); got.LeaseOwner != owners[0] || got.Version != 2 {
				t.Errorf("GetTask(%q) on handle %d LeaseOwner, Version = %q, %d, want %q, 2", id, h, got.LeaseOwner, got.Version, owners[0])
			}
		}
	}
}

func testNodesClaimPush(t *testing.T, open Open) {
	a, b := open(t), open(t)
	const tasks, perTask, n, batch = 20, 3, 8, 3
	for i := range tasks {
		id := fmt.Sprintf("t%02d", i)
		mustCreate(t, a, bareTask(id), notified("a", 1))
		for j := range perTask {
			mustPut(t, []store.Store{a, b}[j%2], pushConfig(id, fmt.Sprintf("p%d", j), 0))
		}
	}
	var (
		mu    sync.Mutex
		byKey = map[string][]int{} // configuration -> claimers that got it
	)
	claimers(t, n, []store.Store{a, b}, func(s store.Store, i int) (int, error) {
		got, err := s.ClaimPushDeliveries(ctx(t), claimPush(base, batch))
		mu.Lock()
		defer mu.Unlock()
		for _, c := range got {
			byKey[pushKey(c)] = append(byKey[pushKey(c)], i)
		}
		return len(got), err
	})
	if len(byKey) != tasks*perTask {
		t.Errorf("%d claimers on two handles claimed %d distinct configurations, want all %d", n, len(byKey), tasks*perTask)
	}
	for key, who := range byKey {
		if len(who) != 1 {
			t.Errorf("configuration %s claimed by claimers %v, want exactly one", key, who)
			continue
		}
		task, id, _ := strings.Cut(key, "/")
		if got := mustGetPush(t, b, task, id); got.Version != 2 || !sameMilli(got.DueAt, base.Add(leaseFor)) {
			t.Errorf("GetPushConfig(%q, %q) Version, DueAt = %d, %v, want 2, %v", task, id, got.Version, got.DueAt, base.Add(leaseFor))
		}
	}
}

// The timer loops of two nodes both find a due task; each acts on it with
// a compare-and-set on the version it read. One wins, the other gets
// ErrConflict, and the timer it cleared is due on neither node after.
func testNodesDue(t *testing.T, open Open) {
	handles := []store.Store{open(t), open(t)}
	due := bareTask("due")
	due.WakeAt = base.Add(-time.Minute)
	mustCreate(t, handles[0], due, nil)
	later := bareTask("later")
	later.WakeAt = base.Add(time.Hour)
	mustCreate(t, handles[1], later, nil)

	read := make([]*store.Task, len(handles))
	for h, s := range handles {
		got, err := s.DueTasks(ctx(t), store.DueParams{Timer: store.TimerWake, Now: base, Limit: 10})
		if err != nil {
			t.Fatalf("DueTasks(wake) on handle %d = %v, want nil", h, err)
		}
		if len(got) != 1 || got[0].ID != "due" {
			t.Fatalf("DueTasks(wake) on handle %d = %v, want [due]", h, ids(got))
		}
		read[h] = got[0]
	}

	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, len(handles))
	for h, s := range handles {
		next := *read[h]
		next.WakeAt = time.Time{}
		next.Checkpoint = json.RawMessage(fmt.Sprintf(`{"expiredBy":%d}`, h))
		wg.Go(func() {
			<-start
			_, errs[h] = s.UpdateTask(ctx(t), &next, []store.LogEntry{entry(store.KindStatus, "", false, base)})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for h, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = h
		case err == nil:
			t.Errorf("UpdateTask of the due task succeeded on both handles, want exactly one")
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("UpdateTask of the due task on handle %d = %v, want nil or %v", h, err, store.ErrConflict)
		}
	}
	if winner < 0 {
		t.Fatalf("UpdateTask of the due task: neither handle won, want exactly one")
	}
	for h, s := range handles {
		got, err := s.DueTasks(ctx(t), store.DueParams{Timer: store.TimerWake, Now: base, Limit: 10})
		if err != nil || len(got) != 0 {
			t.Errorf("DueTasks(wake) on handle %d after the winner cleared the timer = %v, %v, want none", h, ids(got), err)
		}
		next, err := s.NextDue(ctx(t), store.TimerWake)
		if err != nil || !sameMilli(next, later.WakeAt) {
			t.Errorf("NextDue(wake) on handle %d = %v, %v, want %v", h, next, err, later.WakeAt)
		}
		if got := mustGet(t, s, "due"); got.Version != 2 || got.LastSeq != 1 ||
			!sameJSON(got.Checkpoint, json.RawMessage(fmt.Sprintf(`{"expiredBy":%d}`, winner))) {
			t.Errorf(`GetTask("due") on handle %d = version %d, last seq %d, checkpoint %s, want 2, 1, the winner's`, h, got.Version, got.LastSeq, showJSON(got.Checkpoint))
		}
	}
}

// Node A holds a task and a push delivery; it stalls, its leases lapse
// and node B takes both over. What A writes late loses and changes
// nothing; B's writes win.
func testNodesLateWrite(t *testing.T, open Open) {
	nodeA, nodeB := open(t), open(t)
	mustCreate(t, nodeA, runnableTask("t1"), notified("req", 1))
	mustPut(t, nodeA, pushConfig("t1", "p1", 0))

	a := mustClaim(t, nodeA, claim("node-a", base, 1))
	if len(a) != 1 {
		t.Fatalf("ClaimRunnable(node-a) = %v, want [t1]", ids(a))
	}
	pa, err := nodeA.ClaimPushDeliveries(ctx(t), claimPush(base, 1))
	if err != nil || len(pa) != 1 {
		t.Fatalf("ClaimPushDeliveries(node-a) = %v, %v, want [t1/p1]", pushKeys(pa), err)
	}

	b := mustClaim(t, nodeB, claim("node-b", base.Add(leaseFor), 1))
	if len(b) != 1 || b[0].Version != a[0].Version+1 {
		t.Fatalf("ClaimRunnable(node-b, lease lapsed) = %v, want [t1] at version %d", ids(b), a[0].Version+1)
	}
	pb, err := nodeB.ClaimPushDeliveries(ctx(t), claimPush(base.Add(leaseFor), 1))
	if err != nil || len(pb) != 1 || pb[0].Version != pa[0].Version+1 {
		t.Fatalf("ClaimPushDeliveries(node-b, lease lapsed) = %v, %v, want [t1/p1] at version %d", pushKeys(pb), err, pa[0].Version+1)
	}
	task, push := mustGet(t, nodeB, "t1"), mustGetPush(t, nodeB, "t1", "p1")

	late := changed(a[0])
	late.Runnable, late.LeaseOwner, late.LeaseUntil = false, "", time.Time{}
	_, err = nodeA.UpdateTask(ctx(t), late, entries("late", 1))
	wantErr(t, `UpdateTask("t1") from node-a after the takeover`, err, store.ErrConflict)
	err = nodeA.ExtendLease(ctx(t), "t1", "node-a", a[0].Version, base.Add(time.Hour))
	wantErr(t, `ExtendLease("t1") from node-a after the takeover`, err, store.ErrConflict)
	settled := *pa[0]
	settled.SentSeq, settled.Attempts = 1, 1
	_, err = nodeA.SettlePush(ctx(t), &settled)
	wantErr(t, `SettlePush("t1", "p1") from node-a after the takeover`, err, store.ErrConflict)

	for h, s := range []store.Store{nodeA, nodeB} {
		checkTask(t, fmt.Sprintf(`GetTask("t1") on handle %d after node-a's late writes`, h), mustGet(t, s, "t1"), task)
		checkEntries(t, fmt.Sprintf(`ReadLog("t1", 0, 0) on handle %d after node-a's late writes`, h), mustReadLog(t, s, "t1", 0, 0), withSeq(1, notified("req", 1)...))
		if got := mustGetPush(t, s, "t1", "p1"); got.Version != push.Version || got.SentSeq != push.SentSeq || !sameMilli(got.DueAt, push.DueAt) {
			t.Errorf(`GetPushConfig("t1", "p1") on handle %d after node-a's late settle = version %d, sent %d, due %v, want %d, %d, %v`,
				h, got.Version, got.SentSeq, got.DueAt, push.Version, push.SentSeq, push.DueAt)
		}
	}

	// node-b's own writes win.
	next := mustUpdate(t, nodeB, changed(b[0]), entries("b", 1))
	if next.Version != b[0].Version+1 {
		t.Errorf(`UpdateTask("t1") from node-b Version = %d, want %d`, next.Version, b[0].Version+1)
	}
	won := *pb[0]
	won.SentSeq, won.Attempts = 1, 1
	if _, err := nodeB.SettlePush(ctx(t), &won); err != nil {
		t.Errorf(`SettlePush("t1", "p1") from node-b = %v, want nil`, err)
	}
}

func testNodesCreateKeyRace(t *testing.T, open Open) {
	handles := []store.Store{open(t), open(t)}
	const n = 16
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		errs  = make([]error, n)
		id    = func(i int) string { return fmt.Sprintf("t%d", i) }
	)
	for i := range n {
		s := handles[i%2]
		task := newTask(id(i))
		task.RequestKey = "request-1"
		wg.Go(func() {
			<-start
			_, errs[i] = s.CreateTask(ctx(t), task, entries(id(i), 1))
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("CreateTask of %s and %s with one request key both succeeded, want exactly one", id(winner), id(i))
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrExists):
			t.Errorf("CreateTask of %s (handle %d) = %v, want nil or %v", id(i), i%2, err, store.ErrExists)
		}
	}
	if winner < 0 {
		t.Fatal("no CreateTask succeeded, want exactly one")
	}
	for h, s := range handles {
		got, err := s.TaskByRequestKey(ctx(t), "request-1")
		if err != nil || got.ID != id(winner) {
			t.Errorf(`TaskByRequestKey("request-1") on handle %d = %v, %v; want %s`, h, got, err, id(winner))
		}
		for i := range n {
			if _, err := s.GetTask(ctx(t), id(i)); i != winner && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetTask(%s) on handle %d = %v, want %v (its create lost)", id(i), h, err, store.ErrNotFound)
			}
		}
	}
}

func testNodesUpdateRace(t *testing.T, open Open) {
	handles := []store.Store{open(t), open(t)}
	const n = 16
	v1 := mustCreate(t, handles[0], newTask("t1"), entries("m", 1))
	var (
		wg        sync.WaitGroup
		start     = make(chan struct{})
		errs      = make([]error, n)
		messageID = func(i int) string { return fmt.Sprintf("writer-%d", i) }
	)
	for i := range n {
		s := handles[i%2]
		next := changed(v1)
		next.Checkpoint = json.RawMessage(fmt.Sprintf(`{"writer":%d}`, i))
		wg.Go(func() {
			<-start
			_, errs[i] = s.UpdateTask(ctx(t), next, []store.LogEntry{entry(store.KindMessage, messageID(i), true, base)})
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("UpdateTask by writers %d and %d both succeeded, want exactly one", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("UpdateTask by writer %d (handle %d) = %v, want nil or %v", i, i%2, err, store.ErrConflict)
		}
	}
	if winner < 0 {
		t.Fatalf("UpdateTask by %d writers on two handles: none succeeded, want exactly one", n)
	}
	for h, s := range handles {
		got := mustGet(t, s, "t1")
		if want := fmt.Sprintf(`{"writer":%d}`, winner); got.Version != 2 || got.LastSeq != 2 || !sameJSON(got.Checkpoint, json.RawMessage(want)) {
			t.Errorf(`GetTask("t1") on handle %d = version %d, last seq %d, checkpoint %s, want 2, 2, %s`, h, got.Version, got.LastSeq, showJSON(got.Checkpoint), want)
		}
		if log := mustReadLog(t, s, "t1", 0, 0); len(log) != 2 || log[1].MessageID != messageID(winner) {
			t.Errorf(`ReadLog("t1", 0, 0) on handle %d = %d entries, want 2, the second the winner's %q`, h, len(log), messageID(winner))
		}
	}
}

// Writers on two handles increment a counter kept in the checkpoint, each
// by read, compare-and-set, and a retry on ErrConflict: no increment is
// lost and none is applied twice.
func testNodesCounter(t *testing.T, open Open) {
	handles := []store.Store{open(t), open(t)}
	mustCreate(t, handles[0], bareTask("counter"), nil)
	const writers, each = 6, 15
	var wg sync.WaitGroup
	for i := range writers {
		s := handles[i%2]
		wg.Go(func() {
			for range each {
				for {
					cur, err := s.GetTask(ctx(t), "counter")
					if err != nil {
						t.Errorf(`GetTask("counter") = %v, want nil`, err)
						return
					}
					var c struct{ N int }
					if cur.Checkpoint != nil {
						if err := json.Unmarshal(cur.Checkpoint, &c); err != nil {
							t.Errorf("checkpoint %s does not decode: %v", cur.Checkpoint, err)
							return
						}
					}
					c.N++
					next := *cur
					next.Checkpoint = json.RawMessage(fmt.Sprintf(`{"N":%d}`, c.N))
					_, err = s.UpdateTask(ctx(t), &next, []store.LogEntry{entry(store.KindStatus, "", false, base)})
					if errors.Is(err, store.ErrConflict) {
						continue
					}
					if err != nil {
						t.Errorf(`UpdateTask("counter") = %v, want nil or %v`, err, store.ErrConflict)
						return
					}
					break
				}
			}
		})
	}
	wg.Wait()
	for h, s := range handles {
		got := mustGet(t, s, "counter")
		want := fmt.Sprintf(`{"N":%d}`, writers*each)
		if !sameJSON(got.Checkpoint, json.RawMessage(want)) || got.Version != writers*each+1 || got.LastSeq != writers*each {
			t.Errorf(`GetTask("counter") on handle %d = checkpoint %s, version %d, last seq %d; want %s, %d, %d (no lost update)`,
				h, showJSON(got.Checkpoint), got.Version, got.LastSeq, want, writers*each+1, writers*each)
		}
	}
}

// A driver whose writes other processes can see (store.Notifier) tells
// every handle of every write that changed a task, its own included.
func testNodesNotify(t *testing.T, open Open) {
	a, b := open(t), open(t)
	n, ok := a.(store.Notifier)
	if !ok {
		t.Skipf("%T does not implement store.Notifier", a)
	}
	heard := Listen(t, n)
	waitListening(t, b, heard)

	mustCreate(t, b, runnableTask("t1"), nil)
	expectHeard(t, heard, "t1", "CreateTask on the other handle")
	claimed := mustClaim(t, b, claim("node-b", base, 10))
	if len(claimed) != 1 || claimed[0].ID != "t1" {
		t.Fatalf("ClaimRunnable() = %v, want [t1]", ids(claimed))
	}
	expectHeard(t, heard, "t1", "ClaimRunnable on the other handle")
	mustUpdate(t, b, claimed[0], entries("m", 1))
	expectHeard(t, heard, "t1", "UpdateTask on the other handle")
	mustCreate(t, a, bareTask("t2"), nil)
	expectHeard(t, heard, "t2", "CreateTask on the listening handle itself")
}

// Listen runs n.Listen until the test ends and returns the task IDs it
// reports. The test fails if Listen does not return nil soon after its
// context ends. Drivers' own notification tests use it too.
func Listen(t *testing.T, n store.Notifier) <-chan string {
	t.Helper()
	heard := make(chan string, 1024)
	lctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- n.Listen(lctx, func(id string) {
			select {
			case heard <- id:
			case <-lctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Listen() after its context ended = %v, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Listen() still runs 10s after its context ended")
		}
	})
	return heard
}

// waitListening returns once the listener hears a write made on w: it
// writes a probe task every 100ms (a notification sent before the listener
// was connected is lost) until the listener reports one of them.
func waitListening(t *testing.T, w store.Store, heard <-chan string) {
	t.Helper()
	deadline := time.After(15 * time.Second)
	probes := map[string]bool{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		id := fmt.Sprintf("probe-%d", len(probes)+1)
		probes[id] = true
		mustCreate(t, w, bareTask(id), nil)
		for waiting := true; waiting; {
			select {
			case got := <-heard:
				if probes[got] {
					return
				}
			case <-tick.C:
				waiting = false
			case <-deadline:
				t.Fatalf("the listener heard none of %d probe writes within 15s: it does not listen", len(probes))
			}
		}
	}
}

// expectHeard waits for the listener to report id, skipping other IDs.
func expectHeard(t *testing.T, heard <-chan string, id, after string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-heard:
			if got == id {
				return
			}
		case <-deadline:
			t.Fatalf("no notification for %s within 10s of %s", id, after)
		}
	}
}

// testNodesTotals: writers on three handles at once create tasks, move
// them between states (racing one another on the same tasks, with and
// without a task lock) and delete the finished ones; then every listing's
// TotalSize is that of the tasks it lists (CheckTotals), as it is for
// a driver that keeps counts beside the tasks.
func testNodesTotals(t *testing.T, open Open) {
	handles := []store.Store{open(t), open(t), open(t)}
	const tasks, writers, steps = 12, 6, 40
	var created []string
	for i := range tasks {
		tk := bareTask(fmt.Sprintf("t%02d", i))
		tk.Agent = []string{"expense", "script"}[i%2]
		mustCreate(t, handles[i%3], tk, nil)
		created = append(created, tk.ID)
	}
	states := a2aStates()
	// transition moves task id to state (now and then the state it is in),
	// under the task's lock if locked and s has them.
	transition := func(s store.Store, id string, state a2a.TaskState, locked bool) error {
		c := ctx(t)
		if l, ok := s.(store.Locker); ok && locked {
			lock := l.LockTask(id)
			defer lock.Unlock()
			c = store.WithLock(c, lock)
		}
		loaded, err := s.LoadTask(c, id, store.LoadParams{})
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted
		}
		if err != nil {
			return fmt.Errorf("LoadTask(%q) = %v, want nil", id, err)
		}
		next := *loaded.Task
		next.State = state
		if _, err := s.UpdateTask(c, &next, nil); err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("UpdateTask(%q) = %v, want nil, %v or %v", id, err, store.ErrConflict, store.ErrNotFound)
		}
		return nil
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex // guards created
	)
	for w := range writers {
		s := handles[w%3]
		wg.Go(func() {
			<-start
			for i := range steps {
				n := w*steps + i
				switch {
				case n%13 == 0:
					tk := bareTask(fmt.Sprintf("new-%d", n))
					tk.State = states[n%len(states)]
					if _, err := s.CreateTask(ctx(t), tk, nil); err != nil {
						t.Errorf("CreateTask(%q) = %v, want nil", tk.ID, err)
						return
					}
					mu.Lock()
					created = append(created, tk.ID)
					mu.Unlock()
				case n%17 == 0:
					if _, err := s.DeleteFinished(ctx(t), time.Now().Add(time.Hour), 2); err != nil {
						t.Errorf("DeleteFinished = %v, want nil", err)
						return
					}
				default:
					if err := transition(s, fmt.Sprintf("t%02d", (n*7)%tasks), states[(n/3)%len(states)], n%2 == 0); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	close(start)
	wg.Wait()
	var stored []*store.Task
	for _, id := range created {
		tk, err := handles[0].GetTask(ctx(t), id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("GetTask(%q) = %v, want nil", id, err)
		}
		stored = append(stored, tk)
	}
	for _, s := range handles {
		CheckTotals(t, s, stored)
	}
}
