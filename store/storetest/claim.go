package storetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// claimCases cover ClaimRunnable and ExtendLease.
var claimCases = []testCase{
	{"ClaimRunnable/ClaimsOnlyRunnableUnleasedOrLapsed", testClaimSelects},
	{"ClaimRunnable/SetsLeaseAndIncrementsVersion", testClaimSetsLease},
	{"ClaimRunnable/RespectsLimit", testClaimLimit},
	{"ClaimRunnable/LiveLeaseIsNotClaimed", testClaimLiveLease},
	{"ClaimRunnable/LapsedLeaseIsClaimedByAnotherOwner", testClaimLapsed},
	{"ClaimRunnable/FencesThePreviousHolder", testClaimFences},
	{"ClaimRunnable/ConcurrentClaimersNeverShareATask", testClaimConcurrent},
	{"ClaimRunnable/NothingRunnable", testClaimNothing},
	{"ClaimRunnable/OwnerlessDueTimeIsARetry", testClaimOwnerlessDue},
	{"ExtendLease/HolderExtendsWithoutVersionChange", testExtendHolder},
	{"ExtendLease/ExtendedLeaseIsNotClaimed", testExtendKeeps},
	{"ExtendLease/WrongOwnerIsErrConflict", testExtendWrongOwner},
	{"ExtendLease/StaleVersionIsErrConflict", testExtendStale},
	{"ExtendLease/AfterTakeoverIsErrConflict", testExtendTakeover},
	{"ExtendLease/UnknownIDIsErrNotFound", testExtendUnknown},
}

const leaseFor = 30 * time.Second

func claim(owner string, now time.Time, limit int) store.ClaimParams {
	return store.ClaimParams{Owner: owner, Now: now, LeaseFor: leaseFor, Limit: limit}
}

func sortedIDs(ts []*store.Task) []string {
	out := ids(ts)
	sort.Strings(out)
	return out
}

// leased returns a runnable task leased to owner until until.
func leased(id, owner string, until time.Time) *store.Task {
	t := runnableTask(id)
	t.LeaseOwner, t.LeaseUntil = owner, until
	return t
}

func testClaimSelects(t *testing.T, s store.Store) {
	now := base
	idle := bareTask("idle") // not runnable, unleased
	idleLapsed := bareTask("idle-lapsed")
	idleLapsed.LeaseOwner, idleLapsed.LeaseUntil = "node-a", now.Add(-time.Minute)
	for _, tk := range []*store.Task{
		runnableTask("fresh"),                                  // runnable, never leased
		leased("lapsed", "node-a", now.Add(-time.Minute)),      // lease lapsed a minute ago
		leased("lapsing", "node-a", now),                       // LeaseUntil == Now counts as lapsed
		leased("live", "node-a", now.Add(time.Millisecond)),    // still held
		leased("live-long", "node-a", now.Add(10*time.Minute)), // still held
		idle, idleLapsed,
	} {
		mustCreate(t, s, tk, nil)
	}
	before := map[string]*store.Task{}
	for _, id := range []string{"live", "live-long", "idle", "idle-lapsed"} {
		before[id] = mustGet(t, s, id)
	}

	got := mustClaim(t, s, claim("node-b", now, 100))
	if g, w := sortedIDs(got), []string{"fresh", "lapsed", "lapsing"}; !slices.Equal(g, w) {
		t.Errorf("ClaimRunnable(now) = %v, want %v", g, w)
	}
	for id, want := range before {
		checkTask(t, fmt.Sprintf("GetTask(%q) after ClaimRunnable", id), mustGet(t, s, id), want)
	}
}

func testClaimSetsLease(t *testing.T, s store.Store) {
	now := base
	mustCreate(t, s, runnableTask("fresh"), nil)
	lapsed := leased("lapsed", "node-a", now.Add(-time.Second))
	lapsed.Checkpoint = []byte(`{"step":2}`)
	mustCreate(t, s, lapsed, entries("m", 2))
	cur := mustGet(t, s, "lapsed")
	cur = mustUpdate(t, s, cur, nil) // version 2
	before := map[string]*store.Task{"fresh": mustGet(t, s, "fresh"), "lapsed": cur}

	got := mustClaim(t, s, claim("node-b", now, 10))
	if g := sortedIDs(got); !slices.Equal(g, []string{"fresh", "lapsed"}) {
		t.Fatalf("ClaimRunnable() = %v, want [fresh lapsed]", g)
	}
	for _, c := range got {
		want := *before[c.ID]
		want.LeaseOwner = "node-b"
		want.LeaseUntil = now.Add(leaseFor)
		want.Version++
		call := fmt.Sprintf("ClaimRunnable() task %q", c.ID)
		checkContent(t, call, c, &want)
		if c.Version != want.Version || c.LastSeq != want.LastSeq || !sameMilli(c.CreatedAt, want.CreatedAt) {
			t.Errorf("%s Version, LastSeq, CreatedAt = %d, %d, %v, want %d, %d, %v", call,
				c.Version, c.LastSeq, c.CreatedAt, want.Version, want.LastSeq, want.CreatedAt)
		}
		got := mustGet(t, s, c.ID)
		checkTask(t, fmt.Sprintf("GetTask(%q) after ClaimRunnable", c.ID), got, c)
	}
}

