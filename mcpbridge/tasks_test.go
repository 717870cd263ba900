package mcpbridge_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/mcpbridge"
	"github.com/askpoint/askpoint/question"
)

// wire is an MCP 2026-07-28 client written out by hand over Streamable
// HTTP: the go-sdk v1.8.0 client reads every tools/call result as a
// CallToolResult and has no tasks, so a test that looks at the tasks
// extension's wire speaks it itself.
type wire struct {
	url   string
	user  string
	tasks bool // declare the tasks extension
}

// rpc sends one request and returns its result, or its JSON-RPC error.
func (w wire) rpc(t *testing.T, method string, params map[string]any) (map[string]any, *jsonrpc.Error) {
	t.Helper()
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if w.tasks {
		caps["extensions"] = map[string]any{mcpbridge.TasksExtension: map[string]any{}}
	}
	params["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    "2026-07-28",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "tasks-test", "version": "1"},
		mcp.MetaKeyClientCapabilities: caps,
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+w.user)
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	switch {
	case method == "tools/call":
		req.Header.Set("Mcp-Name", params["name"].(string))
	case strings.HasPrefix(method, "tasks/"):
		id, _ := params["taskId"].(string)
		req.Header.Set("Mcp-Name", id)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				raw = []byte(data)
				break
			}
		}
	} else {
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		raw = b.Bytes()
	}
	var out struct {
		Result map[string]any `json:"result"`
		Error  *jsonrpc.Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: HTTP %d, not a JSON-RPC response: %q", method, resp.StatusCode, raw)
	}
	return out.Result, out.Error
}

// ok is rpc that fails the test on an error.
func (w wire) ok(t *testing.T, method string, params map[string]any) map[string]any {
	t.Helper()
	res, err := w.rpc(t, method, params)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return res
}

// create calls tool with a message and returns the task it answers with.
func (w wire) create(t *testing.T, tool, message string) map[string]any {
	t.Helper()
	res := w.ok(t, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"message": message}})
	if res["resultType"] != "task" || res["taskId"] == "" || res["createdAt"] == nil {
		t.Fatalf("tools/call answered %s, want a CreateTaskResult", dump(res))
	}
	if _, ok := res["ttlMs"]; !ok {
		t.Errorf("CreateTaskResult %s has no ttlMs", dump(res))
	}
	return res
}

func (w wire) get(t *testing.T, id string) map[string]any {
	t.Helper()
	res := w.ok(t, "tasks/get", map[string]any{"taskId": id})
	if res["resultType"] != "complete" || res["taskId"] != id {
		t.Fatalf("tasks/get answered %s", dump(res))
	}
	return res
}

func (w wire) update(t *testing.T, id, key string, response map[string]any) *jsonrpc.Error {
	t.Helper()
	res, err := w.rpc(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: response}})
	if err == nil && res["resultType"] != "complete" {
		t.Fatalf("tasks/update answered %s, want an empty acknowledgement", dump(res))
	}
	return err
}

// asked is the one input request of an input_required task: its key,
// message and requestedSchema's properties.
func asked(t *testing.T, task map[string]any) (key, message string, props map[string]any) {
	t.Helper()
	reqs, _ := task["inputRequests"].(map[string]any)
	if task["status"] != "input_required" || len(reqs) != 1 {
		t.Fatalf("task %s, want input_required with one input request", dump(task))
	}
	for k, v := range reqs {
		ir := v.(map[string]any)
		if ir["method"] != "elicitation/create" {
			t.Fatalf("input request %s, want elicitation/create", dump(ir))
		}
		p := ir["params"].(map[string]any)
		if p["mode"] != "form" {
			t.Errorf("input request %s, want form mode", dump(ir))
		}
		return k, p["message"].(string), p["requestedSchema"].(map[string]any)["properties"].(map[string]any)
	}
	panic("unreachable")
}

