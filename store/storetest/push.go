package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// pushCases cover the push outbox: Notify entries, push configurations,
// their target tracking, claims and settles.
//
// A configuration the store makes due "now" is due by its own clock, which
// is years before base: the cases claim at base (or later) to find it.
var pushCases = []testCase{
	{"Notify/RoundTripsThroughReadLogAndHistory", testNotifyRoundTrip},
	{"PutPushConfig/NewStartsWithStoreSetState", testPutNew},
	{"UpdateTask/PushDueOnlyWhenAConfigurationHasSomethingNew", testUpdatePushDue},
	{"PutPushConfig/NewTargetsNewestNotifyEntryAfterSentSeq", testPutTarget},
	{"PutPushConfig/ExistingGetsNewConfigAndKeepsDeliveryState", testPutReplace},
	{"PutPushConfig/UnknownTaskIsErrNotFoundAndCreatesNothing", testPutUnknownTask},
	{"PutPushConfig/RacingAppendsMissesNoEntry", testPutRacingAppends},
	{"PutPushConfig/RacingCreatesStayWithinLimit", testPutRacingLimit},
	{"GetPushConfig/UnknownIsErrNotFound", testGetPushUnknown},
	{"ListPushConfigs/OldestFirstOwnTaskOnly", testListPush},
	{"DeletePushConfig/DeletesOnlyThatOneThenErrNotFound", testDeletePush},
	{"UpdateTask/NotifyEntryMovesEveryConfigOfTheTask", testAppendMovesTarget},
	{"UpdateTask/OtherEntriesAndLostWritesMoveNoConfig", testAppendWithoutNotify},
	{"UpdateTask/NotifyEntryKeepsALaterDueAt", testAppendKeepsDueAt},
	{"ClaimPushDeliveries/ClaimsOnlyDueAndLeasesThem", testClaimPushSelects},
	{"ClaimPushDeliveries/ClaimedIsNotClaimedAgainUntilTheLeaseLapses", testClaimPushLease},
	{"ClaimPushDeliveries/RespectsLimit", testClaimPushLimit},
	{"ClaimPushDeliveries/ConcurrentClaimersNeverShareAConfig", testClaimPushConcurrent},
	{"SettlePush/NothingMoreToDeliverClearsDueAt", testSettleDone},
	{"SettlePush/RetryTakesTheCallersDueAt", testSettleRetry},
	{"SettlePush/PartlyDeliveredIsDueNow", testSettlePartly},
	{"SettlePush/EntriesAppendedDuringTheAttemptAreDueNow", testSettleAppended},
	{"SettlePush/StaleVersionIsErrConflictAndChangesNothing", testSettleStale},
	{"SettlePush/DeletedIsErrNotFound", testSettleDeleted},
	{"SettlePush/RacingAppendsLoseNoEntry", testSettleRacingAppends},
}

// pushConfig returns a configuration whose Config names it, delivering
// after sent.
func pushConfig(taskID, id string, sent int64) *store.PushConfig {
	return &store.PushConfig{
		TaskID:  taskID,
		ID:      id,
		Config:  json.RawMessage(fmt.Sprintf(`{"url":"https://hooks.example/%s/%s","token":"tok-%s"}`, taskID, id, id)),
		SentSeq: sent,
	}
}

// notified returns n status entries with Notify set, named prefix1..prefixn.
func notified(prefix string, n int) []store.LogEntry {
	out := make([]store.LogEntry, n)
	for i := range out {
		out[i] = entry(store.KindStatus, fmt.Sprintf("%s%d", prefix, i+1), false, base.Add(time.Duration(i)*time.Second))
		out[i].Notify = true
	}
	return out
}

// plain returns n status entries without Notify.
func plain(prefix string, n int) []store.LogEntry {
	out := make([]store.LogEntry, n)
	for i := range out {
		out[i] = entry(store.KindStatus, fmt.Sprintf("%s%d", prefix, i+1), false, base.Add(time.Duration(i)*time.Second))
	}
	return out
}

// outcome returns the claimed configuration c as its deliverer settles
// it: delivered (or given up on) up to sent, after attempts failures,
// due again at retry (zero: no retry). A claimed configuration's DueAt is
// its lease's end; settled as it is, that would be a retry then.
func outcome(c *store.PushConfig, sent int64, attempts int, retry time.Time) *store.PushConfig {
	out := *c
	out.SentSeq, out.Attempts, out.DueAt = sent, attempts, retry
	return &out
}

func claimPush(now time.Time, limit int) store.ClaimParams {
	return store.ClaimParams{Owner: "pusher", Now: now, LeaseFor: leaseFor, Limit: limit}
}

func mustPut(t *testing.T, s store.Store, c *store.PushConfig) *store.PushConfig {
	t.Helper()
	got, err := s.PutPushConfig(ctx(t), c)
	if err != nil {
		t.Fatalf("PutPushConfig(%q, %q) = %v, want nil", c.TaskID, c.ID, err)
	}
	return got
}

func mustGetPush(t *testing.T, s store.Store, taskID, id string) *store.PushConfig {
	t.Helper()
	got, err := s.GetPushConfig(ctx(t), taskID, id)
	if err != nil {
		t.Fatalf("GetPushConfig(%q, %q) = %v, want nil", taskID, id, err)
	}
	return got
}

func mustListPush(t *testing.T, s store.Store, taskID string) []*store.PushConfig {
	t.Helper()
	got, err := s.ListPushConfigs(ctx(t), taskID)
	if err != nil {
		t.Fatalf("ListPushConfigs(%q) = %v, want nil", taskID, err)
	}
	return got
}

func mustClaimPush(t *testing.T, s store.Store, p store.ClaimParams) []*store.PushConfig {
	t.Helper()
	got, err := s.ClaimPushDeliveries(ctx(t), p)
	if err != nil {
		t.Fatalf("ClaimPushDeliveries(%+v) = %v, want nil", p, err)
	}
	return got
}

