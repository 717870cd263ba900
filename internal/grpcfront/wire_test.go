package grpcfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/askpoint/askpoint/internal/engine"
)

// wireParts are parts of every kind, with and without the fields a part
// may carry, and values that take the reading's every branch: escapes
// (the encoder's HTML ones among them), surrogate pairs, numbers of every
// form, nesting, empty values, lengths that take two and three bytes.
func wireParts() map[string]*a2a.Part {
	text := func(s string) *a2a.Part { return a2a.NewTextPart(s) }
	withAll := a2a.NewFileURLPart("https://example.com/r.pdf", "application/pdf")
	withAll.Filename = "r.pdf"
	withAll.Metadata = map[string]any{"k": "v", "n": 2.5}
	raw := a2a.NewRawPart([]byte{0, 1, 2, 0xfe, 0xff, '<'})
	raw.Filename, raw.MediaType = "b.bin", "application/octet-stream"
	data := a2a.NewDataPart(map[string]any{
		"questionId": "q-1", "expires": "2026-12-02T10:00:00Z",
		"answerSchema": map[string]any{"type": "object", "required": []any{"costCentre"},
			"properties": map[string]any{"costCentre": map[string]any{"type": "string", "pattern": "^CC-[0-9]{4}$"}}},
		"options": []any{map[string]any{"label": "Engineering", "value": "CC-4410"}, "CC-4420", 1.0, -2.5e-7, 1e21, 0.0, true, false, nil},
		"nested":  map[string]any{"": "empty key", "a\"b": []any{[]any{}, map[string]any{}}, "<&>": "\u2028\u00e9\U0001F600"},
	})
	data.MediaType = "application/json"
	return map[string]*a2a.Part{
		"text":             text("File my taxi receipt from Tuesday, 42 euros"),
		"empty text":       text(""),
		"escaped text":     text("quote \" backslash \\ <html> & tab\t newline\n control \x01 \u2028 é 😀"),
		"long text":        text(strings.Repeat("x", 200)),
		"very long text":   text(strings.Repeat("é", 10000)),
		"url with all":     withAll,
		"raw":              raw,
		"empty raw":        a2a.NewRawPart([]byte{}),
		"data":             data,
		"empty data":       a2a.NewDataPart(map[string]any{}),
		"data with meta":   {Content: a2a.Data{Value: map[string]any{"x": 1.0}}, Metadata: map[string]any{}},
		"long data string": a2a.NewDataPart(map[string]any{"s": strings.Repeat("y", 300)}),
	}
}

// wireTasks are tasks in every state, with every kind of part in their
// history, status and artifacts, and every field of each message.
func wireTasks() map[string]*a2a.Task {
	at := time.Date(2026, 12, 2, 7, 4, 5, 123456789, time.UTC)
	whole := time.Date(2026, 12, 2, 7, 4, 5, 0, time.FixedZone("CET", 3600))
	epoch, before := time.Unix(0, 0).UTC(), time.Date(1969, 7, 20, 20, 17, 0, 500, time.UTC)
	var parts []*a2a.Part
	tasks := map[string]*a2a.Task{}
	for name, p := range wireParts() {
		parts = append(parts, p)
		m := &a2a.Message{ID: "m-" + name, Role: a2a.MessageRoleAgent, Parts: a2a.ContentParts{p}}
		tasks["part "+name] = &a2a.Task{ID: "t", ContextID: "c",
			Status:    a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: m, Timestamp: &at},
			History:   []*a2a.Message{m},
			Artifacts: []*a2a.Artifact{{ID: "a", Parts: a2a.ContentParts{p}}}}
	}
	everything := &a2a.Message{ID: "m-all", ContextID: "c<1>", TaskID: "t&1", Role: a2a.MessageRoleUser, Parts: parts,
		Metadata: map[string]any{"trace": "x", "n": 3.0}, Extensions: []string{"https://askpoint.dev/ext/question/v1", ""},
		ReferenceTasks: []a2a.TaskID{"t-0", "t-1"}}
	states := []a2a.TaskState{a2a.TaskStateUnspecified, a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired,
		a2a.TaskStateAuthRequired, a2a.TaskStateCompleted, a2a.TaskStateCanceled, a2a.TaskStateFailed, a2a.TaskStateRejected}
	for i, st := range states {
		ts := []*time.Time{&at, &whole, &epoch, &before, nil}[i%5]
		tasks["state "+st.String()] = &a2a.Task{ID: "task-" + a2a.TaskID(st), ContextID: "ctx",
			Status:    a2a.TaskStatus{State: st, Message: everything, Timestamp: ts},
			History:   []*a2a.Message{everything, {ID: "m-bare", Role: a2a.MessageRoleUnspecified, Parts: a2a.ContentParts{a2a.NewTextPart("x")}}},
			Artifacts: []*a2a.Artifact{{ID: "a-1", Name: "expense", Description: "the <filed> expense", Parts: parts, Metadata: map[string]any{"k": []any{1.0}}, Extensions: []string{"e"}}, nil},
			Metadata:  map[string]any{"z": "y", "nested": map[string]any{"a": nil}}}
	}
	tasks["bare"] = &a2a.Task{ID: "t"}
	tasks["nil elements"] = &a2a.Task{ID: "t", History: []*a2a.Message{nil, {ID: "m", Parts: a2a.ContentParts{a2a.NewTextPart("x")}}}, Artifacts: []*a2a.Artifact{nil}}
	tasks["empty lists"] = &a2a.Task{ID: "t", ContextID: "c", History: []*a2a.Message{}, Artifacts: []*a2a.Artifact{}, Metadata: map[string]any{}}
	tasks["status without message"] = &a2a.Task{ID: "t", ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &at}}
	return tasks
}