func accepted(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// restart closes the bridge's server and serves a new bridge, of the
// same config and key, at a new address: nothing of the first is left.
func (r *rig) restart(t *testing.T) {
	t.Helper()
	r.srv.Close()
	b, srv := serveBridge(t, r.cfg)
	r.bridge, r.srv, r.url = b, srv, srv.URL+"/mcp"
}

// A host that declares the tasks extension gets a task; tasks/get shows
// the agent's question as input_required with its form; the bridge
// restarts; tasks/update answers, an answer that does not fit is refused
// with the errors and nothing sent, the agent's own re-ask comes back with
// its errors under a new key, and the end is the tool result.
func TestATaskSurvivesARestartAndIsAnsweredWithTasksUpdate(t *testing.T) {
	r := newRig(t, nil)
	w := wire{url: r.url, user: "alice", tasks: true}
	created := w.create(t, "travel", "A trip for two in May")
	id := created["taskId"].(string)
	a2aID := created["_meta"].(map[string]any)[mcpbridge.MetaTaskID].(string)
	if s := created["status"]; s != "working" && s != "input_required" {
		t.Errorf("created task is %v", s)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	task := w.get(t, id)
	key, msg, props := asked(t, task)
	if !strings.Contains(dump(props["answer"]), `{"const":"Rome","title":"Rome, Italy"}`) {
		t.Fatalf("city form %s, want the cities with their labels (message %q)", dump(props), msg)
	}
	if again := w.get(t, id); dump(again["inputRequests"]) != dump(task["inputRequests"]) {
		t.Errorf("a second tasks/get asks %s, want the same request under the same key", dump(again["inputRequests"]))
	}

	r.restart(t)
	w.url = r.url
	if err := w.update(t, id, key, accepted(map[string]any{"answer": "Rome"})); err != nil {
		t.Fatalf("answer the city after the restart: %v", err)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	trip, _, props := asked(t, w.get(t, id))
	if trip == key || dump(props["travellers"]) != `{"maximum":9,"minimum":1,"title":"Travellers","type":"integer"}` {
		t.Fatalf("trip form %s under key %s, want a new key and a bounded integer", dump(props), trip)
	}

	// Refused by the bridge: nothing reaches the agent, the key stays.
	before := snapshot(r.task(t, "travel", a2aID))
	err := w.update(t, id, trip, accepted(map[string]any{"start": "2027-05-01", "end": "2027-05-04", "travellers": 12}))
	if err == nil || err.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Message, "not sent") || !strings.Contains(err.Message, "at most 9") {
		t.Fatalf("12 travellers: %v, want invalid params saying the answer was not sent and why", err)
	}
	if after := snapshot(r.task(t, "travel", a2aID)); after != before {
		t.Errorf("the refused answer changed the task: %s, was %s", after, before)
	}
	if k, _, _ := asked(t, w.get(t, id)); k != trip {
		t.Errorf("after the refusal the task asks %s, want %s still", k, trip)
	}

	// Refused by the agent: its re-ask, with its errors, under a new key.
	if err := w.update(t, id, trip, accepted(map[string]any{"start": "2027-05-10", "end": "2027-05-01", "travellers": 2})); err != nil {
		t.Fatal(err)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	reask, msg, _ := asked(t, w.get(t, id))
	if reask == trip || !strings.Contains(msg, "the last day is before the first") || !strings.Contains(msg, "not accepted") {
		t.Fatalf("re-ask %s: %q, want a new key and the agent's error", reask, msg)
	}
	// A response for a key that is no longer outstanding is ignored.
	before = snapshot(r.task(t, "travel", a2aID))
	if err := w.update(t, id, trip, accepted(map[string]any{"start": "2027-05-01", "end": "2027-05-04", "travellers": 2})); err != nil {
		t.Fatalf("a response for an answered key: %v, want it ignored", err)
	}
	if after := snapshot(r.task(t, "travel", a2aID)); after != before {
		t.Errorf("a response for an answered key changed the task: %s, was %s", after, before)
	}
	if err := w.update(t, id, reask, accepted(map[string]any{"start": "2027-05-01", "end": "2027-05-04", "travellers": 2})); err != nil {
		t.Fatal(err)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	confirm, msg, _ := asked(t, w.get(t, id))
	if !strings.Contains(msg, "Book Rome, 2027-05-01 to 2027-05-04, for 2 at 720 EUR?") {
		t.Errorf("confirmation %q", msg)
	}
	if err := w.update(t, id, confirm, accepted(map[string]any{"answer": "true"})); err != nil {
		t.Fatal(err)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateCompleted)
	done := w.get(t, id)
	result, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || result == nil || result["isError"] == true || !strings.Contains(dump(result["content"]), "Booked Rome: TRV-001") {
		t.Fatalf("done %s, want completed with the booking as the tool result", dump(done))
	}
	if r.desk.Bookings() != 1 {
		t.Errorf("%d bookings, want 1", r.desk.Bookings())
	}
	var last *a2a.Message
	for _, m := range r.task(t, "travel", a2aID).History {
		if m.Role == a2a.MessageRoleUser && len(m.Extensions) > 0 {
			last = m
		}
	}
	d, ok, derr := question.DecisionOf(last)
	if !ok || derr != nil || d.By.Kind != "person" || d.By.Name != "user:alice" || d.By.Via != "MCP (tasks-test)" || d.QuestionID != confirm {
		t.Errorf("decision record %+v (%v), want by person user:alice via MCP (tasks-test) for question %s", d, derr, confirm)
	}
}

// A decline through tasks/update reaches the agent as a decline (the
// approval rejects the task: a tool error as the result); tasks/cancel
// cancels the A2A task.
func TestATaskIsDeclinedOrCanceled(t *testing.T) {
	r := newRig(t, nil)
	w := wire{url: r.url, user: "alice", tasks: true}

	declined := w.create(t, "payment_approval", "Pay invoice INV-7: 80 EUR to ACME")
	id := declined["taskId"].(string)
	a2aID := declined["_meta"].(map[string]any)[mcpbridge.MetaTaskID].(string)
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	key, msg, props := asked(t, w.get(t, id))
	if !strings.Contains(msg, "Pay 80 EUR to ACME") || !strings.Contains(dump(props["approve"]), `"title":"Yes, pay"`) {
		t.Errorf("approval form %q %s", msg, dump(props))
	}
	if err := w.update(t, id, key, map[string]any{"action": "decline"}); err != nil {
		t.Fatal(err)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateRejected)
	done := w.get(t, id)
	result, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || result["isError"] != true || !strings.Contains(dump(result), "rejected") {
		t.Errorf("declined task %s, want completed with a tool error saying it was rejected", dump(done))
	}

	canceled := w.create(t, "payment_approval", "Pay invoice INV-8: 90 EUR to ACME")
	id = canceled["taskId"].(string)
	a2aID = canceled["_meta"].(map[string]any)[mcpbridge.MetaTaskID].(string)
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	if res := w.ok(t, "tasks/cancel", map[string]any{"taskId": id}); res["resultType"] != "complete" {
		t.Fatalf("tasks/cancel answered %s", dump(res))
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateCanceled)
	if done := w.get(t, id); done["status"] != "cancelled" {
		t.Errorf("canceled task %s, want cancelled", dump(done))
	}
	// Canceling an ended task is acknowledged and changes nothing.
	if res := w.ok(t, "tasks/cancel", map[string]any{"taskId": id}); res["resultType"] != "complete" {
		t.Errorf("a second tasks/cancel answered %s", dump(res))
	}
}

// A forged taskId, another caller's, a requestState passed off as a
// taskId, and a client that does not declare the extension each get a
// clear error; nothing of the task changes.
func TestAForgedOrForeignTaskIDIsRefused(t *testing.T) {
	r := newRig(t, nil)
	alice := wire{url: r.url, user: "alice", tasks: true}
	created := alice.create(t, "travel", "A trip")
	id := created["taskId"].(string)
	a2aID := created["_meta"].(map[string]any)[mcpbridge.MetaTaskID].(string)
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	key, _, _ := asked(t, alice.get(t, id))
	before := snapshot(r.task(t, "travel", a2aID))

	body, sig, _ := strings.Cut(id, ".")
	forged := body[:len(body)-2] + "xx." + sig
	plain := wire{url: r.url, user: "alice"}
	res := plain.ok(t, "tools/call", map[string]any{"name": "travel", "arguments": map[string]any{"message": "A trip"}})
	if res["resultType"] != "input_required" || res["requestState"] == nil {
		t.Fatalf("without the extension tools/call answered %s, want input_required", dump(res))
	}
	bob := wire{url: r.url, user: "bob", tasks: true}
	for _, c := range []struct {
		name   string
		w      wire
		id     string
		code   int64
		saying string
	}{
		{"forged", alice, forged, jsonrpc.CodeInvalidParams, "the taskId was not issued by this server"},
		{"not a task id", alice, "786512e2-9e0d-44bd-8f29-789f320fe840", jsonrpc.CodeInvalidParams, "the taskId was not issued by this server"},
		{"a requestState", alice, res["requestState"].(string), jsonrpc.CodeInvalidParams, "its signature does not match"},
		{"another caller's", bob, id, jsonrpc.CodeInvalidParams, "the task belongs to another caller"},
		{"undeclared", plain, id, mcp.CodeMissingRequiredClientCapabilities, mcpbridge.TasksExtension},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, m := range []map[string]any{
				{"method": "tasks/get", "params": map[string]any{"taskId": c.id}},
				{"method": "tasks/update", "params": map[string]any{"taskId": c.id, "inputResponses": map[string]any{key: accepted(map[string]any{"answer": "Rome"})}}},
				{"method": "tasks/cancel", "params": map[string]any{"taskId": c.id}},
			} {
				_, err := c.w.rpc(t, m["method"].(string), m["params"].(map[string]any))
				if err == nil || err.Code != c.code || !strings.Contains(err.Message, c.saying) {
					t.Errorf("%s: %v, want code %d saying %q", m["method"], err, c.code, c.saying)
				}
			}
			if after := snapshot(r.task(t, "travel", a2aID)); after != before {
				t.Errorf("the task changed: %s, was %s", after, before)
			}
		})
	}
	// Malformed responses for the outstanding key are refused by name.
	for _, bad := range []map[string]any{{"nothing": true}, {"action": "accept"}, {"action": "maybe"}} {
		err := alice.update(t, id, key, bad)
		if err == nil || err.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Message, key) {
			t.Errorf("response %s: %v, want invalid params naming %s", dump(bad), err, key)
		}
	}
	if after := snapshot(r.task(t, "travel", a2aID)); after != before {
		t.Errorf("the task changed: %s, was %s", after, before)
	}
}

// The server declares the extension in server/discover.
func TestTheServerDeclaresTheTasksExtension(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	caps := cs.InitializeResult().Capabilities
	if _, ok := caps.Extensions[mcpbridge.TasksExtension]; !ok {
		t.Errorf("capabilities %s do not declare %s", dump(caps), mcpbridge.TasksExtension)
	}
}

// While the agent is down, tasks/get and tasks/update are errors that
// say so, and nothing is lost: once it is back, the question is still
// outstanding under its key and is answered.
func TestATaskWaitsOutAnAgentThatIsDown(t *testing.T) {
	r := newRig(t, nil)
	w := wire{url: r.url, user: "alice", tasks: true}
	created := w.create(t, "payment_approval", "Pay invoice INV-9: 70 EUR to ACME")
	id := created["taskId"].(string)
	a2aID := created["_meta"].(map[string]any)[mcpbridge.MetaTaskID].(string)
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	key, _, _ := asked(t, w.get(t, id))

	r.env.Stop()
	if _, err := w.rpc(t, "tasks/get", map[string]any{"taskId": id}); err == nil || err.Code != jsonrpc.CodeInternalError || !strings.Contains(err.Message, "cannot be reached") {
		t.Errorf("tasks/get while the agent is down: %v, want an internal error saying it cannot be reached", err)
	}
	if err := w.update(t, id, key, accepted(map[string]any{"approve": "true"})); err == nil || err.Code != jsonrpc.CodeInternalError || !strings.Contains(err.Message, "cannot be reached") {
		t.Errorf("tasks/update while the agent is down: %v, want an internal error saying it cannot be reached", err)
	}

	r.env.Restart(t, agents(r.desk)...)
	if k, _, _ := asked(t, w.get(t, id)); k != key {
		t.Fatalf("after the agent is back the task asks %s, want %s", k, key)
	}
	if err := w.update(t, id, key, accepted(map[string]any{"approve": "true"})); err != nil {
		t.Fatal(err)
	}
	r.env.WaitState(t, a2aID, a2a.TaskStateCompleted)
	if done := w.get(t, id); done["status"] != "completed" || done["result"].(map[string]any)["isError"] == true {
		t.Errorf("task %s, want completed with the payment", dump(done))
	}
}

// slow asks for a word, then works on the answer until release is
// closed.
func slow(release <-chan struct{}) askpoint.AgentSpec {
	schema := json.RawMessage(`{"type":"object","required":["word"],"properties":{"word":{"type":"string"}}}`)
	return askpoint.AgentSpec{Name: "slow", Card: a2a.AgentCard{Name: "Slow", Description: "Works a while on an answer."},
		Agent: askpoint.Steps[struct{}, map[string]any]{
			OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Which word?", Schema: schema}, struct{}{}), nil
			},
			OnAnswer: func(ctx context.Context, _ *askpoint.Call, _ struct{}, a map[string]any) (askpoint.Outcome, error) {
				select {
				case <-release:
				case <-ctx.Done():
					return askpoint.Outcome{}, ctx.Err()
				}
				return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "word", Parts: a2a.ContentParts{a2a.NewTextPart(fmt.Sprint(a["word"]))}}), nil
			},
		}}
}

