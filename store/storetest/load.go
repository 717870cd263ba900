package storetest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/askpoint/askpoint/store"
)

// loadCases cover LoadTask: the one read a transition makes.
var loadCases = []testCase{
	{"LoadTask/ReturnsTheRowAsGetTaskDoes", testLoadRow},
	{"LoadTask/FindsTheFirstMessageWithTheMessageID", testLoadMessage},
	{"LoadTask/MessageIDOfNoMessageFindsNothing", testLoadNoMessage},
	{"LoadTask/RequestIsTheFirstEntry", testLoadRequest},
	{"LoadTask/UnknownIDIsErrNotFound", testLoadUnknown},
}

func testLoadRow(t *testing.T, s store.Store) {
	want := mustCreate(t, s, newTask("t1"), entries("m", 2))
	got, err := s.LoadTask(t.Context(), "t1", store.LoadParams{})
	if err != nil {
		t.Fatalf("LoadTask = %v, want nil", err)
	}
	if d := taskDiff(got.Task, want); len(d) > 0 {
		t.Errorf("LoadTask row differs from CreateTask's: %v", d)
	}
	if got.Message != nil || got.Request != nil {
		t.Errorf("LoadTask with no params = message %s, request %s; want both nil", got.Message, got.Request)
	}
}

func testLoadMessage(t *testing.T, s store.Store) {
	es := entries("m", 3)
	// An agent's status entry never matches, even with an empty messageId.
	es = append(es, entry(store.KindStatus, "", true, base))
	// A reuse of m2 comes later: the first one is the answer.
	again := entry(store.KindMessage, "m2", true, base)
	again.Body = json.RawMessage(`{"messageId":"m2","again":true}`)
	es = append(es, again)
	mustCreate(t, s, newTask("t1"), es)
	got, err := s.LoadTask(t.Context(), "t1", store.LoadParams{MessageID: "m2"})
	if err != nil {
		t.Fatalf("LoadTask = %v, want nil", err)
	}
	if !jsonEqual(got.Message, es[1].Body) {
		t.Errorf("LoadTask(MessageID m2).Message = %s, want %s", got.Message, es[1].Body)
	}
}

func testLoadNoMessage(t *testing.T, s store.Store) {
	es := entries("m", 2)
	es = append(es, entry(store.KindStatus, "s1", true, base)) // not a message
	mustCreate(t, s, newTask("t1"), es)
	mustCreate(t, s, newTask("t2"), entries("x", 1)) // another task's
	for _, id := range []string{"s1", "x1", "nope"} {
		got, err := s.LoadTask(t.Context(), "t1", store.LoadParams{MessageID: id})
		if err != nil {
			t.Fatalf("LoadTask(%q) = %v, want nil", id, err)
		}
		if got.Message != nil {
			t.Errorf("LoadTask(MessageID %q).Message = %s, want nil", id, got.Message)
		}
	}
}

func testLoadRequest(t *testing.T, s store.Store) {
	es := entries("m", 3)
	mustCreate(t, s, newTask("t1"), es)
	got, err := s.LoadTask(t.Context(), "t1", store.LoadParams{Request: true, MessageID: "m3"})
	if err != nil {
		t.Fatalf("LoadTask = %v, want nil", err)
	}
	if !jsonEqual(got.Request, es[0].Body) {
		t.Errorf("LoadTask(Request).Request = %s, want %s", got.Request, es[0].Body)
	}
	if !jsonEqual(got.Message, es[2].Body) {
		t.Errorf("LoadTask(MessageID m3).Message = %s, want %s", got.Message, es[2].Body)
	}
}

func testLoadUnknown(t *testing.T, s store.Store) {
	if _, err := s.LoadTask(t.Context(), "nope", store.LoadParams{Request: true, MessageID: "m1"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadTask(unknown) = %v, want ErrNotFound", err)
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
