package servertest_test

// ProtoJSON readers take a field by its JSON name (historyLength) or its
// proto name (history_length). The conformance suite's JSON-RPC client sends
// the proto names; the SDK's decoder reads only the JSON names, so the
// server's front handler renames them. The caller's own JSON (metadata,
// data parts) is never touched.

import (
	"encoding/json"
	"net/http"
	"testing"
)

// tckMultiTurn makes a conformance task with four history messages: request,
// question, answer, question. It returns the task's ID and context.
func tckMultiTurn(t *testing.T, send func(id, text string, extra map[string]any) map[string]any) (string, string) {
	t.Helper()
	first := tckTask(t, send(tckID("tck-input-required"), "start", nil))
	id, ctxID := first["id"].(string), first["contextId"].(string)
	again := tckTask(t, send(tckID("tck-input-required"), "more", map[string]any{"taskId": id}))
	if tckState(again) != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("follow-up left the task %s, want input-required", tckState(again))
	}
	return id, ctxID
}

func TestTCKJSONRPCParamsAreReadInBothSpellings(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	send := func(id, text string, extra map[string]any) map[string]any {
		return tckSend(t, env, "conformance", id, text, extra)
	}
	id, ctxID := tckMultiTurn(t, send)

	for _, key := range []string{"historyLength", "history_length"} {
		task := tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": id, key: 1}).result(t, "GetTask "+key)
		if h, _ := task["history"].([]any); len(h) != 1 {
			t.Errorf("GetTask with %s 1: %d history messages, want 1", key, len(h))
		}
		task = tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": id, key: 0}).result(t, "GetTask "+key)
		if _, ok := task["history"]; ok {
			t.Errorf("GetTask with %s 0: history %v, want none", key, task["history"])
		}
	}

	// ListTasks: context, page size, history and artifacts in proto names.
	done := tckTask(t, send(tckID("tck-artifact-text"), "artifact", map[string]any{"context_id": ctxID}))
	if done["contextId"] != ctxID {
		t.Fatalf("message with context_id %q made a task in context %v", ctxID, done["contextId"])
	}
	list := tckRPC(t, env, "conformance", "ListTasks", map[string]any{
		"context_id": ctxID, "page_size": 1, "history_length": 0, "include_artifacts": true, "status": "TASK_STATE_COMPLETED",
	}).result(t, "ListTasks snake_case")
	tasks, _ := list["tasks"].([]any)
	if len(tasks) != 1 || list["pageSize"] != float64(1) {
		t.Fatalf("ListTasks(context_id, page_size 1, completed) = %s, want one completed task on a page of 1", tckRPCBody(list))
	}
	got := tasks[0].(map[string]any)
	if got["id"] != done["id"] || got["artifacts"] == nil || got["history"] != nil {
		t.Errorf("ListTasks task = %v, want task %v with artifacts and no history", got, done["id"])
	}

	// SendMessage: configuration and message fields in proto names.
	res := tckRPC(t, env, "conformance", "SendMessage", map[string]any{
		"message": map[string]any{
			"message_id": tckID("test-resubscribe-message-id"), "role": "ROLE_USER",
			"context_id": ctxID, "parts": []any{map[string]any{"text": "long", "media_type": "text/plain"}},
			"metadata": map[string]any{"caller_key": "kept as sent"},
		},
		"configuration": map[string]any{"return_immediately": true, "history_length": 0},
	}).result(t, "SendMessage snake_case")
	long := tckTask(t, res)
	if s := tckState(long); s == "TASK_STATE_COMPLETED" || long["history"] != nil || long["contextId"] != ctxID {
		t.Errorf("SendMessage(return_immediately, history_length 0, context_id) = state %s history %v context %v; want a running task, no history, context %s",
			s, long["history"], long["contextId"], ctxID)
	}
	full := tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": long["id"]}).result(t, "GetTask")
	first := full["history"].([]any)[0].(map[string]any)
	meta, _ := first["metadata"].(map[string]any)
	part := first["parts"].([]any)[0].(map[string]any)
	if meta["caller_key"] != "kept as sent" || meta["callerKey"] != nil || part["mediaType"] != "text/plain" {
		t.Errorf("stored request = %v; want metadata key caller_key untouched and the part's media_type read as mediaType", first)
	}

	// A follow-up naming its task as task_id.
	follow := tckTask(t, tckRPC(t, env, "conformance", "SendMessage", map[string]any{"message": map[string]any{
		"message_id": tckID("tck-complete-task"), "role": "ROLE_USER", "task_id": id, "parts": []any{map[string]any{"text": "done"}},
	}}).result(t, "SendMessage task_id"))
	if follow["id"] != id || tckState(follow) != "TASK_STATE_COMPLETED" {
		t.Errorf("follow-up with task_id = task %v %s, want %s completed", follow["id"], tckState(follow), id)
	}

	// One field in both spellings is refused, naming both.
	tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": id, "historyLength": 1, "history_length": 2}).
		wantRPCError(t, "GetTask with historyLength and history_length", -32602)
}

func TestTCKHTTPJSONQueryAndBodyAreReadInBothSpellings(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	send := func(id, text string, extra map[string]any) map[string]any {
		msg := map[string]any{"role": "ROLE_USER", "message_id": id, "parts": []any{map[string]any{"text": text}}}
		for k, v := range extra {
			if k == "taskId" {
				k = "task_id"
			}
			msg[k] = v
		}
		r := tckREST(t, env, "conformance", http.MethodPost, "/message:send", map[string]any{"message": msg})
		if r.Status != http.StatusOK {
			t.Fatalf("POST /message:send (snake_case body): status %d %s", r.Status, r.Raw)
		}
		return r.JSON
	}
	id, ctxID := tckMultiTurn(t, send)

	r := tckREST(t, env, "conformance", http.MethodGet, "/tasks/"+id+"?history_length=1", nil)
	if h, _ := r.JSON["history"].([]any); r.Status != http.StatusOK || len(h) != 1 {
		t.Errorf("GET /tasks/ID?history_length=1: status %d, %d history messages; want 200 and 1", r.Status, len(h))
	}
	r = tckREST(t, env, "conformance", http.MethodGet, "/tasks?context_id="+ctxID+"&page_size=1", nil)
	if tasks, _ := r.JSON["tasks"].([]any); r.Status != http.StatusOK || len(tasks) != 1 || r.JSON["pageSize"] != float64(1) {
		t.Errorf("GET /tasks?context_id&page_size=1: status %d %s; want one task on a page of 1", r.Status, r.Raw)
	}
}

func TestTCKJSONRPCEndpointTakesATrailingSlash(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	// Python's httpx joins a base URL and "/" into .../jsonrpc/.
	r := tckDo(t, http.MethodPost, env.AgentURL("conformance")+"/jsonrpc/",
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`), jsonHeaders...)
	r.result(t, "POST /jsonrpc/")
}

func tckRPCBody(v map[string]any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