func testClaimLimit(t *testing.T, s store.Store) {
	for i := range 5 {
		mustCreate(t, s, runnableTask(fmt.Sprintf("t%d", i)), nil)
	}
	seen := map[string]bool{}
	for i, want := range []int{2, 2, 1, 0} {
		got := mustClaim(t, s, claim("node-a", base, 2))
		if len(got) != want {
			t.Errorf("ClaimRunnable(limit 2) call %d = %v, want %d tasks", i+1, ids(got), want)
		}
		for _, c := range got {
			if seen[c.ID] {
				t.Errorf("ClaimRunnable(limit 2) call %d claimed %q again", i+1, c.ID)
			}
			seen[c.ID] = true
		}
	}
	if len(seen) != 5 {
		t.Errorf("ClaimRunnable(limit 2) claimed %d distinct tasks in all, want 5", len(seen))
	}
	mustCreate(t, s, runnableTask("one-more"), nil)
	if got := mustClaim(t, s, claim("node-a", base, 1)); len(got) != 1 || got[0].ID != "one-more" {
		t.Errorf("ClaimRunnable(limit 1) = %v, want [one-more]", ids(got))
	}
}

func testClaimLiveLease(t *testing.T, s store.Store) {
	mustCreate(t, s, runnableTask("t1"), nil)
	first := mustClaim(t, s, claim("node-a", base, 1))
	if len(first) != 1 {
		t.Fatalf("ClaimRunnable(node-a) = %v, want [t1]", ids(first))
	}
	held := mustGet(t, s, "t1")
	for _, at := range []time.Duration{0, time.Second, leaseFor - time.Millisecond} {
		for _, owner := range []string{"node-b", "node-a"} {
			if got := mustClaim(t, s, claim(owner, base.Add(at), 10)); len(got) != 0 {
				t.Errorf("ClaimRunnable(%s, lease+%v) = %v, want none: the lease is live", owner, at, ids(got))
			}
		}
	}
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), held)
}

func testClaimLapsed(t *testing.T, s store.Store) {
	mustCreate(t, s, runnableTask("t1"), nil)
	first := mustClaim(t, s, claim("node-a", base, 1))
	if len(first) != 1 {
		t.Fatalf("ClaimRunnable(node-a) = %v, want [t1]", ids(first))
	}
	later := base.Add(leaseFor) // the lease lapses at LeaseUntil
	second := mustClaim(t, s, claim("node-b", later, 1))
	if len(second) != 1 || second[0].ID != "t1" {
		t.Fatalf("ClaimRunnable(node-b, lease lapsed) = %v, want [t1]", ids(second))
	}
	c := second[0]
	if c.LeaseOwner != "node-b" || !sameMilli(c.LeaseUntil, later.Add(leaseFor)) || c.Version != first[0].Version+1 {
		t.Errorf("ClaimRunnable(node-b) lease = %q until %v version %d, want %q until %v version %d",
			c.LeaseOwner, c.LeaseUntil, c.Version, "node-b", later.Add(leaseFor), first[0].Version+1)
	}
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), c)
}