func mustSettle(t *testing.T, s store.Store, c *store.PushConfig) *store.PushConfig {
	t.Helper()
	got, err := s.SettlePush(ctx(t), c)
	if err != nil {
		t.Fatalf("SettlePush(%q, %q, version %d) = %v, want nil", c.TaskID, c.ID, c.Version, err)
	}
	return got
}

// claimOnly claims at now and fails t unless exactly the configuration
// (taskID, id) comes back.
func claimOnly(t *testing.T, s store.Store, now time.Time, taskID, id string) *store.PushConfig {
	t.Helper()
	got := mustClaimPush(t, s, claimPush(now, 10))
	if len(got) != 1 || got[0].TaskID != taskID || got[0].ID != id {
		t.Fatalf("ClaimPushDeliveries(%v) = %v, want [%s/%s]", now, pushKeys(got), taskID, id)
	}
	return got[0]
}

func pushKey(c *store.PushConfig) string { return c.TaskID + "/" + c.ID }

func pushKeys(cs []*store.PushConfig) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = pushKey(c)
	}
	return out
}

func sortedPushKeys(cs []*store.PushConfig) []string {
	out := pushKeys(cs)
	slices.Sort(out)
	return out
}

// pushDiff lists the fields in which got differs from want.
func pushDiff(got, want *store.PushConfig) []string {
	var d []string
	if got.TaskID != want.TaskID || got.ID != want.ID {
		d = append(d, fmt.Sprintf("TaskID, ID = %q, %q, want %q, %q", got.TaskID, got.ID, want.TaskID, want.ID))
	}
	if !sameJSON(got.Config, want.Config) {
		d = append(d, fmt.Sprintf("Config = %s, want %s", showJSON(got.Config), showJSON(want.Config)))
	}
	if !sameMilli(got.CreatedAt, want.CreatedAt) {
		d = append(d, fmt.Sprintf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt))
	}
	if got.SentSeq != want.SentSeq {
		d = append(d, fmt.Sprintf("SentSeq = %d, want %d", got.SentSeq, want.SentSeq))
	}
	if got.TargetSeq != want.TargetSeq {
		d = append(d, fmt.Sprintf("TargetSeq = %d, want %d", got.TargetSeq, want.TargetSeq))
	}
	if got.Attempts != want.Attempts {
		d = append(d, fmt.Sprintf("Attempts = %d, want %d", got.Attempts, want.Attempts))
	}
	if !sameMilli(got.DueAt, want.DueAt) || got.DueAt.IsZero() != want.DueAt.IsZero() {
		d = append(d, fmt.Sprintf("DueAt = %v, want %v", got.DueAt, want.DueAt))
	}
	if got.Version != want.Version {
		d = append(d, fmt.Sprintf("Version = %d, want %d", got.Version, want.Version))
	}
	return d
}

func checkPush(t *testing.T, call string, got, want *store.PushConfig) {
	t.Helper()
	if d := pushDiff(got, want); len(d) > 0 {
		t.Errorf("%s: push config differs:\n\t%s", call, strings.Join(d, "\n\t"))
	}
}

// clockSkew is how far the store's clock may be from the test's: "now"
// in the store is the store's own clock (the database server's, for a
// networked store), as for CreatedAt.
const clockSkew = time.Minute

// checkNow fails t unless at is a time the store took from its own clock
// between before and after (give or take clockSkew): nothing else the
// suite passes in is within years of it.
func checkNow(t *testing.T, call string, at, before, after time.Time) {
	t.Helper()
	if at.IsZero() || at.Before(before.Add(-clockSkew)) || at.After(after.Add(clockSkew)) {
		t.Errorf("%s = %v, want now (between %v and %v, give or take %v)", call, at, before, after, clockSkew)
	}
}

func testNotifyRoundTrip(t *testing.T, s store.Store) {
	created := []store.LogEntry{
		entry(store.KindMessage, "req", true, base),
		entry(store.KindStatus, "working", true, base.Add(time.Second)),
		entry(store.KindArtifact, "", false, base.Add(2*time.Second)),
	}
	created[1].Notify = true
	created[2].Notify = true
	appended := []store.LogEntry{
		entry(store.KindStatus, "", false, base.Add(3*time.Second)),
		entry(store.KindReminder, "", false, base.Add(4*time.Second)),
		entry(store.KindMessage, "q", true, base.Add(5*time.Second)),
	}
	appended[1].Notify = true
	cur := mustCreate(t, s, newTask("t1"), created)
	mustUpdate(t, s, cur, appended)
	all := append(withSeq(1, created...), withSeq(4, appended...)...)
	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), all)
	checkEntries(t, `History("t1", 0)`, mustHistory(t, s, "t1", 0), historyOf(append(slices.Clone(created), appended...)))
}

func testPutNew(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), plain("p", 2))
	in := pushConfig("t1", "p1", 0)
	// The store's to set: ignored.
	in.TargetSeq, in.Attempts, in.DueAt, in.Version, in.CreatedAt = 99, 5, base, 9, base
	before := time.Now()
	got := mustPut(t, s, in)
	after := time.Now()
	checkNow(t, `PutPushConfig("t1", "p1") CreatedAt`, got.CreatedAt, before, after)
	want := &store.PushConfig{TaskID: "t1", ID: "p1", Config: in.Config, CreatedAt: got.CreatedAt, Version: 1}
	checkPush(t, `PutPushConfig("t1", "p1")`, got, want)
	checkPush(t, `GetPushConfig("t1", "p1")`, mustGetPush(t, s, "t1", "p1"), want)
	list := mustListPush(t, s, "t1")
	if len(list) != 1 {
		t.Fatalf(`ListPushConfigs("t1") = %v, want [t1/p1]`, pushKeys(list))
	}
	checkPush(t, `ListPushConfigs("t1")[0]`, list[0], want)
}

