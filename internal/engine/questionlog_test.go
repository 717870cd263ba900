package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// TestQuestionLogReadsTheEndsTheEngineWrites feeds QuestionLog entries
// built by the engine's own helpers, for the endings the server test
// (internal/telemetry TestStoreStatsMatchMetrics) does not reach: an
// expiry that resumes with the default answer and one that cancels, a
// CancelTask before the expiry, a wake's resume, and several questions of
// one task, one pause after another.
func TestQuestionLogReadsTheEndsTheEngineWrites(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	expires := t0.Add(time.Hour)
	task := &store.Task{ID: "t", ContextID: "c"}
	ask := func(id string, at time.Time) store.LogEntry {
		q := &question.Question{ID: id, Text: "Which?", Expires: expires, Schema: json.RawMessage(`{"type":"object","required":["b","a"]}`), Attempt: 1, MaxAttempts: 3}
		_, e, err := statusEntry(task, a2a.TaskStateInputRequired, q.Message(), at)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	status := func(state a2a.TaskState, at time.Time) store.LogEntry {
		_, e, err := statusEntry(task, state, agentMessage(task, "note"), at)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		name string
		log  []store.LogEntry
		want []api.QuestionEnd
	}{
		{"default answer at expiry", []store.LogEntry{ask("q1", t0), status(a2a.TaskStateWorking, expires)}, []api.QuestionEnd{api.QuestionExpired}},
		{"canceled at expiry", []store.LogEntry{ask("q1", t0), status(a2a.TaskStateCanceled, expires.Add(time.Second))}, []api.QuestionEnd{api.QuestionExpired}},
		{"CancelTask before expiry", []store.LogEntry{ask("q1", t0), status(a2a.TaskStateCanceled, t0.Add(time.Minute))}, []api.QuestionEnd{api.QuestionCanceled}},
		{"a wake's resume", []store.LogEntry{ask("q1", t0), status(a2a.TaskStateWorking, t0.Add(time.Minute))}, []api.QuestionEnd{api.QuestionEnded}},
		{"two pauses, the second open", []store.LogEntry{
			ask("q1", t0), status(a2a.TaskStateCanceled, t0.Add(time.Minute)), ask("q2", t0.Add(2*time.Minute)),
		}, []api.QuestionEnd{api.QuestionCanceled, ""}},
		{"nothing asked", []store.LogEntry{status(a2a.TaskStateWorking, t0), status(a2a.TaskStateCompleted, t0)}, nil},
	} {
		var got []QuestionFate
		l := NewQuestionLog(func(f QuestionFate) { got = append(got, f) })
		for i, e := range c.log {
			e.Seq = int64(i + 1)
			if err := l.Entry("t", "agent", e); err != nil {
				t.Fatalf("%s: Entry: %v", c.name, err)
			}
		}
		l.Flush()
		var ends []api.QuestionEnd
		for _, f := range got {
			ends = append(ends, f.End)
			if f.Kind != "a+b" || f.Agent != "agent" || f.TaskID != "t" {
				t.Errorf("%s: fate %+v, want kind a+b of agent's task t", c.name, f)
			}
		}
		if len(ends) != len(c.want) || strings.Join(endStrings(ends), ",") != strings.Join(endStrings(c.want), ",") {
			t.Errorf("%s: ends %q, want %q", c.name, ends, c.want)
		}
	}

	// Tasks are told apart: an open question does not carry over to the
	// next task's entries.
	var got []QuestionFate
	l := NewQuestionLog(func(f QuestionFate) { got = append(got, f) })
	_ = l.Entry("t1", "a", ask("q1", t0))
	_ = l.Entry("t2", "b", status(a2a.TaskStateCanceled, t0.Add(time.Minute)))
	l.Flush()
	if len(got) != 1 || got[0].TaskID != "t1" || got[0].End != "" {
		t.Errorf("fates across two tasks = %+v, want t1's question, open", got)
	}

	// A status that does not decode is an error naming the entry.
	err := NewQuestionLog(func(QuestionFate) {}).Entry("t9", "a", store.LogEntry{Seq: 4, Kind: store.KindStatus, Body: json.RawMessage(`{"status":`)})
	if err == nil || !strings.Contains(err.Error(), "t9") || !strings.Contains(err.Error(), "entry 4") {
		t.Errorf("Entry(a broken status) = %v, want an error naming task t9 and entry 4", err)
	}
}

func endStrings(es []api.QuestionEnd) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e)
	}
	return out
}