func testClaimFences(t *testing.T, s store.Store) {
	created := mustCreate(t, s, runnableTask("t1"), nil)
	a := mustClaim(t, s, claim("node-a", base, 1))
	if len(a) != 1 {
		t.Fatalf("ClaimRunnable(node-a) = %v, want [t1]", ids(a))
	}
	// The creator's copy predates the claim.
	_, err := s.UpdateTask(ctx(t), changed(created), entries("x", 1))
	wantErr(t, `UpdateTask("t1", pre-claim version)`, err, store.ErrConflict)

	b := mustClaim(t, s, claim("node-b", base.Add(leaseFor), 1))
	if len(b) != 1 {
		t.Fatalf("ClaimRunnable(node-b, lease lapsed) = %v, want [t1]", ids(b))
	}
	// node-a's lease was taken over: its writes lose, node-b's win.
	_, err = s.UpdateTask(ctx(t), changed(a[0]), entries("a", 1))
	wantErr(t, `UpdateTask("t1", node-a's version)`, err, store.ErrConflict)
	next := mustUpdate(t, s, changed(b[0]), entries("b", 1))
	if next.Version != b[0].Version+1 {
		t.Errorf(`UpdateTask("t1", node-b's version) Version = %d, want %d`, next.Version, b[0].Version+1)
	}
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), withSeq(1, entries("b", 1)...))
}

func testClaimConcurrent(t *testing.T, s store.Store) {
	const tasks, claimers, batch = 100, 8, 3
	for i := range tasks {
		mustCreate(t, s, runnableTask(fmt.Sprintf("t%03d", i)), nil)
	}
	var (
		wg     sync.WaitGroup
		start  = make(chan struct{})
		mu     sync.Mutex
		byTask = map[string][]string{} // task -> owners that got it
		errs   = make([]error, claimers)
	)
	for i := range claimers {
		owner := fmt.Sprintf("node-%d", i)
		wg.Go(func() {
			<-start
			for {
				got, err := s.ClaimRunnable(ctx(t), claim(owner, base, batch))
				if err != nil {
					errs[i] = err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, c := range got {
					byTask[c.ID] = append(byTask[c.ID], owner)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("ClaimRunnable(node-%d) = %v, want nil", i, err)
		}
	}
	if len(byTask) != tasks {
		t.Errorf("%d claimers claimed %d distinct tasks, want all %d", claimers, len(byTask), tasks)
	}
	for id, owners := range byTask {
		if len(owners) != 1 {
			t.Errorf("task %q claimed by %v, want exactly one claimer", id, owners)
			continue
		}
		got := mustGet(t, s, id)
		if got.LeaseOwner != owners[0] || got.Version != 2 {
			t.Errorf("GetTask(%q) LeaseOwner, Version = %q, %d, want %q, 2", id, got.LeaseOwner, got.Version, owners[0])
		}
	}
}

func testClaimNothing(t *testing.T, s store.Store) {
	if got := mustClaim(t, s, claim("node-a", base, 10)); len(got) != 0 {
		t.Errorf("ClaimRunnable(empty store) = %v, want none", ids(got))
	}
	mustCreate(t, s, bareTask("idle"), nil)
	mustCreate(t, s, leased("held", "node-z", base.Add(time.Hour)), nil)
	if got := mustClaim(t, s, claim("node-a", base, 10)); len(got) != 0 {
		t.Errorf("ClaimRunnable(nothing runnable and free) = %v, want none", ids(got))
	}
}

// claimOne creates a runnable task id and claims it for owner at base.
func claimOne(t *testing.T, s store.Store, id, owner string) *store.Task {
	t.Helper()
	mustCreate(t, s, runnableTask(id), nil)
	got := mustClaim(t, s, claim(owner, base, 1))
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("ClaimRunnable(%s) = %v, want [%s]", owner, ids(got), id)
	}
	return got[0]
}

func testExtendHolder(t *testing.T, s store.Store) {
	held := claimOne(t, s, "t1", "node-a")
	until := base.Add(5*time.Minute + 250*time.Millisecond)
	if err := s.ExtendLease(ctx(t), "t1", "node-a", held.Version, until); err != nil {
		t.Fatalf(`ExtendLease("t1", node-a, %d) = %v, want nil`, held.Version, err)
	}
	want := *held
	want.LeaseUntil = until
	got := mustGet(t, s, "t1")
	checkTask(t, `GetTask("t1") after ExtendLease`, got, &want)

	// The holder can keep extending: the version did not move.
	until = until.Add(time.Minute)
	if err := s.ExtendLease(ctx(t), "t1", "node-a", held.Version, until); err != nil {
		t.Errorf(`ExtendLease("t1", node-a, %d) again = %v, want nil`, held.Version, err)
	}
	if got := mustGet(t, s, "t1"); !sameMilli(got.LeaseUntil, until) || got.Version != held.Version {
		t.Errorf(`GetTask("t1") LeaseUntil, Version = %v, %d, want %v, %d`, got.LeaseUntil, got.Version, until, held.Version)
	}
}

func testExtendKeeps(t *testing.T, s store.Store) {
	held := claimOne(t, s, "t1", "node-a")
	until := base.Add(leaseFor + time.Minute)
	if err := s.ExtendLease(ctx(t), "t1", "node-a", held.Version, until); err != nil {
		t.Fatalf(`ExtendLease("t1") = %v, want nil`, err)
	}
	if got := mustClaim(t, s, claim("node-b", base.Add(leaseFor), 1)); len(got) != 0 {
		t.Errorf("ClaimRunnable(at the old lease end) = %v, want none: the lease was extended", ids(got))
	}
	if got := mustClaim(t, s, claim("node-b", until, 1)); len(got) != 1 {
		t.Errorf("ClaimRunnable(at the new lease end) = %v, want [t1]", ids(got))
	}
}

func testExtendWrongOwner(t *testing.T, s store.Store) {
	held := claimOne(t, s, "t1", "node-a")
	err := s.ExtendLease(ctx(t), "t1", "node-b", held.Version, base.Add(time.Hour))
	wantErr(t, `ExtendLease("t1", node-b)`, err, store.ErrConflict)
	err = s.ExtendLease(ctx(t), "t1", "", held.Version, base.Add(time.Hour))
	wantErr(t, `ExtendLease("t1", "")`, err, store.ErrConflict)
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), held)
}

func testExtendStale(t *testing.T, s store.Store) {
	held := claimOne(t, s, "t1", "node-a")
	for _, v := range []int64{held.Version - 1, held.Version + 1} {
		err := s.ExtendLease(ctx(t), "t1", "node-a", v, base.Add(time.Hour))
		wantErr(t, fmt.Sprintf(`ExtendLease("t1", node-a, version %d)`, v), err, store.ErrConflict)
	}
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), held)

	// The holder's own update moves the version: its old one is stale.
	next := mustUpdate(t, s, held, nil)
	err := s.ExtendLease(ctx(t), "t1", "node-a", held.Version, base.Add(time.Hour))
	wantErr(t, fmt.Sprintf(`ExtendLease("t1", node-a, version %d after an update)`, held.Version), err, store.ErrConflict)
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), next)
}

