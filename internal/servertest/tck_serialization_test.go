package servertest_test

// What the conformance suite checks of every JSON the server writes:
// camelCase keys only, timestamps in UTC with "Z", and no null anywhere
// (in particular where an array belongs).

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// checkWireJSON walks v and reports snake_case keys, nulls and timestamps
// that are not UTC. The values of metadata and data are the caller's or the
// agent's own JSON: their keys are not the protocol's, but they are still
// checked for nulls and timestamps.
func checkWireJSON(path string, v any, own bool) []string {
	var errs []string
	switch v := v.(type) {
	case nil:
		errs = append(errs, path+" is null")
	case map[string]any:
		for k, val := range v {
			if !own && strings.Contains(k, "_") {
				errs = append(errs, fmt.Sprintf("%s has the snake_case key %q", path, k))
			}
			errs = append(errs, checkWireJSON(path+"."+k, val, own || k == "metadata" || k == "data")...)
		}
	case []any:
		for i, val := range v {
			errs = append(errs, checkWireJSON(fmt.Sprintf("%s[%d]", path, i), val, own)...)
		}
	case string:
		if ts, err := time.Parse(time.RFC3339Nano, v); err == nil && !strings.HasSuffix(v, "Z") {
			errs = append(errs, fmt.Sprintf("%s = %q (%s) is not in UTC with Z", path, v, ts))
		}
	}
	return errs
}

func TestTCKWireJSONIsCamelCaseUTCAndNullFree(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	docs := map[string]any{}
	var ids []any
	for _, prefix := range []string{"tck-complete-task", "tck-input-required", "tck-artifact-file", "tck-artifact-file-url", "tck-artifact-data", "tck-message-response", "tck-reject-task"} {
		res := tckSend(t, env, "conformance", tckID(prefix), "wire", nil)
		docs["SendMessage "+prefix] = res
		if task, ok := res["task"].(map[string]any); ok {
			ids = append(ids, task["id"])
		}
	}
	for _, id := range ids {
		docs[fmt.Sprintf("GetTask %v", id)] = tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": id}).JSON
		docs[fmt.Sprintf("REST GET /tasks/%v", id)] = tckREST(t, env, "conformance", http.MethodGet, fmt.Sprintf("/tasks/%v", id), nil).JSON
	}
	docs["ListTasks"] = tckRPC(t, env, "conformance", "ListTasks", map[string]any{"includeArtifacts": true}).JSON
	docs["REST ListTasks"] = tckREST(t, env, "conformance", http.MethodGet, "/tasks?includeArtifacts=true", nil).JSON
	docs["JSON-RPC error"] = tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": "nope"}).JSON
	docs["REST error"] = tckREST(t, env, "conformance", http.MethodGet, "/tasks/nope", nil).JSON
	for _, prefix := range []string{"tck-stream-001", "tck-stream-artifact-chunked"} {
		r := tckREST(t, env, "conformance", http.MethodPost, "/message:stream", map[string]any{"message": map[string]any{
			"role": "ROLE_USER", "messageId": tckID(prefix), "parts": []any{map[string]any{"text": "stream"}},
		}}, "Accept", "text/event-stream")
		for i, ev := range sseEvents(t, strings.NewReader(string(r.Raw))) {
			docs[fmt.Sprintf("stream %s event %d", prefix, i)] = ev
		}
	}
	for _, url := range []string{env.URL, env.AgentURL("conformance")} {
		docs["card "+url] = tckDo(t, http.MethodGet, url+"/.well-known/agent-card.json", nil).JSON
	}

	for name, doc := range docs {
		if doc == nil {
			t.Errorf("%s: no JSON document", name)
			continue
		}
		for _, e := range checkWireJSON("$", doc, false) {
			t.Errorf("%s: %s", name, e)
		}
	}
}
