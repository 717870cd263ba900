package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/jsonscan"
	"github.com/askpoint/askpoint/internal/questionwire"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// The appenders of wire.go must write the very bytes json.Marshal writes for
// the SDK's values, for every kind of part, with or without a mirror.

func wireParts() map[string]*a2a.Part {
	file := a2a.NewFileURLPart("https://example.com/r.pdf?a=1&b=<2>", "application/pdf")
	file.Filename = "receipt \"1\".pdf"
	data := a2a.NewDataPart(map[string]any{"z": 1.5, "a": []any{"x", nil, true, map[string]any{"k": "<v>"}}, "m": "\u2028"})
	data.MediaType = "application/json"
	data.Metadata = map[string]any{"b": "2", "a": 1.0}
	text := a2a.NewTextPart("line\nnext \u2028 <script> & \"q\" é")
	text.Metadata = map[string]any{"lang": "en"}
	return map[string]*a2a.Part{
		"text":          text,
		"data":          data,
		"data string":   a2a.NewDataPart("just a string"),
		"data list":     a2a.NewDataPart([]any{1.0, "two"}),
		"url":           file,
		"empty text":    a2a.NewTextPart(""),
		"nil data":      a2a.NewDataPart(nil),
		"empty url":     {Content: a2a.URL(""), MediaType: "text/html"},
		"raw":           a2a.NewRawPart([]byte{0, 1, 2, 0xff}),
		"empty raw":     a2a.NewRawPart(nil),
		"no content":    {MediaType: "text/plain"},
		"nil":           nil,
		"typed data":    a2a.NewDataPart(struct{ B, A int }{2, 1}),
		"raw json data": a2a.NewDataPart(json.RawMessage(`{ "b" : 1 }`)),
	}
}

func wireMessages() map[string]*a2a.Message {
	out := map[string]*a2a.Message{}
	for name, p := range wireParts() {
		m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("first"), p)
		m.TaskID, m.ContextID = "task-<1>", `ctx "q"`
		out[name] = m
	}
	full := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("x"))
	full.Extensions = []string{"https://askpoint.dev/ext/question/v1"}
	full.Metadata = map[string]any{"k": map[string]any{"b": 1.0, "a": 2.0}}
	full.ReferenceTasks = []a2a.TaskID{"t1", "t2"}
	out["every field"] = full
	out["no parts"] = &a2a.Message{ID: "m", Role: a2a.MessageRoleUser}
	out["empty parts"] = &a2a.Message{ID: "m", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{}}
	return out
}

func TestMirrorsEncodeAsTheSDKsValues(t *testing.T) {
	ts := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.UTC)
	for name, m := range wireMessages() {
		got, err := messageValue(m).AppendJSON(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := json.Marshal(m)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: message =\n%s\nwant\n%s", name, got, want)
		}
		st := a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: m, Timestamp: &ts}
		got, _ = statusValue(&st).AppendJSON(nil)
		want, _ = json.Marshal(st)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: status =\n%s\nwant\n%s", name, got, want)
		}
		a := &a2a.Artifact{ID: "a1", Name: "n <1>", Description: "d", Extensions: []string{"e"}, Metadata: map[string]any{"k": "v"}, Parts: m.Parts}
		got, _ = artifactValue(a).AppendJSON(nil)
		want, _ = json.Marshal(a)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: artifact =\n%s\nwant\n%s", name, got, want)
		}
	}
	st := a2a.TaskStatus{State: a2a.TaskStateWorking}
	got, _ := statusValue(&st).AppendJSON(nil)
	want, _ := json.Marshal(st)
	if !bytes.Equal(got, want) {
		t.Errorf("status without message = %s, want %s", got, want)
	}
	// Roles and states are written as their String, as their MarshalJSON
	// writes it: every one the SDK names, none, and one it does not know.
	for _, role := range []a2a.MessageRole{a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUnspecified, "ROLE_<other> & \"q\" é"} {
		m := &a2a.Message{ID: "m", Role: role, Parts: a2a.ContentParts{a2a.NewTextPart("x")}}
		got, _ := messageValue(m).AppendJSON(nil)
		want, _ := json.Marshal(m)
		if !bytes.Equal(got, want) {
			t.Errorf("role %q: message = %s, want %s", role, got, want)
		}
	}
	for _, state := range []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
		a2a.TaskStateCompleted, a2a.TaskStateCanceled, a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateUnspecified, "TASK_<other>"} {
		st := a2a.TaskStatus{State: state}
		got, _ := statusValue(&st).AppendJSON(nil)
		want, _ := json.Marshal(st)
		if !bytes.Equal(got, want) {
			t.Errorf("state %q: status = %s, want %s", state, got, want)
		}
	}
}

