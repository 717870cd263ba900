// Package storetest is the conformance suite of store.Store. Every driver
// runs it from its own tests, giving it a fresh database per subtest and a
// way to open handles on it:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) storetest.Open {
//			path := filepath.Join(t.TempDir(), "askpoint.db")
//			return func(t *testing.T) store.Store { ... Open(path) ... }
//		})
//	}
//
// A new semantic of the interface gets its first test here, so that every
// driver is held to it.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// Open opens a new handle on one database: a store of its own, as another
// process or node of the same deployment would open it (store/sqlite: Open
// of the same file, in the same process, since a second process is refused
// (docs/decisions/0082-sqlite-one-owner.md); store/postgres: a pool of its
// own on the same schema).
// What one handle has written is what every other handle reads.
type Open func(t *testing.T) store.Store

// Run runs the conformance suite against a driver. For each subtest Run
// calls newDatabase once, which must make a fresh, empty database and
// return the Open that opens handles on it. Most cases open one handle;
// the multi-node cases (Nodes/...) open two or more and hold the driver to
// what a deployment of several nodes on one database relies on: claims
// never shared, a late write from a node whose lease was taken over
// refused, one winner of a compare-and-set race, and, for a driver that
// implements store.Notifier, every node hearing every node's writes.
//
// Run closes every handle it opens when the subtest ends (and fails the
// subtest if Close fails), so neither newDatabase nor Open may close it.
// The subtests run in parallel (t.Parallel), each on its own database:
// newDatabase is called from several goroutines at once.
//
// The suite takes every time it passes to the store (claim times, leases,
// log entry times) from fixed values, not from the wall clock; it only
// relies on the store setting CreatedAt and UpdatedAt from its own clock.
func Run(t *testing.T, newDatabase func(t *testing.T) Open) {
	handles := func(t *testing.T) Open {
		open := newDatabase(t)
		return func(t *testing.T) store.Store {
			t.Helper()
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close() = %v, want nil", err)
				}
			})
			return s
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, handles(t)(t))
		})
	}
	for _, c := range slices.Concat(nodeCases, lockNodeCases) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, handles(t))
		})
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s store.Store)
}

// cases is the whole suite, grouped by method.
var cases = slices.Concat(taskCases, loadCases, logCases, scanCases, listCases, claimCases, concurrentCases, timerCases, pushCases, retentionCases, secretCases, lockCases)

// base is the suite's fixed "now" for leases, claims and timers. It is
// years after any test run, so that a time a store sets from its own clock
// (a push configuration due "now") is before it: a claim at base finds it
// due.
var base = time.Date(2031, time.March, 4, 5, 6, 7, 891_234_567, time.UTC)

// newTask returns a task with every column set, none of them to its zero
// value, unleased only if lease is false.
func newTask(id string) *store.Task {
	return &store.Task{
		ID:         id,
		ContextID:  "ctx-" + id,
		Tenant:     "tenant-a",
		Owner:      "alice",
		Agent:      "echo",
		State:      a2a.TaskStateSubmitted,
		Status:     json.RawMessage(`{"state":"TASK_STATE_SUBMITTED","timestamp":"2031-03-04T05:06:07Z"}`),
		Artifacts:  json.RawMessage(`[{"artifactId":"a1","parts":[{"text":"hi"}]}]`),
		Metadata:   json.RawMessage(`{"k":"v","n":1}`),
		Checkpoint: json.RawMessage(`{"step":3,"notes":["x","y"]}`),
		Question:   json.RawMessage(`{"text":"which one?"}`),
		Input:      json.RawMessage(`{"answer":"` + id + `"}`),
		Pause:      json.RawMessage(`{"expiry":"cancel","reminders":["PT1H"],"sent":0}`),
		WakeAt:     base.Add(10*time.Minute + 250*time.Millisecond),
		HoldAt:     base.Add(3*time.Hour + 7*time.Millisecond),
		Runnable:   true,
		LeaseOwner: "node-a",
		LeaseUntil: base.Add(90 * time.Second),
	}
}

// bareTask returns a task with only the identifying columns set: every
// JSON column nil, no timer set, not runnable, unleased.
func bareTask(id string) *store.Task {
	return &store.Task{
		ID:        id,
		ContextID: "ctx-" + id,
		Tenant:    "tenant-a",
		Owner:     "alice",
		Agent:     "echo",
		State:     a2a.TaskStateWorking,
	}
}

// runnableTask returns a runnable task, unleased.
func runnableTask(id string) *store.Task {
	t := bareTask(id)
	t.Runnable = true
	return t
}

