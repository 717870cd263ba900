package servertest_test

// Errors the A2A conformance suite checks on the wire: TaskNotFound for
// unknown IDs on every operation, refusals before any stream starts, push
// and extended-card capabilities that are not declared, and request bodies
// that are not JSON.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestTCKUnknownTaskIsTaskNotFoundOnEveryOperation(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	const id = "no-such-task"
	for _, method := range []string{"GetTask", "CancelTask", "SubscribeToTask"} {
		tckRPC(t, env, "conformance", method, map[string]any{"id": id}).wantRPCError(t, "JSON-RPC "+method, -32001)
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, "/tasks/" + id},
		{http.MethodPost, "/tasks/" + id + ":cancel"},
		{http.MethodPost, "/tasks/" + id + ":subscribe"},
		{http.MethodGet, "/tasks/" + id + ":subscribe"},
	} {
		r := tckREST(t, env, "conformance", c.method, c.path, nil, "Accept", "text/event-stream")
		r.wantRESTError(t, c.method+" "+c.path, http.StatusNotFound)
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s %s: Content-Type %q, want a JSON error, not a stream", c.method, c.path, ct)
		}
	}
}

func TestTCKSubscribeToFinishedTaskIsRefusedBeforeAnyStream(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	task := tckTask(t, tckSend(t, env, "conformance", tckID("tck-complete-task"), "done", nil))
	id := task["id"].(string)

	// HTTP+JSON: an error response, never a stream.
	r := tckREST(t, env, "conformance", http.MethodPost, "/tasks/"+id+":subscribe", nil, "Accept", "text/event-stream")
	r.wantRESTError(t, "POST :subscribe on a completed task", http.StatusBadRequest)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want a JSON error response", ct)
	}

	// JSON-RPC without Accept: text/event-stream: a plain error response.
	tckRPC(t, env, "conformance", "SubscribeToTask", map[string]any{"id": id}).wantRPCError(t, "SubscribeToTask(completed)", -32004)

	// JSON-RPC asking for an SSE stream: still a plain JSON-RPC error
	// response, before any stream, with the error's HTTP status (the
	// a2a-go client reads a streaming call's body only as events).
	s := tckRPC(t, env, "conformance", "SubscribeToTask", map[string]any{"id": id}, "Accept", "text/event-stream")
	if ct := s.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want a JSON error response, not a stream", ct)
	}
	if s.Status != http.StatusBadRequest {
		t.Errorf("status %d, want 400", s.Status)
	}
	s.wantRPCError(t, "SubscribeToTask(completed), SSE accepted", -32004)
}

func TestTCKPushOperationsOnAnUnknownTaskAreTaskNotFound(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	// The card declares push notifications, so the operations look the
	// task up first: an unknown one is TaskNotFound on both bindings.
	const task = "no-such-task"
	for _, c := range []struct {
		method string
		params map[string]any
	}{
		{"CreateTaskPushNotificationConfig", map[string]any{"taskId": task, "url": "http://127.0.0.1:9/hook"}},
		{"GetTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "cfg"}},
		{"ListTaskPushNotificationConfigs", map[string]any{"taskId": task}},
		{"DeleteTaskPushNotificationConfig", map[string]any{"taskId": task, "id": "cfg"}},
	} {
		tckRPC(t, env, "conformance", c.method, c.params).wantRPCError(t, c.method, -32001)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/tasks/" + task + "/pushNotificationConfigs", map[string]any{"url": "http://127.0.0.1:9/hook"}},
		{http.MethodGet, "/tasks/" + task + "/pushNotificationConfigs/cfg", nil},
		{http.MethodGet, "/tasks/" + task + "/pushNotificationConfigs", nil},
		{http.MethodDelete, "/tasks/" + task + "/pushNotificationConfigs/cfg", nil},
	} {
		r := tckREST(t, env, "conformance", c.method, c.path, c.body)
		r.wantRESTError(t, c.method+" "+c.path, http.StatusNotFound)
		if !strings.Contains(string(r.Raw), "TASK_NOT_FOUND") {
			t.Errorf("%s %s: %s, want reason TASK_NOT_FOUND", c.method, c.path, r.Raw)
		}
	}
}

func TestTCKBodyThatIsNotJSONIsRefusedBeforeItIsParsed(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	// Not even JSON: the content type is refused before the body is read,
	// so the answer is ContentTypeNotSupported, not a parse error.
	body := []byte(`{'jsonrpc': '2.0', 'id': 1, 'method': 'SendMessage'}`)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/xml"} {
		r := tckDo(t, http.MethodPost, env.AgentURL("conformance")+"/jsonrpc", body, "Content-Type", ct, "A2A-Version", "1.0")
		r.wantRPCError(t, "JSON-RPC with Content-Type "+ct, -32005)
		if !strings.Contains(r.JSON["error"].(map[string]any)["message"].(string), "application/json") {
			t.Errorf("JSON-RPC with Content-Type %s: message %q does not say what to send", ct, r.JSON["error"])
		}
	}
	msg := `{"message":{"role":"ROLE_USER","messageId":"ct-1","parts":[{"text":"hi"}]}}`
	r := tckDo(t, http.MethodPost, env.AgentURL("conformance")+"/rest/message:send", []byte(msg), "Content-Type", "text/plain", "A2A-Version", "1.0")
	r.wantRESTError(t, "POST /message:send as text/plain", http.StatusUnsupportedMediaType)
	if !strings.Contains(string(r.Raw), "CONTENT_TYPE_NOT_SUPPORTED") {
		t.Errorf("415 body %s, want reason CONTENT_TYPE_NOT_SUPPORTED", r.Raw)
	}
	requireNoTasks(t, env)

	// JSON with parameters, and +json types, are JSON.
	for _, ct := range []string{"application/json; charset=utf-8", "application/a2a+json"} {
		r := tckDo(t, http.MethodPost, env.AgentURL("conformance")+"/rest/message:send",
			[]byte(`{"message":{"role":"ROLE_USER","messageId":"`+tckID("tck-complete-task")+`","parts":[{"text":"hi"}]}}`),
			"Content-Type", ct, "A2A-Version", "1.0")
		if r.Status != http.StatusOK {
			t.Errorf("POST /message:send as %s: status %d %s, want 200", ct, r.Status, r.Raw)
		}
	}
}

