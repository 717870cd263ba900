package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// timerCases cover the timer columns (Pause, WakeAt, HoldAt), DueTasks and
// NextDue. Every DueTasks and NextDue case runs for both timers.
var timerCases = append([]testCase{
	{"Timers/RoundTripThroughCreateUpdateGetListClaim", testTimersRoundTrip},
	{"Timers/UpdateTaskClearsThem", testTimersCleared},
	{"DueTasks/UnknownTimerOrNonPositiveLimitIsAnError", testDueErrors},
	{"DueTasks/EmptyStoreHasNothingDue", testDueEmpty},
}, perTimerCases()...)

// perTimerCases are the DueTasks and NextDue cases, once for each timer.
func perTimerCases() []testCase {
	var out []testCase
	for _, tm := range timers {
		name := timerName(tm.timer)
		out = append(out,
			testCase{"DueTasks/" + name + "/OnlySetAndDueEarliestFirst", func(t *testing.T, s store.Store) { testDueSelects(t, s, tm) }},
			testCase{"DueTasks/" + name + "/RespectsLimitKeepingTheEarliest", func(t *testing.T, s store.Store) { testDueLimit(t, s, tm) }},
			testCase{"DueTasks/" + name + "/FollowsUpdatesAndIsARead", func(t *testing.T, s store.Store) { testDueFollowsUpdates(t, s, tm) }},
			testCase{"NextDue/" + name + "/EarliestSetTimerOrZero", func(t *testing.T, s store.Store) { testNextDue(t, s, tm) }},
		)
	}
	return out
}

// timer is one timer column: its name for DueTasks and how to set it.
type timer struct {
	timer store.Timer
	set   func(*store.Task, time.Time)
	get   func(*store.Task) time.Time
	other func(*store.Task, time.Time) // sets the other timer
}

var timers = []timer{
	{
		timer: store.TimerWake,
		set:   func(t *store.Task, at time.Time) { t.WakeAt = at },
		get:   func(t *store.Task) time.Time { return t.WakeAt },
		other: func(t *store.Task, at time.Time) { t.HoldAt = at },
	},
	{
		timer: store.TimerHold,
		set:   func(t *store.Task, at time.Time) { t.HoldAt = at },
		get:   func(t *store.Task) time.Time { return t.HoldAt },
		other: func(t *store.Task, at time.Time) { t.WakeAt = at },
	},
}

func timerName(tm store.Timer) string {
	switch tm {
	case store.TimerWake:
		return "Wake"
	case store.TimerHold:
		return "Hold"
	}
	return string(tm)
}

func due(tm store.Timer, now time.Time, limit int) store.DueParams {
	return store.DueParams{Timer: tm, Now: now, Limit: limit}
}

func mustDue(t *testing.T, s store.Store, p store.DueParams) []*store.Task {
	t.Helper()
	got, err := s.DueTasks(ctx(t), p)
	if err != nil {
		t.Fatalf("DueTasks(%+v) = %v, want nil", p, err)
	}
	return got
}

func mustNextDue(t *testing.T, s store.Store, tm store.Timer) time.Time {
	t.Helper()
	got, err := s.NextDue(ctx(t), tm)
	if err != nil {
		t.Fatalf("NextDue(%q) = %v, want nil", tm, err)
	}
	return got
}

// timed returns a bare task with timer tm at at (unset when at is zero).
func timed(id string, tm timer, at time.Time) *store.Task {
	t := bareTask(id)
	tm.set(t, at)
	return t
}

// checkTimers fails t unless task holds want's Pause, WakeAt and HoldAt.
func checkTimers(t *testing.T, call string, task, want *store.Task) {
	t.Helper()
	if !sameJSON(task.Pause, want.Pause) {
		t.Errorf("%s Pause = %s, want %s", call, showJSON(task.Pause), showJSON(want.Pause))
	}
	if !sameMilli(task.WakeAt, want.WakeAt) || task.WakeAt.IsZero() != want.WakeAt.IsZero() {
		t.Errorf("%s WakeAt = %v, want %v", call, task.WakeAt, want.WakeAt)
	}
	if !sameMilli(task.HoldAt, want.HoldAt) || task.HoldAt.IsZero() != want.HoldAt.IsZero() {
		t.Errorf("%s HoldAt = %v, want %v", call, task.HoldAt, want.HoldAt)
	}
}