// tasks/update is acknowledged once the agent has taken the answer, not
// when it stops again: here the agent is still at work on it (its run
// waits on a channel closed only after the acknowledgement), and
// tasks/get says working; then it completes with the answer.
func TestTasksUpdateIsAcknowledgedWhileTheAgentWorks(t *testing.T) {
	release := make(chan struct{})
	closed := false
	t.Cleanup(func() {
		if !closed {
			close(release)
		}
	})
	r := newRig(t, nil, slow(release))
	w := wire{url: r.url, user: "alice", tasks: true}
	created := w.create(t, "slow", "go")
	id := created["taskId"].(string)
	a2aID := created["_meta"].(map[string]any)[mcpbridge.MetaTaskID].(string)
	r.env.WaitState(t, a2aID, a2a.TaskStateInputRequired)
	key, _, _ := asked(t, w.get(t, id))

	if err := w.update(t, id, key, accepted(map[string]any{"word": "Rome"})); err != nil {
		t.Fatalf("tasks/update: %v", err)
	}
	if got := w.get(t, id); got["status"] != "working" {
		t.Fatalf("tasks/get after the acknowledgement: %s, want working (the agent has not finished)", dump(got))
	}
	close(release)
	closed = true
	r.env.WaitState(t, a2aID, a2a.TaskStateCompleted)
	done := w.get(t, id)
	if done["status"] != "completed" || !strings.Contains(dump(done["result"]), "Rome") {
		t.Fatalf("done %s, want completed with the word", dump(done))
	}
}
