package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// logCases cover ReadLog and History.
var logCases = []testCase{
	{"ReadLog/AfterSeqAndLimit", testReadLogPaging},
	{"ReadLog/OtherTasksNeverLeak", testReadLogIsolation},
	{"History/OnlyInHistoryOldestFirst", testHistoryFilters},
	{"History/LastKeepsNewest", testHistoryLast},
	{"History/OtherTasksNeverLeak", testHistoryIsolation},
}

func testReadLogPaging(t *testing.T, s store.Store) {
	cur := mustCreate(t, s, newTask("t1"), entries("a", 5))
	mustUpdate(t, s, cur, entries("b", 3))
	all := append(withSeq(1, entries("a", 5)...), withSeq(6, entries("b", 3)...)...)

	for _, c := range []struct {
		after int64
		limit int
		want  []store.LogEntry
	}{
		{0, 0, all},
		{0, -1, all},
		{0, 100, all},
		{0, 8, all},
		{3, 0, all[3:]},
		{3, 2, all[3:5]},
		{0, 1, all[:1]},
		{5, 1, all[5:6]},
		{7, 5, all[7:]},
		{8, 0, nil},
		{100, 0, nil},
	} {
		got := mustReadLog(t, s, "t1", c.after, c.limit)
		checkEntries(t, fmt.Sprintf(`ReadLog("t1", %d, %d)`, c.after, c.limit), got, c.want)
	}
}

func testReadLogIsolation(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), entries("one", 3))
	cur := mustCreate(t, s, newTask("t2"), entries("two", 2))
	mustUpdate(t, s, cur, entries("more", 2))
	mustCreate(t, s, newTask("t3"), nil)

	checkEntries(t, `ReadLog("t1", 0, 0)`, mustReadLog(t, s, "t1", 0, 0), withSeq(1, entries("one", 3)...))
	checkEntries(t, `ReadLog("t2", 0, 0)`, mustReadLog(t, s, "t2", 0, 0),
		append(withSeq(1, entries("two", 2)...), withSeq(3, entries("more", 2)...)...))
	checkEntries(t, `ReadLog("t2", 1, 2)`, mustReadLog(t, s, "t2", 1, 2),
		append(withSeq(2, entries("two", 2)[1:]...), withSeq(3, entries("more", 1)...)...))
	checkEntries(t, `ReadLog("t3", 0, 0)`, mustReadLog(t, s, "t3", 0, 0), nil)
	checkEntries(t, `ReadLog("t", 0, 0)`, mustReadLog(t, s, "t", 0, 0), nil)
}

// mixedLog is a log in which every other entry is history, and some
// entries, in history or not, go to push configurations.
func mixedLog() []store.LogEntry {
	log := []store.LogEntry{
		entry(store.KindMessage, "req", true, base),                                   // 1
		entry(store.KindStatus, "", false, base.Add(time.Second)),                     // 2
		entry(store.KindMessage, "q1", true, base.Add(2*time.Second)),                 // 3
		entry(store.KindReminder, "", false, base.Add(3*time.Second)),                 // 4: a reminder, for push only
		entry(store.KindMessage, "a1", true, base.Add(4*time.Second)),                 // 5
		entry(store.KindStatus, "", false, base.Add(5*time.Second)),                   // 6
		entry(store.KindMessage, "followup", false, base.Add(6*time.Second)),          // 7: a message kept out of history
		entry(store.KindStatus, "status-in-history", true, base.Add(7*time.Second)),   // 8: a non-message in history
		entry(store.KindArtifact, "", false, base.Add(8*time.Second)),                 // 9
		entry(store.KindMessage, "a2", true, base.Add(9*time.Second)),                 // 10
		entry(store.KindStatus, "", false, base.Add(10*time.Second+time.Millisecond)), // 11
	}
	for _, seq := range []int{2, 3, 4, 8, 11} {
		log[seq-1].Notify = true
	}
	return log
}

// historyOf returns the InHistory entries of log, numbered from 1.
func historyOf(log []store.LogEntry) []store.LogEntry {
	var out []store.LogEntry
	for _, e := range withSeq(1, log...) {
		if e.InHistory {
			out = append(out, e)
		}
	}
	return out
}

func testHistoryFilters(t *testing.T, s store.Store) {
	log := mixedLog()
	cur := mustCreate(t, s, newTask("t1"), log[:6])
	mustUpdate(t, s, cur, log[6:])
	want := historyOf(log) // seqs 1, 3, 5, 8, 10
	checkEntries(t, `History("t1", 0)`, mustHistory(t, s, "t1", 0), want)
	checkEntries(t, `History("t1", -1)`, mustHistory(t, s, "t1", -1), want)

	mustCreate(t, s, newTask("quiet"), []store.LogEntry{entry(store.KindStatus, "", false, base)})
	checkEntries(t, `History("quiet", 0)`, mustHistory(t, s, "quiet", 0), nil)
}

func testHistoryLast(t *testing.T, s store.Store) {
	log := mixedLog()
	mustCreate(t, s, newTask("t1"), log)
	h := historyOf(log)
	for _, last := range []int{1, 2, 4, 5, 6, 100} {
		want := h[max(0, len(h)-last):]
		checkEntries(t, fmt.Sprintf(`History("t1", %d)`, last), mustHistory(t, s, "t1", last), want)
	}
}

func testHistoryIsolation(t *testing.T, s store.Store) {
	mustCreate(t, s, newTask("t1"), entries("one", 2))
	mustCreate(t, s, newTask("t2"), mixedLog())
	mustCreate(t, s, newTask("t3"), nil)
	checkEntries(t, `History("t1", 0)`, mustHistory(t, s, "t1", 0), withSeq(1, entries("one", 2)...))
	checkEntries(t, `History("t1", 5)`, mustHistory(t, s, "t1", 5), withSeq(1, entries("one", 2)...))
	checkEntries(t, `History("t2", 0)`, mustHistory(t, s, "t2", 0), historyOf(mixedLog()))
	checkEntries(t, `History("t3", 0)`, mustHistory(t, s, "t3", 0), nil)
}
