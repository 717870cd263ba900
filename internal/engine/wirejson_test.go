package engine

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TestWriteWrappedJSONIsJSONMarshalOfTheSDKsValues: a task (with every kind of
// part in its history, status and artifacts, nil elements, empty lists) and
// a message come out of WriteWrappedJSON as json.Marshal writes them, between
// the prefix and suffix.
func TestWriteWrappedJSONIsJSONMarshalOfTheSDKsValues(t *testing.T) {
	at := time.Date(2026, 12, 1, 15, 4, 5, 123456789, time.UTC)
	values := map[string]any{}
	var history []*a2a.Message
	for name, m := range wireMessages() {
		values["message "+name] = m
		history = append(history, m)
		art := &a2a.Artifact{ID: "a-" + a2a.ArtifactID(name), Name: name, Parts: m.Parts}
		values["task "+name] = &a2a.Task{ID: "t", ContextID: "c", History: []*a2a.Message{m},
			Artifacts: []*a2a.Artifact{art}, Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: m, Timestamp: &at}}
	}
	values["task everything"] = &a2a.Task{ID: "t<1>", ContextID: "c&", History: append(history, nil),
		Artifacts: []*a2a.Artifact{nil, {ID: "a", Description: "d", Extensions: []string{"e"}, Metadata: map[string]any{"k": 1.0}}},
		Metadata:  map[string]any{"z": "y"}, Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	values["task empty lists"] = &a2a.Task{ID: "t", History: []*a2a.Message{}, Artifacts: []*a2a.Artifact{}}
	values["nil task"] = (*a2a.Task)(nil)
	values["other value"] = map[string]any{"b": 1.0, "a": "<x>"}
	for name, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: json.Marshal = %v", name, err)
		}
		var got bytes.Buffer
		if err := WriteWrappedJSON(&got, []string{`{"r":`}, v, []string{"}", "\n"}); err != nil {
			t.Fatalf("%s: WriteWrappedJSON = %v", name, err)
		}
		if want := append(append([]byte(`{"r":`), want...), "}\n"...); !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got.String(), want)
		}
	}
}

// TestWriteWrappedJSONWritesNothingWhenTheValueFails: a value the encoder
// refuses leaves w empty, as the SDK's encoder leaves its response.
func TestWriteWrappedJSONWritesNothingWhenTheValueFails(t *testing.T) {
	var got bytes.Buffer
	if err := WriteWrappedJSON(&got, []string{"["}, map[string]any{"f": func() {}}, []string{"]"}); err == nil || got.Len() != 0 {
		t.Fatalf("WriteWrappedJSON(a func) = %v, wrote %q; want an error and nothing written", err, got.String())
	}
}