func testPutTarget(t *testing.T, s store.Store) {
	// t1's log: 1 notify, 2 plain, 3 notify, 4 plain.
	cur := mustCreate(t, s, newTask("t1"), append(notified("a", 1), plain("b", 1)...))
	mustUpdate(t, s, cur, append(notified("c", 1), plain("d", 1)...))
	// Another task's newer notify entries do not count.
	mustCreate(t, s, newTask("t2"), notified("x", 8))
	// t3's newest notify entry came with CreateTask.
	mustCreate(t, s, newTask("t3"), append(plain("y", 1), notified("z", 1)...))

	for _, c := range []struct {
		task      string
		sent      int64
		wantTgt   int64
		wantDueAt bool
	}{
		{"t1", 0, 3, true},
		{"t1", 1, 3, true},
		{"t1", 2, 3, true},
		{"t1", 3, 3, false}, // the newest notify entry is sent already
		{"t1", 4, 4, false}, // nothing after it: TargetSeq is SentSeq
		{"t1", 10, 10, false},
		{"t3", 0, 2, true},
		{"t3", 2, 2, false},
	} {
		id := fmt.Sprintf("sent-%d", c.sent)
		call := fmt.Sprintf("PutPushConfig(%q, SentSeq %d)", c.task, c.sent)
		before := time.Now()
		got := mustPut(t, s, pushConfig(c.task, id, c.sent))
		after := time.Now()
		want := &store.PushConfig{TaskID: c.task, ID: id, Config: pushConfig(c.task, id, 0).Config,
			CreatedAt: got.CreatedAt, SentSeq: c.sent, TargetSeq: c.wantTgt, Version: 1}
		if c.wantDueAt {
			checkNow(t, call+" DueAt", got.DueAt, before, after)
			want.DueAt = got.DueAt
		}
		checkPush(t, call, got, want)
		checkPush(t, fmt.Sprintf("GetPushConfig(%q, %q)", c.task, id), mustGetPush(t, s, c.task, id), want)
	}
}

func testPutReplace(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), notified("n", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	claimed := claimOnly(t, s, base, "t1", "p1")
	settled := mustSettle(t, s, outcome(claimed, 0, 2, base.Add(5*time.Minute)))
	mustUpdate(t, s, cur, notified("m", 1)) // TargetSeq 2
	stored := mustGetPush(t, s, "t1", "p1")
	if stored.TargetSeq != 2 || stored.Version != settled.Version || stored.Attempts != 2 {
		t.Fatalf(`GetPushConfig("t1", "p1") before the replace = %+v, want TargetSeq 2, Attempts 2, Version %d`, stored, settled.Version)
	}

	waitTick(stored.CreatedAt) // a CreatedAt set again would differ
	in := &store.PushConfig{
		TaskID: "t1", ID: "p1", Config: json.RawMessage(`{"url":"https://hooks.example/new","token":"new"}`),
		// Delivery state: ignored for an existing configuration.
		SentSeq: 7, TargetSeq: 8, Attempts: 0, DueAt: base.Add(time.Hour), Version: 1, CreatedAt: base,
	}
	got := mustPut(t, s, in)
	want := *stored
	want.Config = in.Config
	checkPush(t, `PutPushConfig("t1", "p1") again`, got, &want)
	checkPush(t, `GetPushConfig("t1", "p1") after the replace`, mustGetPush(t, s, "t1", "p1"), &want)
	if list := mustListPush(t, s, "t1"); len(list) != 1 {
		t.Errorf(`ListPushConfigs("t1") = %v, want one configuration`, pushKeys(list))
	}
	// The delivery under way still settles: the version did not move.
	if _, err := s.SettlePush(ctx(t), outcome(stored, 2, 0, time.Time{})); err != nil {
		t.Errorf(`SettlePush("t1", "p1", version %d) after the replace = %v, want nil`, stored.Version, err)
	}
}

func testPutUnknownTask(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("n", 1))
	_, err := s.PutPushConfig(ctx(t), pushConfig("nope", "p1", 0))
	wantErr(t, `PutPushConfig("nope", "p1")`, err, store.ErrNotFound)
	_, err = s.GetPushConfig(ctx(t), "nope", "p1")
	wantErr(t, `GetPushConfig("nope", "p1") after a failed put`, err, store.ErrNotFound)
	if got := mustListPush(t, s, "nope"); len(got) != 0 {
		t.Errorf(`ListPushConfigs("nope") = %v, want none`, pushKeys(got))
	}
	if got := mustClaimPush(t, s, claimPush(base, 10)); len(got) != 0 {
		t.Errorf("ClaimPushDeliveries() = %v, want none", pushKeys(got))
	}
}

// testPutRacingLimit creates many configurations of one task at once, each
// capped at the same Limit: exactly Limit are stored, the others get
// ErrLimit, and replacing a stored one is still allowed when the task is
// full (issue 23, finding 5: 40 racing creates stored 25 of a cap of 8).
func testPutRacingLimit(t *testing.T, s store.Store) {
	const creates, limit = 40, 8
	mustCreate(t, s, bareTask("t1"), nil)
	var wg sync.WaitGroup
	var stored, refused atomic.Int32
	start := make(chan struct{})
	for i := range creates {
		wg.Go(func() {
			<-start
			c := pushConfig("t1", fmt.Sprintf("p%02d", i), 0)
			c.Limit = limit
			_, err := s.PutPushConfig(ctx(t), c)
			switch {
			case err == nil:
				stored.Add(1)
			case errors.Is(err, store.ErrLimit):
				refused.Add(1)
			default:
				t.Errorf("PutPushConfig(t1, p%02d) = %v, want nil or ErrLimit", i, err)
			}
		})
	}
	close(start)
	wg.Wait()
	got := mustListPush(t, s, "t1")
	if len(got) != limit || stored.Load() != limit || refused.Load() != creates-limit {
		t.Fatalf("%d racing creates with Limit %d: %d stored (%d listed), %d refused; want %d and %d",
			creates, limit, stored.Load(), len(got), refused.Load(), limit, creates-limit)
	}
	again := pushConfig("t1", got[0].ID, 0)
	again.Config, again.Limit = json.RawMessage(`{"url":"https://hooks.example/replaced"}`), limit
	if _, err := s.PutPushConfig(ctx(t), again); err != nil {
		t.Fatalf("replacing %s of a full task = %v, want nil", got[0].ID, err)
	}
	_, err := s.PutPushConfig(ctx(t), &store.PushConfig{TaskID: "nope", ID: "p1", Config: json.RawMessage(`{}`), Limit: limit})
	wantErr(t, `PutPushConfig("nope", "p1") with a Limit`, err, store.ErrNotFound)
}