// entry returns a log entry whose body names it.
func entry(kind store.Kind, messageID string, inHistory bool, at time.Time) store.LogEntry {
	return store.LogEntry{
		Kind:      kind,
		MessageID: messageID,
		InHistory: inHistory,
		Body:      json.RawMessage(fmt.Sprintf(`{"messageId":%q,"kind":%q}`, messageID, kind)),
		At:        at,
	}
}

// entries returns n history message entries m1..mn (prefixed by prefix),
// one second apart from base.
func entries(prefix string, n int) []store.LogEntry {
	out := make([]store.LogEntry, n)
	for i := range out {
		out[i] = entry(store.KindMessage, fmt.Sprintf("%s%d", prefix, i+1), true, base.Add(time.Duration(i)*time.Second))
	}
	return out
}

func mustCreate(t *testing.T, s store.Store, task *store.Task, es []store.LogEntry) *store.Task {
	t.Helper()
	got, err := s.CreateTask(t.Context(), task, es)
	if err != nil {
		t.Fatalf("CreateTask(%q) = %v, want nil", task.ID, err)
	}
	return got
}

func mustGet(t *testing.T, s store.Store, id string) *store.Task {
	t.Helper()
	got, err := s.GetTask(t.Context(), id)
	if err != nil {
		t.Fatalf("GetTask(%q) = %v, want nil", id, err)
	}
	return got
}

func mustUpdate(t *testing.T, s store.Store, task *store.Task, es []store.LogEntry) *store.Task {
	t.Helper()
	got, err := s.UpdateTask(t.Context(), task, es)
	if err != nil {
		t.Fatalf("UpdateTask(%q, version %d) = %v, want nil", task.ID, task.Version, err)
	}
	return got
}

func mustReadLog(t *testing.T, s store.Store, id string, after int64, limit int) []store.LogEntry {
	t.Helper()
	got, err := s.ReadLog(t.Context(), id, after, limit)
	if err != nil {
		t.Fatalf("ReadLog(%q, %d, %d) = %v, want nil", id, after, limit, err)
	}
	return got
}

func mustHistory(t *testing.T, s store.Store, id string, last int) []store.LogEntry {
	t.Helper()
	got, err := s.History(t.Context(), id, last)
	if err != nil {
		t.Fatalf("History(%q, %d) = %v, want nil", id, last, err)
	}
	return got
}

func mustClaim(t *testing.T, s store.Store, p store.ClaimParams) []*store.Task {
	t.Helper()
	got, err := s.ClaimRunnable(t.Context(), p)
	if err != nil {
		t.Fatalf("ClaimRunnable(%+v) = %v, want nil", p, err)
	}
	return got
}

func mustList(t *testing.T, s store.Store, p store.ListParams) *store.ListResult {
	t.Helper()
	got, err := s.ListTasks(t.Context(), p)
	if err != nil {
		t.Fatalf("ListTasks(%+v) = %v, want nil", p, err)
	}
	return got
}

// sameMilli reports whether a and b are the same instant to the millisecond
// (drivers may keep more precision, none may keep less).
func sameMilli(a, b time.Time) bool {
	return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}

// sameJSON reports whether a and b hold the same JSON: both nil, or equal
// bytes, or equal values (a driver may normalise the text, as jsonb does).
// An empty non-nil value is not nil: the store must return nil for a
// column it holds no JSON in.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func showJSON(j json.RawMessage) string {
	if j == nil {
		return "nil"
	}
	return string(j)
}

