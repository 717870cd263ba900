package engine

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// The log entries are assembled around parts encoded once (task.go); they
// must be the very bytes json.Marshal writes for the whole event.

func encodingTask() *store.Task {
	return &store.Task{ID: "task-<1>&\u2028é", ContextID: `ctx "quoted" \ <b>`}
}

func encodingMessages(t *testing.T) map[string]*a2a.Message {
	q := &question.Question{
		ID: "q-1", Text: "Which cost centre? <CC-4410> & CC-4420",
		Expires: time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC),
		Schema:  json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`),
		Options: []question.Option{{Value: "CC-4410"}, {Value: "CC-4420", Label: "R&D <lab>"}},
	}
	qm := q.Message()
	qm.TaskID, qm.ContextID = "task-1", "ctx-1"
	text := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("line\nnext \u2028 <script> & \"q\""))
	text.Metadata = map[string]any{"b": 2.5, "a": []any{"x", nil, true}}
	return map[string]*a2a.Message{"none": nil, "question": qm, "text": text}
}

func TestStatusEntryBodyIsTheEventsJSON(t *testing.T) {
	task := encodingTask()
	now := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("x", 3600))
	for name, msg := range encodingMessages(t) {
		raw, e, err := statusEntry(task, a2a.TaskStateInputRequired, msg, now)
		if err != nil {
			t.Fatalf("%s: statusEntry() = %v", name, err)
		}
		ts := now.UTC()
		status := a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: msg, Timestamp: &ts}
		wantRaw, _ := json.Marshal(status)
		wantBody, _ := json.Marshal(&a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(task.ID), ContextID: task.ContextID, Status: status})
		if !bytes.Equal(raw, wantRaw) {
			t.Errorf("%s: status = %s, want %s", name, raw, wantRaw)
		}
		if !bytes.Equal(e.Body, wantBody) {
			t.Errorf("%s: event body =\n%s\nwant\n%s", name, e.Body, wantBody)
		}
		got, err := historyMessage(e)
		if err != nil {
			t.Fatalf("%s: historyMessage() = %v", name, err)
		}
		var ev a2a.TaskStatusUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ev.Status.Message) {
			t.Errorf("%s: historyMessage() = %+v, want %+v", name, got, ev.Status.Message)
		}
	}
}

func TestAddArtifactEncodesListAndEventAsJSONMarshal(t *testing.T) {
	task := encodingTask()
	now := time.Now()
	var all []*a2a.Artifact
	for i, a := range []*a2a.Artifact{
		{ID: "a1", Name: "expense <1>", Parts: a2a.ContentParts{a2a.NewTextPart("Filed & done"), a2a.NewDataPart(map[string]any{"z": 1.0, "a": "b"})}},
		{ID: "a2", Parts: a2a.ContentParts{a2a.NewTextPart("second")}, Metadata: map[string]any{"k": "v"}},
		{ID: "a3", Parts: a2a.ContentParts{a2a.NewTextPart("third \u2028")}},
	} {
		e, err := addArtifact(task, a, now)
		if err != nil {
			t.Fatalf("addArtifact(#%d) = %v", i, err)
		}
		all = append(all, a)
		wantList, _ := json.Marshal(all)
		if !bytes.Equal(task.Artifacts, wantList) {
			t.Errorf("after #%d: artifacts = %s, want %s", i, task.Artifacts, wantList)
		}
		wantBody, _ := json.Marshal(&a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(task.ID), ContextID: task.ContextID, Artifact: a, LastChunk: true})
		if !bytes.Equal(e.Body, wantBody) {
			t.Errorf("#%d: event body =\n%s\nwant\n%s", i, e.Body, wantBody)
		}
	}
}

func TestAppendArtifactJSONDecodesOtherLayouts(t *testing.T) {
	for _, list := range []string{"", "null", "[]", "[ ]", " [ {\"artifactId\":\"a0\"} ] "} {
		got, err := appendArtifactJSON(json.RawMessage(list), json.RawMessage(`{"artifactId":"a1"}`))
		if err != nil {
			t.Fatalf("appendArtifactJSON(%q) = %v", list, err)
		}
		var arts []*a2a.Artifact
		if err := json.Unmarshal(got, &arts); err != nil {
			t.Fatalf("appendArtifactJSON(%q) = %s, not a list: %v", list, got, err)
		}
		if len(arts) == 0 || arts[len(arts)-1].ID != "a1" {
			t.Errorf("appendArtifactJSON(%q) = %s, want a1 last", list, got)
		}
	}
}