// testPutRacingAppends creates configurations while notify entries are
// appended to the task: each must end up with the newest entry as its
// target, however the two interleave.
func testPutRacingAppends(t *testing.T, s store.Store) {
	const appends, configs = 30, 30
	cur := mustCreate(t, s, bareTask("t1"), nil)
	var wg sync.WaitGroup
	start := make(chan struct{})
	wg.Go(func() {
		<-start
		for i := range appends {
			next, err := s.UpdateTask(ctx(t), cur, notified(fmt.Sprintf("e%d-", i), 1))
			if err != nil {
				t.Errorf("UpdateTask #%d = %v, want nil", i, err)
				return
			}
			cur = next
		}
	})
	wg.Go(func() {
		<-start
		for i := range configs {
			if _, err := s.PutPushConfig(ctx(t), pushConfig("t1", fmt.Sprintf("p%02d", i), 0)); err != nil {
				t.Errorf("PutPushConfig #%d = %v, want nil", i, err)
				return
			}
		}
	})
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	list := mustListPush(t, s, "t1")
	if len(list) != configs {
		t.Fatalf(`ListPushConfigs("t1") = %d configurations, want %d`, len(list), configs)
	}
	for _, c := range list {
		if c.TargetSeq != appends || c.DueAt.IsZero() || c.SentSeq != 0 || c.Version != 1 {
			t.Errorf("config %s TargetSeq, DueAt, SentSeq, Version = %d, %v, %d, %d, want %d, set, 0, 1 (an entry appended while it was created was missed)",
				c.ID, c.TargetSeq, c.DueAt, c.SentSeq, c.Version, appends)
		}
	}
}

func testGetPushUnknown(t *testing.T, s store.Store) {
	_, err := s.GetPushConfig(ctx(t), "nope", "p1")
	wantErr(t, `GetPushConfig("nope", "p1")`, err, store.ErrNotFound)
	mustCreate(t, s, newTask("t1"), nil)
	mustCreate(t, s, newTask("t2"), nil)
	mustPut(t, s, pushConfig("t1", "p1", 0))
	_, err = s.GetPushConfig(ctx(t), "t1", "p2")
	wantErr(t, `GetPushConfig("t1", "p2")`, err, store.ErrNotFound)
	_, err = s.GetPushConfig(ctx(t), "t2", "p1")
	wantErr(t, `GetPushConfig("t2", "p1")`, err, store.ErrNotFound)
}

func testListPush(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), nil)
	mustCreate(t, s, newTask("t2"), nil)
	// Created a few milliseconds apart, in an order that is not ID order.
	var created []*store.PushConfig
	for _, id := range []string{"z", "a", "m"} {
		created = append(created, mustPut(t, s, pushConfig("t1", id, 0)))
		waitTick(created[len(created)-1].CreatedAt)
	}
	mustPut(t, s, pushConfig("t2", "b", 0))
	// Perhaps within one millisecond: then ID order.
	created = append(created, mustPut(t, s, pushConfig("t1", "k2", 0)), mustPut(t, s, pushConfig("t1", "k1", 0)))

	list := mustListPush(t, s, "t1")
	if g := pushKeys(list); len(g) != 5 || !slices.Equal(g[:3], []string{"t1/z", "t1/a", "t1/m"}) {
		t.Errorf(`ListPushConfigs("t1") = %v, want [t1/z t1/a t1/m] then t1/k1 and t1/k2`, g)
	}
	if !slices.IsSortedFunc(list, func(a, b *store.PushConfig) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}) {
		for _, c := range list {
			t.Logf("%s created %v", c.ID, c.CreatedAt)
		}
		t.Errorf(`ListPushConfigs("t1") = %v, want ordered by CreatedAt, then ID`, pushKeys(list))
	}
	for _, c := range list {
		checkPush(t, fmt.Sprintf(`ListPushConfigs("t1") %q`, c.ID), c, mustGetPush(t, s, "t1", c.ID))
	}
	for _, c := range created {
		if got := mustGetPush(t, s, "t1", c.ID); !got.CreatedAt.Equal(c.CreatedAt) {
			t.Errorf(`GetPushConfig("t1", %q) CreatedAt = %v, want %v as put`, c.ID, got.CreatedAt, c.CreatedAt)
		}
	}
	if g := pushKeys(mustListPush(t, s, "t2")); !slices.Equal(g, []string{"t2/b"}) {
		t.Errorf(`ListPushConfigs("t2") = %v, want [t2/b]`, g)
	}
	if g := mustListPush(t, s, "t"); len(g) != 0 {
		t.Errorf(`ListPushConfigs("t") = %v, want none`, pushKeys(g))
	}
}