// TestRolesDecodeAsTheSDKDecodesThem: MessageIn's role is what
// a2a.MessageRole.UnmarshalJSON makes of the same JSON, error or not.
func TestRolesDecodeAsTheSDKDecodesThem(t *testing.T) {
	for _, in := range []string{`"ROLE_USER"`, `"ROLE_AGENT"`, `"ROLE_UNSPECIFIED"`, `""`, `"role <x> & y"`, `"\u0052OLE_USER"`,
		`"ROLE_\"USER"`, `"é"`, "\"\xff\"", `null`, `1`, `{}`, `"a\nb"`} {
		var got roleIn = "before"
		gotErr := got.UnmarshalJSON([]byte(in))
		var want a2a.MessageRole = "before"
		wantErr := want.UnmarshalJSON([]byte(in))
		if a2a.MessageRole(got) != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%s: role %q (error %v), want %q (error %v)", in, got, gotErr, want, wantErr)
		}
		var m MessageIn
		if err := json.Unmarshal([]byte(`{"messageId":"m","role":`+in+`}`), &m); err == nil && a2a.MessageRole(m.Role) != want {
			t.Errorf("%s: MessageIn's role %q, want %q", in, m.Role, want)
		}
	}
}

func TestMirrorsRefuseWhatTheSDKCannotEncode(t *testing.T) {
	m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewDataPart(map[string]any{"f": func() {}}))
	if _, err := messageValue(m).AppendJSON(nil); err == nil {
		t.Error("a data part holding a func encoded without error")
	}
	if _, _, err := statusEntry(encodingTask(), a2a.TaskStateInputRequired, m, time.Now()); err == nil {
		t.Error("statusEntry of a message holding a func gave no error")
	}
}

func TestQuotedStringsAreEncodingJSONs(t *testing.T) {
	for _, s := range []string{"", "plain-id_1.2", `a"b`, `a\b`, "<>&", "\u2028\u2029", "é", "\x00\x1f", "\xff"} {
		want, _ := json.Marshal(s)
		if got := str(s).append(nil); !bytes.Equal(got, want) {
			t.Errorf("str(%q) = %s, want %s", s, got, want)
		}
		if n := quotedLen(s); n != len(want) {
			t.Errorf("quotedLen(%q) = %d, want %d", s, n, len(want))
		}
	}
}

func TestPartsSizeIsTheLengthOfJSONMarshal(t *testing.T) {
	for name, m := range wireMessages() {
		want, _ := json.Marshal(m.Parts)
		if got := partsSize(m.Parts); got != len(want) {
			t.Errorf("%s: partsSize = %d, want %d", name, got, len(want))
		}
	}
	if got := partsSize(a2a.ContentParts{a2a.NewDataPart(map[string]any{"f": func() {}})}); got != 0 {
		t.Errorf("partsSize of parts that cannot be encoded = %d, want 0", got)
	}
}