func TestTCKVersionPatchReleasesAreAccepted(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	for _, v := range []string{"1.0", "1.0.0", "1.0.7"} {
		r := tckDo(t, http.MethodPost, env.AgentURL("conformance")+"/jsonrpc",
			[]byte(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`), "Content-Type", "application/json", "A2A-Version", v)
		r.result(t, "ListTasks with A2A-Version "+v)
		if got := tckREST(t, env, "conformance", http.MethodGet, "/tasks", nil, "A2A-Version", v); got.Status != http.StatusOK {
			t.Errorf("GET /tasks with A2A-Version %s: status %d %s", v, got.Status, got.Raw)
		}
	}
	r := tckDo(t, http.MethodPost, env.AgentURL("conformance")+"/jsonrpc",
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`), "Content-Type", "application/json", "A2A-Version", "1.1")
	r.wantRPCError(t, "ListTasks with A2A-Version 1.1", -32009)
}

func TestTCKDeletingAPushConfigAnswersWithAResultMember(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	task := tckRPC(t, env, "conformance", "SendMessage", map[string]any{"message": map[string]any{
		"messageId": "m-del-result", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}},
	}})
	var res struct {
		Result struct {
			Task struct {
				ID string `json:"id"`
			} `json:"task"`
		} `json:"result"`
	}
	if err := json.Unmarshal(task.Raw, &res); err != nil || res.Result.Task.ID == "" {
		t.Fatalf("SendMessage: %s (%v), want a task", task.Raw, err)
	}
	for i := range 2 { // the second delete finds nothing and still succeeds
		r := tckRPC(t, env, "conformance", "DeleteTaskPushNotificationConfig", map[string]any{"taskId": res.Result.Task.ID, "id": "nope"})
		var out map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &out); err != nil {
			t.Fatal(err)
		}
		if _, ok := out["result"]; !ok || out["error"] != nil {
			t.Fatalf("delete %d: %s, want a success with a result member", i+1, r.Raw)
		}
	}
}

func TestTCKDeletingAPushConfigOverHTTPJSONAnswersWithAnEmptyObject(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	r := tckREST(t, env, "conformance", http.MethodPost, "/message:send", map[string]any{"message": map[string]any{
		"messageId": "m-rest-del", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}},
	}})
	var res struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal(r.Raw, &res); err != nil || res.Task.ID == "" {
		t.Fatalf("send: %s (%v), want a task", r.Raw, err)
	}
	for i := range 2 {
		d := tckREST(t, env, "conformance", http.MethodDelete, "/tasks/"+res.Task.ID+"/pushNotificationConfigs/nope", nil)
		if d.Status != http.StatusOK || strings.TrimSpace(string(d.Raw)) != "{}" {
			t.Fatalf("delete %d: status %d, body %q; want 200 with {}", i+1, d.Status, d.Raw)
		}
	}
	d := tckREST(t, env, "conformance", http.MethodDelete, "/tasks/no-such-task/pushNotificationConfigs/nope", nil)
	d.wantRESTError(t, "delete on an unknown task", http.StatusNotFound)
}