func testDeletePush(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("n", 1))
	mustCreate(t, s, newTask("t2"), notified("n", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	keep := mustPut(t, s, pushConfig("t1", "p2", 0))
	other := mustPut(t, s, pushConfig("t2", "p1", 0))

	if err := s.DeletePushConfig(ctx(t), "t1", "p1"); err != nil {
		t.Fatalf(`DeletePushConfig("t1", "p1") = %v, want nil`, err)
	}
	_, err := s.GetPushConfig(ctx(t), "t1", "p1")
	wantErr(t, `GetPushConfig("t1", "p1") after delete`, err, store.ErrNotFound)
	if g := pushKeys(mustListPush(t, s, "t1")); !slices.Equal(g, []string{"t1/p2"}) {
		t.Errorf(`ListPushConfigs("t1") after delete = %v, want [t1/p2]`, g)
	}
	checkPush(t, `GetPushConfig("t1", "p2")`, mustGetPush(t, s, "t1", "p2"), keep)
	checkPush(t, `GetPushConfig("t2", "p1")`, mustGetPush(t, s, "t2", "p1"), other)
	// A deleted configuration is not delivered.
	if g := sortedPushKeys(mustClaimPush(t, s, claimPush(base, 10))); !slices.Equal(g, []string{"t1/p2", "t2/p1"}) {
		t.Errorf("ClaimPushDeliveries() after delete = %v, want [t1/p2 t2/p1]", g)
	}

	err = s.DeletePushConfig(ctx(t), "t1", "p1")
	wantErr(t, `DeletePushConfig("t1", "p1") again`, err, store.ErrNotFound)
	err = s.DeletePushConfig(ctx(t), "nope", "p1")
	wantErr(t, `DeletePushConfig("nope", "p1")`, err, store.ErrNotFound)

	// Put again: a new configuration.
	again := mustPut(t, s, pushConfig("t1", "p1", 1))
	if again.Version != 1 || again.SentSeq != 1 || again.TargetSeq != 1 || !again.DueAt.IsZero() {
		t.Errorf(`PutPushConfig("t1", "p1", SentSeq 1) after delete = %+v, want a new configuration: Version 1, SentSeq 1, TargetSeq 1, no DueAt`, again)
	}
}

func testAppendMovesTarget(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), plain("a", 1))
	mustCreate(t, s, newTask("t2"), nil)
	p1 := mustPut(t, s, pushConfig("t1", "p1", 0))
	p2 := mustPut(t, s, pushConfig("t1", "p2", 1))
	other := mustPut(t, s, pushConfig("t2", "p1", 0))
	if p1.TargetSeq != 0 || !p1.DueAt.IsZero() {
		t.Fatalf(`PutPushConfig("t1", "p1") TargetSeq, DueAt = %d, %v, want 0, zero`, p1.TargetSeq, p1.DueAt)
	}

	before := time.Now()
	cur = mustUpdate(t, s, cur, []store.LogEntry{plain("b", 1)[0], notified("c", 1)[0], plain("d", 1)[0]}) // seqs 2, 3, 4
	after := time.Now()
	var dueAt time.Time
	for _, c := range []*store.PushConfig{p1, p2} {
		got := mustGetPush(t, s, "t1", c.ID)
		call := fmt.Sprintf(`GetPushConfig("t1", %q) after a notify entry at seq 3`, c.ID)
		checkNow(t, call+" DueAt", got.DueAt, before, after)
		want := *c
		want.TargetSeq, want.DueAt = 3, got.DueAt // the version stays
		checkPush(t, call, got, &want)
		dueAt = got.DueAt
	}
	checkPush(t, `GetPushConfig("t2", "p1")`, mustGetPush(t, s, "t2", "p1"), other)

	// More notify entries: the target moves again, the due time stays
	// (a due time set again would differ).
	waitTick(dueAt)
	mustUpdate(t, s, cur, append(notified("e", 2), plain("f", 1)...)) // seqs 5, 6, 7
	for _, c := range []*store.PushConfig{p1, p2} {
		got := mustGetPush(t, s, "t1", c.ID)
		want := *c
		want.TargetSeq, want.DueAt = 6, dueAt
		checkPush(t, fmt.Sprintf(`GetPushConfig("t1", %q) after notify entries at seqs 5 and 6`, c.ID), got, &want)
	}
	checkPush(t, `GetPushConfig("t2", "p1")`, mustGetPush(t, s, "t2", "p1"), other)
}

func testAppendWithoutNotify(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), notified("a", 2))
	idle := mustPut(t, s, pushConfig("t1", "idle", 2)) // everything sent
	if idle.TargetSeq != 2 || !idle.DueAt.IsZero() {
		t.Fatalf(`PutPushConfig("t1", "idle", SentSeq 2) TargetSeq, DueAt = %d, %v, want 2, zero`, idle.TargetSeq, idle.DueAt)
	}
	stale := *cur
	cur = mustUpdate(t, s, cur, []store.LogEntry{
		entry(store.KindMessage, "m", true, base),
		entry(store.KindStatus, "", false, base),
		entry(store.KindArtifact, "", false, base),
		entry(store.KindReminder, "", false, base),
	})
	cur = mustUpdate(t, s, cur, nil)
	// A write that loses its compare-and-set appends nothing, so moves
	// nothing either.
	_, err := s.UpdateTask(ctx(t), &stale, notified("lost", 2))
	wantErr(t, `UpdateTask("t1", stale version) with notify entries`, err, store.ErrConflict)
	checkPush(t, `GetPushConfig("t1", "idle")`, mustGetPush(t, s, "t1", "idle"), idle)
	if got := mustClaimPush(t, s, claimPush(base, 10)); len(got) != 0 {
		t.Errorf("ClaimPushDeliveries() = %v, want none: nothing to deliver", pushKeys(got))
	}
	if cur.LastSeq != 6 {
		t.Errorf(`UpdateTask("t1") LastSeq = %d, want 6`, cur.LastSeq)
	}
}