func testExtendTakeover(t *testing.T, s store.Store) {
	a := claimOne(t, s, "t1", "node-a")
	b := mustClaim(t, s, claim("node-b", base.Add(leaseFor), 1))
	if len(b) != 1 {
		t.Fatalf("ClaimRunnable(node-b, lease lapsed) = %v, want [t1]", ids(b))
	}
	err := s.ExtendLease(ctx(t), "t1", "node-a", a.Version, base.Add(time.Hour))
	wantErr(t, `ExtendLease("t1", node-a, after takeover)`, err, store.ErrConflict)
	checkTask(t, `GetTask("t1")`, mustGet(t, s, "t1"), b[0])
}

func testExtendUnknown(t *testing.T, s store.Store) {
	err := s.ExtendLease(ctx(t), "nope", "node-a", 1, base.Add(time.Hour))
	wantErr(t, `ExtendLease("nope")`, err, store.ErrNotFound)
}

// testClaimOwnerlessDue: a runnable task written with no owner and a lease
// end in the future (how the engine schedules a step's retry) is claimed
// by no one before that time, then by any node, with its input intact.
func testClaimOwnerlessDue(t *testing.T, s store.Store) {
	created := mustCreate(t, s, runnableTask("t1"), nil)
	next := *created
	next.LeaseOwner, next.LeaseUntil = "", base.Add(5*time.Second)
	next.Input = []byte(`{"kind":"answer","key":"t1/q-1","attempt":2}`)
	if _, err := s.UpdateTask(context.Background(), &next, nil); err != nil {
		t.Fatalf("UpdateTask(no owner, due in 5s) = %v", err)
	}
	for _, owner := range []string{"node-a", "node-b"} {
		if got := mustClaim(t, s, claim(owner, base.Add(5*time.Second-time.Millisecond), 10)); len(got) != 0 {
			t.Fatalf("ClaimRunnable(%s) before the due time = %v, want none", owner, ids(got))
		}
	}
	got := mustClaim(t, s, claim("node-b", base.Add(5*time.Second), 10))
	if len(got) != 1 || got[0].LeaseOwner != "node-b" || string(got[0].Input) != string(next.Input) {
		t.Fatalf("ClaimRunnable(node-b) at the due time = %v, want t1 leased to node-b with its input", ids(got))
	}
}
