package servertest_test

// ListTasks as the conformance suite reads it: an empty result is
// "tasks": [], nextPageToken is always present ("" on the last page), and a
// task's artifacts are left out entirely unless includeArtifacts asks for
// them. No authentication is needed when the server has no tokens.

import (
	"bytes"
	"net/http"
	"testing"
)

func TestTCKListTasksEmptyResultIsAnEmptyArrayWithAnEmptyToken(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	rpc := tckRPC(t, env, "conformance", "ListTasks", map[string]any{"contextId": "no-such-context"})
	rpc.result(t, "ListTasks")
	rest := tckREST(t, env, "conformance", http.MethodGet, "/tasks?contextId=no-such-context", nil)
	for name, raw := range map[string][]byte{"JSON-RPC": rpc.Raw, "HTTP+JSON": rest.Raw} {
		if !bytes.Contains(raw, []byte(`"tasks":[]`)) || !bytes.Contains(raw, []byte(`"nextPageToken":""`)) {
			t.Errorf("%s ListTasks with no match = %s; want \"tasks\":[] and \"nextPageToken\":\"\"", name, raw)
		}
	}
}

func TestTCKListTasksPagesEndWithAnEmptyToken(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	for range 3 {
		tckSend(t, env, "conformance", tckID("tck-complete-task"), "page me", nil)
	}
	seen := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		params := map[string]any{"pageSize": 2}
		if token != "" {
			params["pageToken"] = token
		}
		res := tckRPC(t, env, "conformance", "ListTasks", params).result(t, "ListTasks page")
		next, present := res["nextPageToken"].(string)
		if !present {
			t.Fatalf("page %d has no nextPageToken: %v", page, res)
		}
		for _, task := range res["tasks"].([]any) {
			seen[task.(map[string]any)["id"].(string)] = true
		}
		if next == "" {
			break
		}
		if page > 3 {
			t.Fatalf("more pages than tasks")
		}
		token = next
	}
	if len(seen) != 3 {
		t.Errorf("pages held %d distinct tasks, want 3", len(seen))
	}
}

func TestTCKListTasksLeavesArtifactsOutUnlessAsked(t *testing.T) {
	t.Parallel()
	env := startTCK(t)
	task := tckTask(t, tckSend(t, env, "conformance", tckID("tck-artifact-text"), "artifact", nil))
	ctxID := task["contextId"].(string)
	if task["artifacts"] == nil {
		t.Fatalf("the task has no artifacts to leave out: %v", task)
	}
	for _, c := range []struct {
		name   string
		params map[string]any
		query  string
		want   bool
	}{
		{"default", map[string]any{"contextId": ctxID}, "contextId=" + ctxID, false},
		{"includeArtifacts false", map[string]any{"contextId": ctxID, "includeArtifacts": false}, "contextId=" + ctxID + "&includeArtifacts=false", false},
		{"includeArtifacts true", map[string]any{"contextId": ctxID, "includeArtifacts": true}, "contextId=" + ctxID + "&includeArtifacts=true", true},
	} {
		rpc := tckRPC(t, env, "conformance", "ListTasks", c.params)
		rpc.result(t, "ListTasks "+c.name)
		rest := tckREST(t, env, "conformance", http.MethodGet, "/tasks?"+c.query, nil)
		for binding, raw := range map[string][]byte{"JSON-RPC": rpc.Raw, "HTTP+JSON": rest.Raw} {
			if got := bytes.Contains(raw, []byte(`"artifacts"`)); got != c.want {
				t.Errorf("%s ListTasks %s: artifacts present = %v, want %v: %s", binding, c.name, got, c.want, raw)
			}
		}
	}
	// GetTask always carries them.
	got := tckRPC(t, env, "conformance", "GetTask", map[string]any{"id": task["id"]}).result(t, "GetTask")
	if got["artifacts"] == nil {
		t.Errorf("GetTask left the artifacts out")
	}
}