// contentDiff lists the columns in which got differs from want, leaving out
// Version, LastSeq, CreatedAt and UpdatedAt, which the store sets.
func contentDiff(got, want *store.Task) []string {
	var d []string
	str := func(name, g, w string) {
		if g != w {
			d = append(d, fmt.Sprintf("%s = %q, want %q", name, g, w))
		}
	}
	js := func(name string, g, w json.RawMessage) {
		if !sameJSON(g, w) {
			d = append(d, fmt.Sprintf("%s = %s, want %s", name, showJSON(g), showJSON(w)))
		}
	}
	str("ID", got.ID, want.ID)
	str("ContextID", got.ContextID, want.ContextID)
	str("Tenant", got.Tenant, want.Tenant)
	str("Owner", got.Owner, want.Owner)
	str("Agent", got.Agent, want.Agent)
	str("State", string(got.State), string(want.State))
	js("Status", got.Status, want.Status)
	js("Artifacts", got.Artifacts, want.Artifacts)
	js("Metadata", got.Metadata, want.Metadata)
	js("Checkpoint", got.Checkpoint, want.Checkpoint)
	js("Question", got.Question, want.Question)
	js("Input", got.Input, want.Input)
	js("Pause", got.Pause, want.Pause)
	tm := func(name string, g, w time.Time) {
		if !sameMilli(g, w) || g.IsZero() != w.IsZero() {
			d = append(d, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	tm("WakeAt", got.WakeAt, want.WakeAt)
	tm("HoldAt", got.HoldAt, want.HoldAt)
	if got.Runnable != want.Runnable {
		d = append(d, fmt.Sprintf("Runnable = %v, want %v", got.Runnable, want.Runnable))
	}
	str("LeaseOwner", got.LeaseOwner, want.LeaseOwner)
	if !sameMilli(got.LeaseUntil, want.LeaseUntil) || got.LeaseUntil.IsZero() != want.LeaseUntil.IsZero() {
		d = append(d, fmt.Sprintf("LeaseUntil = %v, want %v", got.LeaseUntil, want.LeaseUntil))
	}
	return d
}

// taskDiff lists every column in which got differs from want.
func taskDiff(got, want *store.Task) []string {
	d := contentDiff(got, want)
	if got.Version != want.Version {
		d = append(d, fmt.Sprintf("Version = %d, want %d", got.Version, want.Version))
	}
	if got.LastSeq != want.LastSeq {
		d = append(d, fmt.Sprintf("LastSeq = %d, want %d", got.LastSeq, want.LastSeq))
	}
	if !sameMilli(got.CreatedAt, want.CreatedAt) {
		d = append(d, fmt.Sprintf("CreatedAt = %v, want %v", got.CreatedAt, want.CreatedAt))
	}
	if !sameMilli(got.UpdatedAt, want.UpdatedAt) {
		d = append(d, fmt.Sprintf("UpdatedAt = %v, want %v", got.UpdatedAt, want.UpdatedAt))
	}
	return d
}

func checkContent(t *testing.T, call string, got, want *store.Task) {
	t.Helper()
	if d := contentDiff(got, want); len(d) > 0 {
		t.Errorf("%s: task differs:\n\t%s", call, strings.Join(d, "\n\t"))
	}
}

func checkTask(t *testing.T, call string, got, want *store.Task) {
	t.Helper()
	if d := taskDiff(got, want); len(d) > 0 {
		t.Errorf("%s: task differs:\n\t%s", call, strings.Join(d, "\n\t"))
	}
}

// entryDiff lists the fields in which got differs from want.
func entryDiff(got, want store.LogEntry) []string {
	var d []string
	if got.Seq != want.Seq {
		d = append(d, fmt.Sprintf("Seq = %d, want %d", got.Seq, want.Seq))
	}
	if got.Kind != want.Kind {
		d = append(d, fmt.Sprintf("Kind = %q, want %q", got.Kind, want.Kind))
	}
	if got.MessageID != want.MessageID {
		d = append(d, fmt.Sprintf("MessageID = %q, want %q", got.MessageID, want.MessageID))
	}
	if got.InHistory != want.InHistory {
		d = append(d, fmt.Sprintf("InHistory = %v, want %v", got.InHistory, want.InHistory))
	}
	if got.Notify != want.Notify {
		d = append(d, fmt.Sprintf("Notify = %v, want %v", got.Notify, want.Notify))
	}
	if !sameJSON(got.Body, want.Body) {
		d = append(d, fmt.Sprintf("Body = %s, want %s", showJSON(got.Body), showJSON(want.Body)))
	}
	if !sameMilli(got.At, want.At) {
		d = append(d, fmt.Sprintf("At = %v, want %v", got.At, want.At))
	}
	return d
}

// withSeq returns es numbered from first on, as the store should number
// them.
func withSeq(first int64, es ...store.LogEntry) []store.LogEntry {
	out := slices.Clone(es)
	for i := range out {
		out[i].Seq = first + int64(i)
	}
	return out
}

func checkEntries(t *testing.T, call string, got, want []store.LogEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %d entries (seqs %v), want %d (seqs %v)", call, len(got), seqs(got), len(want), seqs(want))
		return
	}
	for i := range got {
		if d := entryDiff(got[i], want[i]); len(d) > 0 {
			t.Errorf("%s: entry %d differs:\n\t%s", call, i, strings.Join(d, "\n\t"))
		}
	}
}

func seqs(es []store.LogEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Seq
	}
	return out
}

func ids(ts []*store.Task) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.ID
	}
	return out
}

// wantErr fails t unless err is target.
func wantErr(t *testing.T, call string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s = %v, want %v", call, err, target)
	}
}

// ctx is a shorthand for the test's context.
func ctx(t *testing.T) context.Context { return t.Context() }
