package engine

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/questionwire"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// BenchmarkRoundTripEncoding is the JSON the engine writes for one ask ->
// answer -> complete round trip of the expense example: the request's and
// the answer's message entries, the submitted status, the question's
// status entry (with its wire data), the completed status and its
// artifact, and the two replies written from the entries' bytes.
func BenchmarkRoundTripEncoding(b *testing.B) {
	st := &store.Task{ID: "0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d10", ContextID: "0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d11"}
	q := &question.Question{ID: "q-0195f3c2-1", Text: "Which cost centre should this expense be charged to? CC-4410 or CC-4420.",
		Expires: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC),
		Schema:  json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`),
		Options: []question.Option{{Value: "CC-4410"}, {Value: "CC-4420"}}}
	if err := q.Check(); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 12, 0, 0, 123456789, time.UTC)
	request := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))
	request.ID = "0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d12"
	answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"costCentre": "CC-4410"}))
	answer.ID, answer.TaskID, answer.ContextID = "0195f3c2-7a4e-7c1d-9a51-3c2f8e4b6d13", a2a.TaskID(st.ID), st.ContextID
	b.ReportAllocs()
	for b.Loop() {
		req, err := messageEntry(request, now)
		if err != nil {
			b.Fatal(err)
		}
		ts := now
		if _, _, _, err := wrapped(statusValue(&a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &ts}), nil, nil); err != nil {
			b.Fatal(err)
		}
		m, data := questionwire.MessageAndWire(q)
		m.TaskID, m.ContextID = a2a.TaskID(st.ID), st.ContextID
		raw, asked, err := statusEntryData(st, a2a.TaskStateInputRequired, m, data, now)
		if err != nil {
			b.Fatal(err)
		}
		task := &a2a.Task{ID: a2a.TaskID(st.ID), ContextID: st.ContextID, History: []*a2a.Message{request, m},
			Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: m, Timestamp: &ts}}
		rb := &ReplyBytes{task: task, status: raw, history: []json.RawMessage{req.Body, statusMessageBytes(raw)}}
		if err := WriteTaskJSON(io.Discard, []string{`{"jsonrpc":"2.0","id":1,"result":`}, task, rb, []string{"}\n"}); err != nil {
			b.Fatal(err)
		}
		_ = asked

		ans, err := messageEntry(answer, now)
		if err != nil {
			b.Fatal(err)
		}
		done := agentMessage(st, "Filed: taxi, 42.00 EUR on 2026-12-01, charged to CC-4410.")
		raw, _, err = statusEntry(st, a2a.TaskStateCompleted, done, now)
		if err != nil {
			b.Fatal(err)
		}
		next := *st
		art, err := addArtifact(&next, &a2a.Artifact{ID: "expense", Name: "expense", Parts: a2a.ContentParts{a2a.NewDataPart(
			map[string]any{"vendor": "taxi", "amount": 42.0, "currency": "EUR", "date": "2026-12-01", "costCentre": "CC-4410"})}}, now)
		if err != nil {
			b.Fatal(err)
		}
		task = &a2a.Task{ID: a2a.TaskID(st.ID), ContextID: st.ContextID, History: []*a2a.Message{request, m, answer, done},
			Artifacts: []*a2a.Artifact{art.Artifact}, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Message: done, Timestamp: &ts}}
		rb = &ReplyBytes{task: task, status: raw, history: []json.RawMessage{req.Body, statusMessageBytes(statusBytes(asked, st)), ans.Body, statusMessageBytes(raw)},
			artifacts: []json.RawMessage{next.Artifacts[1 : len(next.Artifacts)-1]}}
		if err := WriteTaskJSON(io.Discard, []string{`{"jsonrpc":"2.0","id":2,"result":`}, task, rb, []string{"}\n"}); err != nil {
			b.Fatal(err)
		}
	}
}