func testAppendKeepsDueAt(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), notified("a", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))

	// Claimed: the due time is the lease's end, and stays so.
	claimed := claimOnly(t, s, base, "t1", "p1")
	cur = mustUpdate(t, s, cur, notified("b", 1)) // seq 2
	want := *claimed
	want.TargetSeq = 2
	checkPush(t, `GetPushConfig("t1", "p1") after an append during a claim`, mustGetPush(t, s, "t1", "p1"), &want)

	// In backoff: the retry's due time stays.
	settled := mustSettle(t, s, outcome(claimed, 0, 1, base.Add(10*time.Minute)))
	mustUpdate(t, s, cur, notified("c", 1)) // seq 3
	want = *settled
	want.TargetSeq = 3
	checkPush(t, `GetPushConfig("t1", "p1") after an append during a backoff`, mustGetPush(t, s, "t1", "p1"), &want)
	if got := mustClaimPush(t, s, claimPush(base.Add(10*time.Minute-time.Millisecond), 10)); len(got) != 0 {
		t.Errorf("ClaimPushDeliveries(before the retry) = %v, want none", pushKeys(got))
	}
}

func testClaimPushSelects(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 1))
	mustCreate(t, s, newTask("t2"), notified("a", 2))
	mustPut(t, s, pushConfig("t2", "backoff", 0))
	b := claimOnly(t, s, base, "t2", "backoff")
	mustSettle(t, s, outcome(b, 0, 1, base.Add(time.Hour)))
	mustPut(t, s, pushConfig("t1", "due", 0))
	mustPut(t, s, pushConfig("t2", "due", 1))
	mustPut(t, s, pushConfig("t1", "idle", 1)) // nothing to deliver

	before := map[string]*store.PushConfig{}
	for _, c := range append(mustListPush(t, s, "t1"), mustListPush(t, s, "t2")...) {
		before[pushKey(c)] = c
	}
	got := mustClaimPush(t, s, claimPush(base, 100))
	if g := sortedPushKeys(got); !slices.Equal(g, []string{"t1/due", "t2/due"}) {
		t.Fatalf("ClaimPushDeliveries(base) = %v, want [t1/due t2/due]", g)
	}
	for _, c := range got {
		want := *before[pushKey(c)]
		want.DueAt = base.Add(leaseFor)
		want.Version++
		checkPush(t, fmt.Sprintf("ClaimPushDeliveries() %s", pushKey(c)), c, &want)
		checkPush(t, fmt.Sprintf("GetPushConfig(%q, %q) after the claim", c.TaskID, c.ID), mustGetPush(t, s, c.TaskID, c.ID), &want)
	}
	for _, key := range []string{"t1/idle", "t2/backoff"} {
		task, id, _ := strings.Cut(key, "/")
		checkPush(t, fmt.Sprintf("GetPushConfig(%q, %q)", task, id), mustGetPush(t, s, task, id), before[key])
	}
	if got := mustClaimPush(t, s, claimPush(base, 0)); len(got) != 0 {
		t.Errorf("ClaimPushDeliveries(limit 0) = %v, want none", pushKeys(got))
	}
}

func testClaimPushLease(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	first := claimOnly(t, s, base, "t1", "p1")
	for _, at := range []time.Duration{0, time.Second, leaseFor - time.Millisecond} {
		if got := mustClaimPush(t, s, claimPush(base.Add(at), 10)); len(got) != 0 {
			t.Errorf("ClaimPushDeliveries(lease+%v) = %v, want none: the lease is live", at, pushKeys(got))
		}
	}
	checkPush(t, `GetPushConfig("t1", "p1") while claimed`, mustGetPush(t, s, "t1", "p1"), first)

	later := base.Add(leaseFor) // the lease lapses at its end
	second := claimOnly(t, s, later, "t1", "p1")
	want := *first
	want.DueAt, want.Version = later.Add(leaseFor), first.Version+1
	checkPush(t, "ClaimPushDeliveries(lease lapsed)", second, &want)
}

func testClaimPushLimit(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 1))
	for i := range 5 {
		mustPut(t, s, pushConfig("t1", fmt.Sprintf("p%d", i), 0))
	}
	seen := map[string]bool{}
	for i, want := range []int{2, 2, 1, 0} {
		got := mustClaimPush(t, s, claimPush(base, 2))
		if len(got) != want {
			t.Errorf("ClaimPushDeliveries(limit 2) call %d = %v, want %d configurations", i+1, pushKeys(got), want)
		}
		for _, c := range got {
			if seen[c.ID] {
				t.Errorf("ClaimPushDeliveries(limit 2) call %d claimed %q again", i+1, c.ID)
			}
			seen[c.ID] = true
		}
	}
	if len(seen) != 5 {
		t.Errorf("ClaimPushDeliveries(limit 2) claimed %d distinct configurations in all, want 5", len(seen))
	}
}