// findTask returns the task with the ID id in ts, or nil.
func findTask(ts []*store.Task, id string) *store.Task {
	for _, t := range ts {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// testTimersRoundTrip checks that Pause, WakeAt and HoldAt come back from
// every method that returns a task, as created and as updated.
func testTimersRoundTrip(t *testing.T, s store.Store) {
	in := runnableTask("t1")
	in.Pause = json.RawMessage(`{"expiry":"cancel","reminders":["PT1H","PT2H"]}`)
	in.WakeAt = base.Add(-time.Minute + 123*time.Millisecond)
	in.HoldAt = base.Add(-2*time.Minute + 456*time.Millisecond)

	check := func(stage string, want *store.Task) *store.Task {
		t.Helper()
		cur := mustGet(t, s, "t1")
		checkTimers(t, stage+`: GetTask("t1")`, cur, want)
		page := mustList(t, s, store.ListParams{Tenant: "tenant-a", Owner: "alice", PageSize: 10})
		if got := findTask(page.Tasks, "t1"); got == nil {
			t.Errorf("%s: ListTasks() = %v, want t1", stage, ids(page.Tasks))
		} else {
			checkTimers(t, stage+": ListTasks() t1", got, want)
		}
		for _, tm := range timers {
			got := mustDue(t, s, due(tm.timer, base, 10))
			if len(got) != 1 || got[0].ID != "t1" {
				t.Errorf("%s: DueTasks(%s, base) = %v, want [t1]", stage, tm.timer, ids(got))
				continue
			}
			checkTimers(t, fmt.Sprintf("%s: DueTasks(%s) t1", stage, tm.timer), got[0], want)
			checkTask(t, fmt.Sprintf("%s: DueTasks(%s) t1", stage, tm.timer), got[0], cur)
		}
		return cur
	}

	created := mustCreate(t, s, in, nil)
	checkTimers(t, `CreateTask("t1")`, created, in)
	cur := check("after CreateTask", in)

	claimed := mustClaim(t, s, claim("node-a", base, 1))
	if len(claimed) != 1 {
		t.Fatalf("ClaimRunnable() = %v, want [t1]", ids(claimed))
	}
	checkTimers(t, `ClaimRunnable() t1`, claimed[0], in)
	cur = check("after ClaimRunnable", in)

	next := *cur
	next.Pause = json.RawMessage(`{"expiry":"fail","sent":1}`)
	next.WakeAt = base.Add(-30*time.Second + 789*time.Millisecond)
	next.HoldAt = base.Add(-10 * time.Second)
	updated := mustUpdate(t, s, &next, nil)
	checkTimers(t, `UpdateTask("t1")`, updated, &next)
	check("after UpdateTask", &next)
}

func testTimersCleared(t *testing.T, s store.Store) {
	created := mustCreate(t, s, newTask("t1"), nil)
	if created.Pause == nil || created.WakeAt.IsZero() || created.HoldAt.IsZero() {
		t.Fatalf(`CreateTask("t1") Pause, WakeAt, HoldAt = %s, %v, %v, want all set`, showJSON(created.Pause), created.WakeAt, created.HoldAt)
	}
	next := *created
	next.Pause, next.WakeAt, next.HoldAt = nil, time.Time{}, time.Time{}
	updated := mustUpdate(t, s, &next, nil)
	got := mustGet(t, s, "t1")
	for call, task := range map[string]*store.Task{`UpdateTask("t1")`: updated, `GetTask("t1")`: got} {
		if task.Pause != nil || !task.WakeAt.IsZero() || !task.HoldAt.IsZero() {
			t.Errorf("%s Pause, WakeAt, HoldAt = %s, %v, %v, want nil, zero, zero", call, showJSON(task.Pause), task.WakeAt, task.HoldAt)
		}
	}
	far := base.Add(100 * 365 * 24 * time.Hour)
	for _, tm := range timers {
		if got := mustDue(t, s, due(tm.timer, far, 10)); len(got) != 0 {
			t.Errorf("DueTasks(%s, far future) after clearing = %v, want none", tm.timer, ids(got))
		}
		if got := mustNextDue(t, s, tm.timer); !got.IsZero() {
			t.Errorf("NextDue(%s) after clearing = %v, want zero", tm.timer, got)
		}
	}
}

func testDueErrors(t *testing.T, s store.Store) {
	mustCreate(t, s, timed("t1", timers[0], base.Add(-time.Hour)), nil)
	for _, p := range []store.DueParams{
		{Timer: "", Now: base, Limit: 10},
		{Timer: "bogus", Now: base, Limit: 10},
		{Timer: store.TimerWake, Now: base, Limit: 0},
		{Timer: store.TimerWake, Now: base, Limit: -1},
		{Timer: store.TimerHold, Now: base, Limit: 0},
	} {
		if got, err := s.DueTasks(ctx(t), p); err == nil {
			t.Errorf("DueTasks(%+v) = %v, nil, want an error", p, ids(got))
		}
	}
	for _, tm := range []store.Timer{"", "bogus"} {
		if got, err := s.NextDue(ctx(t), tm); err == nil {
			t.Errorf("NextDue(%q) = %v, nil, want an error", tm, got)
		}
	}
}

func testDueEmpty(t *testing.T, s store.Store) {
	for _, tm := range timers {
		if got := mustDue(t, s, due(tm.timer, base, 10)); len(got) != 0 {
			t.Errorf("DueTasks(%s, empty store) = %v, want none", tm.timer, ids(got))
		}
		if got := mustNextDue(t, s, tm.timer); !got.IsZero() {
			t.Errorf("NextDue(%s, empty store) = %v, want zero", tm.timer, got)
		}
	}
}

func testDueSelects(t *testing.T, s store.Store, tm timer) {
	now := base
	for _, c := range []struct {
		id string
		at time.Duration
	}{
		// Created out of order, so that neither ID nor insertion order
		// is the timer order.
		{"b-minute-ago", -time.Minute},
		{"d-now", 0}, // a timer equal to Now is due
		{"a-hour-ago", -time.Hour},
		{"c-second-ago", -time.Second},
		{"e-ms-later", time.Millisecond},
		{"f-hour-later", time.Hour},
	} {
		mustCreate(t, s, timed(c.id, tm, now.Add(c.at)), nil)
	}
	mustCreate(t, s, bareTask("unset"), nil)
	// The other timer due, this one unset or in the future: not due here.
	other := bareTask("other-due")
	tm.other(other, now.Add(-2*time.Hour))
	mustCreate(t, s, other, nil)
	both := timed("other-due-own-later", tm, now.Add(time.Minute))
	tm.other(both, now.Add(-2*time.Hour))
	mustCreate(t, s, both, nil)

	want := []string{"a-hour-ago", "b-minute-ago", "c-second-ago", "d-now"}
	got := mustDue(t, s, due(tm.timer, now, 100))
	if !slices.Equal(ids(got), want) {
		t.Errorf("DueTasks(%s, now) = %v, want %v (earliest first)", tm.timer, ids(got), want)
	}
	for _, task := range got {
		checkTask(t, fmt.Sprintf("DueTasks(%s) task %q", tm.timer, task.ID), task, mustGet(t, s, task.ID))
	}

	if got := mustDue(t, s, due(tm.timer, now.Add(-time.Hour-time.Millisecond), 100)); len(got) != 0 {
		t.Errorf("DueTasks(%s, before every timer) = %v, want none", tm.timer, ids(got))
	}
	later := mustDue(t, s, due(tm.timer, now.Add(time.Hour), 100))
	if want := []string{"a-hour-ago", "b-minute-ago", "c-second-ago", "d-now", "e-ms-later", "other-due-own-later", "f-hour-later"}; !slices.Equal(ids(later), want) {
		t.Errorf("DueTasks(%s, now+1h) = %v, want %v", tm.timer, ids(later), want)
	}
}

func testDueLimit(t *testing.T, s store.Store, tm timer) {
	// IDs in the reverse of timer order.
	for i := range 7 {
		mustCreate(t, s, timed(fmt.Sprintf("t%d", 9-i), tm, base.Add(-time.Duration(7-i)*time.Minute)), nil)
	}
	all := []string{"t9", "t8", "t7", "t6", "t5", "t4", "t3"}
	for _, limit := range []int{1, 2, 6, 7, 8, 100} {
		want := all[:min(limit, len(all))]
		if got := mustDue(t, s, due(tm.timer, base, limit)); !slices.Equal(ids(got), want) {
			t.Errorf("DueTasks(%s, limit %d) = %v, want %v", tm.timer, limit, ids(got), want)
		}
	}
}

func testDueFollowsUpdates(t *testing.T, s store.Store, tm timer) {
	now := base
	cur := mustCreate(t, s, timed("t1", tm, now.Add(time.Hour)), nil)
	mustCreate(t, s, timed("t2", tm, now.Add(-time.Hour)), nil)
	if got := mustDue(t, s, due(tm.timer, now, 10)); !slices.Equal(ids(got), []string{"t2"}) {
		t.Fatalf("DueTasks(%s) = %v, want [t2]", tm.timer, ids(got))
	}

	// Moved into the past: due, and first.
	next := *cur
	tm.set(&next, now.Add(-2*time.Hour))
	cur = mustUpdate(t, s, &next, nil)
	got := mustDue(t, s, due(tm.timer, now, 10))
	if !slices.Equal(ids(got), []string{"t1", "t2"}) {
		t.Errorf("DueTasks(%s) after moving t1's timer back = %v, want [t1 t2]", tm.timer, ids(got))
	}
	// A read: it claims nothing and changes nothing.
	checkTask(t, `GetTask("t1") after DueTasks`, mustGet(t, s, "t1"), cur)
	if again := mustDue(t, s, due(tm.timer, now, 10)); !slices.Equal(ids(again), ids(got)) {
		t.Errorf("DueTasks(%s) again = %v, want %v: it must not consume what it returns", tm.timer, ids(again), ids(got))
	}

	// Moved past Now: no longer due.
	next = *cur
	tm.set(&next, now.Add(time.Millisecond))
	cur = mustUpdate(t, s, &next, nil)
	if got := mustDue(t, s, due(tm.timer, now, 10)); !slices.Equal(ids(got), []string{"t2"}) {
		t.Errorf("DueTasks(%s) after moving t1's timer past now = %v, want [t2]", tm.timer, ids(got))
	}
	if got := mustDue(t, s, due(tm.timer, now.Add(time.Millisecond), 10)); !slices.Equal(ids(got), []string{"t2", "t1"}) {
		t.Errorf("DueTasks(%s, now+1ms) = %v, want [t2 t1]", tm.timer, ids(got))
	}

	// Unset: never due.
	next = *cur
	tm.set(&next, time.Time{})
	mustUpdate(t, s, &next, nil)
	if got := mustDue(t, s, due(tm.timer, now.Add(24*time.Hour), 10)); !slices.Equal(ids(got), []string{"t2"}) {
		t.Errorf("DueTasks(%s) after unsetting t1's timer = %v, want [t2]", tm.timer, ids(got))
	}
}

func testNextDue(t *testing.T, s store.Store, tm timer) {
	mustCreate(t, s, bareTask("unset"), nil)
	if got := mustNextDue(t, s, tm.timer); !got.IsZero() {
		t.Errorf("NextDue(%s) with no timer set = %v, want zero", tm.timer, got)
	}
	// The other timer, earlier than any of this one's, does not count.
	other := bareTask("other")
	tm.other(other, base.Add(-24*time.Hour))
	mustCreate(t, s, other, nil)
	if got := mustNextDue(t, s, tm.timer); !got.IsZero() {
		t.Errorf("NextDue(%s) with only the other timer set = %v, want zero", tm.timer, got)
	}

	earliest := base.Add(-5*time.Minute + 321*time.Millisecond)
	mustCreate(t, s, timed("later", tm, base.Add(time.Hour)), nil)
	first := mustCreate(t, s, timed("earliest", tm, earliest), nil)
	mustCreate(t, s, timed("middle", tm, base), nil)
	if got := mustNextDue(t, s, tm.timer); !sameMilli(got, earliest) || got.IsZero() {
		t.Errorf("NextDue(%s) = %v, want %v", tm.timer, got, earliest)
	}

	// The earliest unset: the next one is the earliest now.
	next := *first
	tm.set(&next, time.Time{})
	mustUpdate(t, s, &next, nil)
	if got := mustNextDue(t, s, tm.timer); !sameMilli(got, base) || got.IsZero() {
		t.Errorf("NextDue(%s) after unsetting the earliest = %v, want %v", tm.timer, got, base)
	}
}