func TestOpenQuestionIDReadsWhatTheDecoderReads(t *testing.T) {
	for _, id := range []string{"q-1-abc", "", `q "quoted"`, "q\\back", "q<&>", "q-é-\u2028"} {
		raw, _ := json.Marshal(&question.Question{ID: id, Text: "t", Schema: json.RawMessage(`{"type":"object"}`)})
		if got := openQuestionID(&store.Task{Question: raw}); got != id {
			t.Errorf("openQuestionID(%s) = %q, want %q", raw, got, id)
		}
	}
	if got := openQuestionID(&store.Task{Question: json.RawMessage(`{"text":"t","questionId":"q-2"}`)}); got != "q-2" {
		t.Errorf("openQuestionID of a question in another order = %q, want q-2", got)
	}
}

// TestAQuestionsStatusIsTheSameWrittenFromItsWireData: a question's status
// entry written with the data part's wire value (questionwire.MessageAndWire) is the
// entry written from the message's maps, byte for byte; with a second data
// part the wire value is not used.
func TestAQuestionsStatusIsTheSameWrittenFromItsWireData(t *testing.T) {
	q := question.Question{ID: "q-1", Text: "Which cost centre?", Expires: time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC),
		Schema:  json.RawMessage(`{"type":"object","properties":{"costCentre":{"type":"string"}},"required":["costCentre"]}`),
		Options: []question.Option{{Value: "CC-4410", Label: "Engineering"}, {Value: "CC-4420"}}, Attempt: 2, MaxAttempts: 3,
		Errors: []question.FieldError{{Pointer: "/costCentre", Message: "expected one of CC-4410, CC-4420"}}}
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	m, data := questionwire.MessageAndWire(&q)
	wantSt, want, err := statusEntry(encodingTask(), a2a.TaskStateInputRequired, m, now)
	if err != nil {
		t.Fatal(err)
	}
	gotSt, got, err := statusEntryData(encodingTask(), a2a.TaskStateInputRequired, m, data, now)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Body, want.Body) || !bytes.Equal(gotSt, wantSt) {
		t.Errorf("written from the wire data:\n%s\nwant\n%s", got.Body, want.Body)
	}
	m.Parts = append(m.Parts, a2a.NewDataPart(map[string]any{"other": 1.0}))
	_, want, _ = statusEntry(encodingTask(), a2a.TaskStateInputRequired, m, now)
	_, got, _ = statusEntryData(encodingTask(), a2a.TaskStateInputRequired, m, data, now)
	if !bytes.Equal(got.Body, want.Body) {
		t.Errorf("two data parts, written with the wire data:\n%s\nwant\n%s", got.Body, want.Body)
	}
}

// TestStoredMessagesAreReadInOnePass: a message as the engine writes it
// is read by MessageIn.ReadJSON as json.Unmarshal reads it, in one pass
// for every kind of part but raw bytes (left to json.Unmarshal).
func TestStoredMessagesAreReadInOnePass(t *testing.T) {
	for name, m := range wireMessages() {
		raw, err := messageValue(m).AppendJSON(nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var fast, slow MessageIn
		r := jsonscan.NewReader(raw)
		ok := fast.ReadJSON(&r) && r.End()
		if err := json.Unmarshal(raw, &slow); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, hasRaw := map[string]bool{"raw": true, "empty raw": true}[name]
		switch {
		case ok == hasRaw:
			t.Errorf("%s: read in one pass %v, want %v", name, ok, !hasRaw)
		case ok && !reflect.DeepEqual(fast, slow):
			t.Errorf("%s: read in one pass\n%#v\nwant\n%#v", name, fast, slow)
		}
		got, err := decodeMessage(raw)
		// A part the SDK refuses (no content) is refused the same way.
		if want, werr := decodeMessageSDK(raw); fmt.Sprint(err) != fmt.Sprint(werr) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s: decodeMessage = %#v, %v; the SDK's %#v, %v", name, got, err, want, werr)
		}
	}
}

func decodeMessageSDK(raw []byte) (*a2a.Message, error) {
	m := &a2a.Message{}
	return m, json.Unmarshal(raw, m)
}