func testClaimPushConcurrent(t *testing.T, s store.Store) {
	const tasks, perTask, claimers, batch = 20, 3, 8, 3
	for i := range tasks {
		id := fmt.Sprintf("t%02d", i)
		mustCreate(t, s, bareTask(id), notified("a", 1))
		for j := range perTask {
			mustPut(t, s, pushConfig(id, fmt.Sprintf("p%d", j), 0))
		}
	}
	var (
		wg    sync.WaitGroup
		start = make(chan struct{})
		mu    sync.Mutex
		byKey = map[string][]int{} // config -> claimers that got it
		errs  = make([]error, claimers)
	)
	for i := range claimers {
		wg.Go(func() {
			<-start
			for {
				got, err := s.ClaimPushDeliveries(ctx(t), claimPush(base, batch))
				if err != nil {
					errs[i] = err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, c := range got {
					byKey[pushKey(c)] = append(byKey[pushKey(c)], i)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("ClaimPushDeliveries() by claimer %d = %v, want nil", i, err)
		}
	}
	if len(byKey) != tasks*perTask {
		t.Errorf("%d claimers claimed %d distinct configurations, want all %d", claimers, len(byKey), tasks*perTask)
	}
	for key, who := range byKey {
		if len(who) != 1 {
			t.Errorf("configuration %s claimed by claimers %v, want exactly one", key, who)
			continue
		}
		task, id, _ := strings.Cut(key, "/")
		if got := mustGetPush(t, s, task, id); got.Version != 2 || !sameMilli(got.DueAt, base.Add(leaseFor)) {
			t.Errorf("GetPushConfig(%q, %q) Version, DueAt = %d, %v, want 2, %v", task, id, got.Version, got.DueAt, base.Add(leaseFor))
		}
	}
}

func testSettleDone(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 2))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	claimed := claimOnly(t, s, base, "t1", "p1")
	if claimed.TargetSeq != 2 {
		t.Fatalf("claimed TargetSeq = %d, want 2", claimed.TargetSeq)
	}
	in := outcome(claimed, 2, 0, time.Time{})
	in.TargetSeq = 99 // the store's: ignored
	got := mustSettle(t, s, in)
	want := *claimed
	want.SentSeq, want.Attempts, want.DueAt, want.Version = 2, 0, time.Time{}, claimed.Version+1
	checkPush(t, `SettlePush("t1", "p1", everything sent)`, got, &want)
	checkPush(t, `GetPushConfig("t1", "p1") after the settle`, mustGetPush(t, s, "t1", "p1"), &want)
	if got := mustClaimPush(t, s, claimPush(base.Add(100*365*24*time.Hour), 10)); len(got) != 0 {
		t.Errorf("ClaimPushDeliveries(far future) = %v, want none: nothing to deliver", pushKeys(got))
	}

	// Giving up on an entry is settling past it too; Attempts is written
	// as given.
	mustUpdate(t, s, mustGet(t, s, "t1"), notified("b", 1)) // seq 3
	again := claimOnly(t, s, base, "t1", "p1")
	got = mustSettle(t, s, outcome(again, 3, 4, time.Time{}))
	want = *again
	want.SentSeq, want.Attempts, want.DueAt, want.Version = 3, 4, time.Time{}, again.Version+1
	checkPush(t, `SettlePush("t1", "p1", gave up on seq 3)`, got, &want)
}

func testSettleRetry(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	claimed := claimOnly(t, s, base, "t1", "p1")
	retryAt := base.Add(2*time.Minute + 345*time.Millisecond)
	got := mustSettle(t, s, outcome(claimed, 0, 1, retryAt))
	want := *claimed
	want.Attempts, want.DueAt, want.Version = 1, retryAt, claimed.Version+1
	checkPush(t, `SettlePush("t1", "p1", retry)`, got, &want)
	checkPush(t, `GetPushConfig("t1", "p1") after the retry settle`, mustGetPush(t, s, "t1", "p1"), &want)
	if got := mustClaimPush(t, s, claimPush(retryAt.Add(-time.Millisecond), 10)); len(got) != 0 {
		t.Errorf("ClaimPushDeliveries(just before the retry) = %v, want none", pushKeys(got))
	}
	second := claimOnly(t, s, retryAt, "t1", "p1")
	if second.Attempts != 1 || second.Version != got.Version+1 {
		t.Errorf("ClaimPushDeliveries(at the retry) Attempts, Version = %d, %d, want 1, %d", second.Attempts, second.Version, got.Version+1)
	}
	// A due time given with nothing more to deliver is still taken.
	if got := mustSettle(t, s, outcome(second, 1, 0, base.Add(time.Hour))); !sameMilli(got.DueAt, base.Add(time.Hour)) {
		t.Errorf("SettlePush(everything sent, DueAt set) DueAt = %v, want %v", got.DueAt, base.Add(time.Hour))
	}
}

func testSettlePartly(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 3))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	claimed := claimOnly(t, s, base, "t1", "p1")
	before := time.Now()
	got := mustSettle(t, s, outcome(claimed, 1, 0, time.Time{}))
	after := time.Now()
	checkNow(t, `SettlePush("t1", "p1", SentSeq 1 of 3) DueAt`, got.DueAt, before, after)
	want := *claimed
	want.SentSeq, want.DueAt, want.Version = 1, got.DueAt, claimed.Version+1
	checkPush(t, `SettlePush("t1", "p1", SentSeq 1 of 3)`, got, &want)
	checkPush(t, `GetPushConfig("t1", "p1")`, mustGetPush(t, s, "t1", "p1"), &want)
	next := claimOnly(t, s, base, "t1", "p1")
	if next.SentSeq != 1 || next.TargetSeq != 3 {
		t.Errorf("ClaimPushDeliveries() after the settle SentSeq, TargetSeq = %d, %d, want 1, 3", next.SentSeq, next.TargetSeq)
	}
}

// testSettleAppended settles what the claim saw while more was appended:
// the configuration stays due.
func testSettleAppended(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t2"), notified("a", 1))
	mustPut(t, s, pushConfig("t2", "p1", 0))
	claimed := claimOnly(t, s, base, "t2", "p1")
	if claimed.TargetSeq != 1 {
		t.Fatalf("claimed TargetSeq = %d, want 1", claimed.TargetSeq)
	}
	mustUpdate(t, s, cur, append(plain("b", 1), notified("c", 1)...)) // seqs 2, 3
	before := time.Now()
	got := mustSettle(t, s, outcome(claimed, claimed.TargetSeq, 0, time.Time{}))
	after := time.Now()
	checkNow(t, `SettlePush("t2", "p1", SentSeq 1, appended 3 meanwhile) DueAt`, got.DueAt, before, after)
	want := *claimed
	want.SentSeq, want.TargetSeq, want.DueAt, want.Version = 1, 3, got.DueAt, claimed.Version+1
	checkPush(t, `SettlePush("t2", "p1", appended meanwhile)`, got, &want)
	checkPush(t, `GetPushConfig("t2", "p1")`, mustGetPush(t, s, "t2", "p1"), &want)
	next := claimOnly(t, s, base, "t2", "p1")
	if next.SentSeq != 1 || next.TargetSeq != 3 {
		t.Errorf("ClaimPushDeliveries() after the settle SentSeq, TargetSeq = %d, %d, want 1, 3", next.SentSeq, next.TargetSeq)
	}
}