// sdkWire is what a2agrpc sends for v (a SendMessage result when sent):
// pbconv's conversion of the value
// json.Unmarshal reads from its JSON js (what a store read gives), marshalled
// deterministically (map keys sorted, as the encoder writes them).
func sdkWire(t *testing.T, js []byte, v any, sent bool) ([]byte, proto.Message) {
	t.Helper()
	var m proto.Message
	var err error
	switch {
	case !sent:
		var task a2a.Task
		if err := json.Unmarshal(js, &task); err != nil {
			t.Fatalf("json.Unmarshal(%s) = %v", js, err)
		}
		m, err = pbconv.ToProtoTask(&task)
	default:
		var res a2a.SendMessageResult
		if _, ok := v.(*a2a.Message); ok {
			var msg a2a.Message
			if err := json.Unmarshal(js, &msg); err != nil {
				t.Fatalf("json.Unmarshal(%s) = %v", js, err)
			}
			res = &msg
		} else {
			var task a2a.Task
			if err := json.Unmarshal(js, &task); err != nil {
				t.Fatalf("json.Unmarshal(%s) = %v", js, err)
			}
			res = &task
		}
		m, err = pbconv.ToProtoSendMessageResponse(res)
	}
	if err != nil {
		t.Fatalf("pbconv of %s = %v", js, err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatalf("proto.Marshal = %v", err)
	}
	return b, m
}

// checkReply fails t unless the reply r written from js decodes to the
// SDK's message sdk field by field, and to the same bytes (want) when both
// are marshalled deterministically: no field, value or unknown field of
// its own.
func checkReply(t *testing.T, name string, r *wireReply, js, want []byte, sdk proto.Message) {
	t.Helper()
	if r == nil {
		t.Errorf("%s: not written from its JSON %s", name, js)
		return
	}
	got := *r.buf
	back := sdk.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(got, back); err != nil {
		t.Errorf("%s: the reply does not decode: %v", name, err)
		return
	}
	if !proto.Equal(back, sdk) {
		t.Errorf("%s: fields differ from the SDK's:\n got %s\nwant %s", name, prototext.Format(back), prototext.Format(sdk))
	}
	if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(back); err != nil || !bytes.Equal(b, want) {
		t.Errorf("%s: bytes differ from the SDK's:\n got %x\nwant %x", name, b, want)
	}
	// What an interceptor reads of the reply is the same.
	if b, err := proto.Marshal(r.Message); err != nil || !bytes.Equal(b, got) {
		t.Errorf("%s: the reply's message marshals to %x, %v; want its bytes", name, b, err)
	}
}

// TestRepliesFromJSONAreTheSDKsEncoding: a task reply (GetTask, CancelTask)
// and a SendMessage reply (a task or a message) written from the task's
// JSON as the JSON-RPC front writes it are what the SDK's gRPC transport
// sends for the same task, for every task state, every kind of part and
// every field.
func TestRepliesFromJSONAreTheSDKsEncoding(t *testing.T) {
	for name, task := range wireTasks() {
		var js bytes.Buffer
		if err := engine.WriteTaskJSON(&js, nil, task, nil, nil); err != nil {
			t.Fatalf("%s: WriteTaskJSON = %v", name, err)
		}
		want, sdk := sdkWire(t, js.Bytes(), task, false)
		checkReply(t, name, writeReply(replyTask, func(b *bytes.Buffer) error { return engine.WriteTaskJSON(b, nil, task, nil, nil) }), js.Bytes(), want, sdk)
		want, sdk = sdkWire(t, js.Bytes(), task, true)
		checkReply(t, name+" sent", writeReply(replySentTask, func(b *bytes.Buffer) error { return engine.WriteTaskJSON(b, nil, task, nil, nil) }), js.Bytes(), want, sdk)
		for i, m := range task.History {
			if m == nil {
				continue
			}
			js.Reset()
			if err := engine.WriteWrappedJSON(&js, nil, m, nil); err != nil {
				t.Fatalf("%s: WriteWrappedJSON = %v", name, err)
			}
			want, sdk := sdkWire(t, js.Bytes(), m, true)
			checkReply(t, name+" message "+string(rune('0'+i)), writeReply(replySentMessage, func(b *bytes.Buffer) error { return engine.WriteWrappedJSON(b, nil, m, nil) }), js.Bytes(), want, sdk)
		}
	}
}

// TestRepliesTheSDKMustMakeAreLeftToIt: JSON that json.Unmarshal and pbconv
// would read in a way of their own, or refuse, is not written from its
// JSON (the SDK's conversion answers instead), and neither is a task whose
// data part is no object (pbconv refuses it: the caller gets its error).
func TestRepliesTheSDKMustMakeAreLeftToIt(t *testing.T) {
	for _, js := range []string{
		`{"id":"t","ID":"u","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}`,
		`{"id":"t","id":"u","contextId":"c","status":{}}`,
		`{"id":"t","contextId":"c","status":{},"extra":1}`,
		`{"id":1,"contextId":"c","status":{}}`,
		`{"id":"t","status":{"state":1}}`,
		`{"id":"t","status":{"timestamp":"yesterday"}}`,
		`{"id":"t","status":{},"metadata":[1]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[null]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"url":""}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","url":"b"}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"data":[1]}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"data":"s"}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"AA\u003d\u003d"}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"not base64!"}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"n":1e999}}]}]}`,
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","parts":[{"text":"\u00"}]}]}`,
		"{\"id\":\"t\xff\",\"status\":{}}",
		`{"id":"t","status":{},"history":[{"messageId":"m","role":"ROLE_USER","extensions":[1]}]}`,
		`{"id":"t","status":{}`,
	} {
		w := wireBuf{}
		if err := w.Task([]byte(js)); !errors.Is(err, errFallback) {
			t.Errorf("Task(%s) = %v, want errFallback", js, err)
		}
	}
	for _, v := range []any{[]any{"CC-4410"}, "CC-4410", nil} {
		task := &a2a.Task{ID: "t", ContextID: "c", History: []*a2a.Message{{ID: "m", Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{{Content: a2a.Data{Value: v}}}}}}
		if r := writeReply(replyTask, func(b *bytes.Buffer) error { return engine.WriteTaskJSON(b, nil, task, nil, nil) }); r != nil {
			t.Errorf("a data part holding %#v: written from its JSON, want the SDK's conversion", v)
		}
		if _, err := pbconv.ToProtoTask(task); err == nil {
			t.Errorf("pbconv converts a data part holding %#v; this test expects its refusal", v)
		}
	}
}

// TestACodecSendsAWrittenReplyAsItIs: the front's codec hands the bytes of
// a written reply to gRPC without copying them, and marshals any other
// message as proto's codec does.
func TestACodecSendsAWrittenReplyAsItIs(t *testing.T) {
	task := wireTasks()["state TASK_STATE_INPUT_REQUIRED"]
	r := writeReply(replyTask, func(b *bytes.Buffer) error { return engine.WriteTaskJSON(b, nil, task, nil, nil) })
	if r == nil {
		t.Fatal("the reply was not written from its JSON")
	}
	c := newCodec()
	out, err := c.Marshal(r)
	if err != nil || len(out) != 1 || !bytes.Equal(out[0].ReadOnlyData(), *r.buf) || &out[0].ReadOnlyData()[0] != &(*r.buf)[0] {
		t.Fatalf("Marshal(written reply) = %d buffers, %v; want its own bytes", len(out), err)
	}
	out.Free()
	other := &a2apb.Task{Id: "t", Status: &a2apb.TaskStatus{State: a2apb.TaskState_TASK_STATE_COMPLETED}}
	out, err = c.Marshal(other)
	want, _ := proto.Marshal(other)
	if err != nil || !bytes.Equal(out.Materialize(), want) {
		t.Fatalf("Marshal(a task) = %x, %v; want %x", out.Materialize(), err, want)
	}
}

// TestStringsAreReadAsEncodingJSONReadsThem: escapes of every kind, pairs
// of surrogates and lone ones read as json.Unmarshal reads them.
func TestStringsAreReadAsEncodingJSONReadsThem(t *testing.T) {
	for _, js := range []string{
		`"plain"`, `""`, `"\"\\\/\b\f\n\r\t"`, `"\u00e9\u2028\u0000"`, `"\ud83d\ude00"`, `"\uD83D\uDE00x"`,
		`"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"é😀 \u003c"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(js), &want); err != nil {
			t.Fatalf("json.Unmarshal(%s) = %v", js, err)
		}
		r := reader{b: []byte(js)}
		s, _, err := r.str()
		if err != nil || r.i != len(js) {
			t.Fatalf("str(%s) = %v", js, err)
		}
		got, err := appendUnquoted(nil, s)
		if err != nil || string(got) != want {
			t.Errorf("appendUnquoted(%s) = %q, %v; want %q", js, got, err, want)
		}
	}
}

// roundTripTask is the worked example's task as the answer's reply holds
// it: the receipt, the question (text and data part), the answer, and the
// expense artifact.
func roundTripTask() *a2a.Task {
	at := time.Date(2026, 12, 2, 7, 4, 5, 123456789, time.UTC)
	question := a2a.NewDataPart(map[string]any{
		"questionId": "q-0193a5b2", "expires": "2026-12-03T07:04:05Z", "attempt": 1.0, "maxAttempts": 3.0,
		"answerSchema": map[string]any{"type": "object", "required": []any{"costCentre"}, "additionalProperties": false,
			"properties": map[string]any{"costCentre": map[string]any{"type": "string", "pattern": "^CC-[0-9]{4}$", "enum": []any{"CC-4410", "CC-4420"}}}},
		"options": []any{map[string]any{"label": "CC-4410", "value": "CC-4410"}, map[string]any{"label": "CC-4420", "value": "CC-4420"}},
	})
	question.MediaType = "application/json"
	answer := a2a.NewDataPart(map[string]any{"questionId": "q-0193a5b2", "costCentre": "CC-4410"})
	answer.MediaType = "application/json"
	artifact := a2a.NewDataPart(map[string]any{"expenseId": "EXP-2026-000042", "amount": 42.0, "currency": "EUR", "date": "2026-12-01", "vendor": "taxi", "costCentre": "CC-4410"})
	return &a2a.Task{ID: "0193a5b2-7c4e-7000-8000-000000000042", ContextID: "0193a5b2-7c4e-7000-8000-000000000043",
		Status: a2a.TaskStatus{State: a2a.TaskStateCompleted, Timestamp: &at},
		History: []*a2a.Message{
			{ID: "m-ask", Role: a2a.MessageRoleUser, ContextID: "0193a5b2-7c4e-7000-8000-000000000043", TaskID: "0193a5b2-7c4e-7000-8000-000000000042", Parts: a2a.ContentParts{a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")}},
			{ID: "m-q", Role: a2a.MessageRoleAgent, ContextID: "0193a5b2-7c4e-7000-8000-000000000043", TaskID: "0193a5b2-7c4e-7000-8000-000000000042", Extensions: []string{"https://askpoint.dev/ext/question/v1"},
				Parts: a2a.ContentParts{a2a.NewTextPart("Which cost centre should the 42.00 EUR taxi expense go to? CC-4410 or CC-4420."), question}},
			{ID: "m-answer", Role: a2a.MessageRoleUser, ContextID: "0193a5b2-7c4e-7000-8000-000000000043", TaskID: "0193a5b2-7c4e-7000-8000-000000000042", Parts: a2a.ContentParts{answer}},
		},
		Artifacts: []*a2a.Artifact{{ID: "expense", Name: "expense", Parts: a2a.ContentParts{artifact}}},
	}
}

// BenchmarkTaskReply is the gRPC reply of the worked example's completed
// task: written from its JSON (the JSON-RPC front's bytes, encoded here
// too, as GetTask encodes them) against the SDK's way (pbconv, then
// proto's codec).
//
//	go test -run '^$' -bench TaskReply -benchmem ./internal/grpcfront/
func BenchmarkTaskReply(b *testing.B) {
	task := roundTripTask()
	b.Run("from-json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			r := writeReply(replySentTask, func(buf *bytes.Buffer) error { return engine.WriteTaskJSON(buf, nil, task, nil, nil) })
			if r == nil {
				b.Fatal("not written from its JSON")
			}
			buffers.Put(r.buf)
		}
	})
	b.Run("from-stored-json", func(b *testing.B) {
		// The JSON already encoded, as the pieces a SendMessage's call
		// encoded for its log entries are.
		var js bytes.Buffer
		if err := engine.WriteTaskJSON(&js, nil, task, nil, nil); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for range b.N {
			r := writeReply(replySentTask, func(buf *bytes.Buffer) error { _, err := buf.Write(js.Bytes()); return err })
			if r == nil {
				b.Fatal("not written from its JSON")
			}
			buffers.Put(r.buf)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		c := newCodec()
		b.ReportAllocs()
		for range b.N {
			m, err := pbconv.ToProtoSendMessageResponse(task)
			if err != nil {
				b.Fatal(err)
			}
			out, err := c.Marshal(m)
			if err != nil {
				b.Fatal(err)
			}
			out.Free()
		}
	})
}