func testSettleStale(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	a := claimOnly(t, s, base, "t1", "p1")
	b := claimOnly(t, s, base.Add(leaseFor), "t1", "p1") // a's lease lapsed
	held := mustGetPush(t, s, "t1", "p1")

	_, err := s.SettlePush(ctx(t), outcome(a, 1, 0, time.Time{}))
	wantErr(t, `SettlePush("t1", "p1", the first claim's version)`, err, store.ErrConflict)
	ahead := outcome(b, 1, 0, time.Time{})
	ahead.Version++
	_, err = s.SettlePush(ctx(t), ahead)
	wantErr(t, `SettlePush("t1", "p1", a future version)`, err, store.ErrConflict)
	checkPush(t, `GetPushConfig("t1", "p1") after the conflicts`, mustGetPush(t, s, "t1", "p1"), held)

	in := outcome(b, 1, 0, time.Time{})
	settled := mustSettle(t, s, in)
	if !settled.DueAt.IsZero() || settled.SentSeq != 1 {
		t.Errorf(`SettlePush("t1", "p1") SentSeq, DueAt = %d, %v, want 1, zero`, settled.SentSeq, settled.DueAt)
	}
	_, err = s.SettlePush(ctx(t), in)
	wantErr(t, `SettlePush("t1", "p1") twice`, err, store.ErrConflict)
	checkPush(t, `GetPushConfig("t1", "p1")`, mustGetPush(t, s, "t1", "p1"), settled)
}

func testSettleDeleted(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), notified("a", 1))
	mustPut(t, s, pushConfig("t1", "p1", 0))
	claimed := claimOnly(t, s, base, "t1", "p1")
	if err := s.DeletePushConfig(ctx(t), "t1", "p1"); err != nil {
		t.Fatalf(`DeletePushConfig("t1", "p1") = %v, want nil`, err)
	}
	in := outcome(claimed, 1, 0, time.Time{})
	_, err := s.SettlePush(ctx(t), in)
	wantErr(t, `SettlePush("t1", "p1") after delete`, err, store.ErrNotFound)
	if errors.Is(err, store.ErrConflict) {
		t.Errorf(`SettlePush("t1", "p1") after delete = %v, want not ErrConflict`, err)
	}
	in.TaskID = "nope"
	_, err = s.SettlePush(ctx(t), in)
	wantErr(t, `SettlePush("nope", "p1")`, err, store.ErrNotFound)
	_, err = s.GetPushConfig(ctx(t), "t1", "p1")
	wantErr(t, `GetPushConfig("t1", "p1") after the settle`, err, store.ErrNotFound)
}

// testSettleRacingAppends delivers while notify entries are appended: a
// deliverer claims, "delivers" up to the TargetSeq it claimed and settles,
// again and again. When the appends stop, it must have delivered up to the
// last one: no append may be lost between a claim and its settle.
func testSettleRacingAppends(t *testing.T, s store.Store) {
	const appends = 40
	cur := mustCreate(t, s, bareTask("t1"), nil)
	mustPut(t, s, pushConfig("t1", "p1", 0))
	var (
		wg       sync.WaitGroup
		start    = make(chan struct{})
		appended = make(chan struct{}, 1) // a value: entries were appended since the last receive
		finished = make(chan struct{})    // closed: the appends are over
		delivers atomic.Int64
	)
	wg.Go(func() {
		defer close(finished)
		<-start
		for i := range appends {
			next, err := s.UpdateTask(ctx(t), cur, notified(fmt.Sprintf("e%d-", i), 1))
			if err != nil {
				t.Errorf("UpdateTask #%d = %v, want nil", i, err)
				return
			}
			cur = next
			select {
			case appended <- struct{}{}:
			default: // the claimer has one to take already
			}
		}
	})
	wg.Go(func() {
		<-start
		for {
			var over bool // read before the claim: a claim after the last append follows
			select {
			case <-finished:
				over = true
			default:
			}
			got, err := s.ClaimPushDeliveries(ctx(t), claimPush(base, 10))
			if err != nil {
				t.Errorf("ClaimPushDeliveries() = %v, want nil", err)
				return
			}
			if len(got) == 0 {
				if over {
					return
				}
				select { // nothing due: wait for the next append or the end
				case <-appended:
				case <-finished:
				}
				continue
			}
			for _, c := range got {
				if _, err := s.SettlePush(ctx(t), outcome(c, c.TargetSeq, 0, time.Time{})); err != nil {
					t.Errorf("SettlePush(version %d) = %v, want nil", c.Version, err)
					return
				}
				delivers.Add(1)
			}
		}
	})
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	got := mustGetPush(t, s, "t1", "p1")
	if got.SentSeq != appends || got.TargetSeq != appends || !got.DueAt.IsZero() {
		t.Errorf(`GetPushConfig("t1", "p1") SentSeq, TargetSeq, DueAt = %d, %d, %v after %d deliveries, want %d, %d, zero (an append was lost)`,
			got.SentSeq, got.TargetSeq, got.DueAt, delivers.Load(), appends, appends)
	}
}

func testUpdatePushDue(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), plain("a", 1))
	if cur.PushDue {
		t.Errorf("CreateTask: PushDue = true, want false")
	}
	cur = mustUpdate(t, s, cur, notified("b", 1))
	if cur.PushDue {
		t.Errorf("UpdateTask(notify entry, no configuration): PushDue = true, want false")
	}
	mustPut(t, s, pushConfig("t1", "p1", cur.LastSeq))
	cur = mustUpdate(t, s, cur, plain("c", 1))
	if cur.PushDue {
		t.Errorf("UpdateTask(plain entry, one configuration): PushDue = true, want false")
	}
	cur = mustUpdate(t, s, cur, notified("d", 1))
	if !cur.PushDue {
		t.Errorf("UpdateTask(notify entry, one configuration behind it): PushDue = false, want true")
	}
	cur = mustUpdate(t, s, cur, nil)
	if cur.PushDue {
		t.Errorf("UpdateTask(no entries): PushDue = true, want false")
	}
}
