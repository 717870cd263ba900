package servertest_test

// Helpers for the tests that keep the lessons of the A2A conformance suite
// (a2aproject/a2a-tck, docs/CONFORMANCE.md): raw JSON-RPC and HTTP+JSON
// calls against a real server, so that what is checked is the bytes on the
// wire, not what the a2a-go client makes of them.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/internal/apitest"
)

// tckResubscribeDelay is how long the conformance agent's
// test-resubscribe-message-id tasks stay working in these tests.
const tckResubscribeDelay = 300 * time.Millisecond

// startConformance serves agent as the conformance agent, with its card.
func startConformance(t *testing.T, agent askpoint.Agent) *apitest.Env {
	t.Helper()
	return apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{
		{Name: conformance.Name, Agent: agent, Card: conformance.Card()},
	}})
}

// startTCK serves the conformance agent with the TCK timings.
func startTCK(t *testing.T) *apitest.Env {
	t.Helper()
	return startConformance(t, conformance.AgentWith(tckResubscribeDelay))
}

// eachTCK is eachServed for the conformance agent with the TCK timings.
func eachTCK(t *testing.T, f func(t *testing.T, on served)) {
	t.Helper()
	eachServed(t, startTCK, conformance.Name, f)
}

var tckRPCID atomic.Int64

// tckResponse is a raw HTTP response with its body decoded as JSON (nil
// when it is not JSON).
type tckResponse struct {
	Status int
	Header http.Header
	Raw    []byte
	JSON   map[string]any
}

// tckDo sends one request with the headers given as name, value pairs and
// reads the whole response.
func tckDo(t *testing.T, method, url string, body []byte, hdr ...string) *tckResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	out := &tckResponse{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.JSON)
	return out
}

// jsonHeaders are the headers of an ordinary A2A call.
var jsonHeaders = []string{"Content-Type", "application/json", "A2A-Version", "1.0"}

// tckREST calls the named agent's HTTP+JSON binding; body is encoded as
// given (nil for none).
func tckREST(t *testing.T, env *apitest.Env, agent, method, path string, body any, hdr ...string) *tckResponse {
	t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	return tckDo(t, method, env.AgentURL(agent)+"/rest"+path, raw, append(append([]string(nil), jsonHeaders...), hdr...)...)
}

// tckRPC calls a JSON-RPC method of the named agent with params encoded as
// they are given (so that tests choose the spelling of every key); hdr adds
// or overrides headers.
func tckRPC(t *testing.T, env *apitest.Env, agent, method string, params any, hdr ...string) *tckResponse {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": tckRPCID.Add(1), "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return tckDo(t, http.MethodPost, env.AgentURL(agent)+"/jsonrpc", body, append(append([]string(nil), jsonHeaders...), hdr...)...)
}

// result is the JSON-RPC result object; the test fails on an error.
func (r *tckResponse) result(t *testing.T, call string) map[string]any {
	t.Helper()
	if r.JSON == nil {
		t.Fatalf("%s: response is not JSON (status %d): %s", call, r.Status, r.Raw)
	}
	if e, ok := r.JSON["error"]; ok {
		t.Fatalf("%s: error %v", call, e)
	}
	res, ok := r.JSON["result"].(map[string]any)
	if !ok {
		t.Fatalf("%s: no result object in %s", call, r.Raw)
	}
	return res
}

// rpcCode is the JSON-RPC error code, 0 when there is none.
func (r *tckResponse) rpcCode() int {
	e, ok := r.JSON["error"].(map[string]any)
	if !ok {
		return 0
	}
	c, _ := e["code"].(float64)
	return int(c)
}

// wantRPCError requires a JSON-RPC error response with code.
func (r *tckResponse) wantRPCError(t *testing.T, call string, code int) {
	t.Helper()
	if r.JSON == nil {
		t.Fatalf("%s: response is not JSON (status %d, Content-Type %q): %s", call, r.Status, r.Header.Get("Content-Type"), r.Raw)
	}
	if got := r.rpcCode(); got != code {
		t.Fatalf("%s: error code %d, want %d; response %s", call, got, code, r.Raw)
	}
}

// wantRESTError requires an HTTP+JSON error response with status and the
// AIP-193 error object.
func (r *tckResponse) wantRESTError(t *testing.T, call string, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: status %d, want %d; body %s", call, r.Status, status, r.Raw)
	}
	e, ok := r.JSON["error"].(map[string]any)
	if !ok || e["code"] != float64(status) || e["status"] == "" || e["message"] == "" {
		t.Fatalf("%s: body %s, want an error object with code %d, status and message", call, r.Raw, status)
	}
}

// tckSend sends a first message with the given messageId to the named agent
// over JSON-RPC and returns the result (a task or a message).
func tckSend(t *testing.T, env *apitest.Env, agent, messageID, text string, extra map[string]any) map[string]any {
	t.Helper()
	msg := map[string]any{"role": "ROLE_USER", "messageId": messageID, "parts": []any{map[string]any{"text": text}}}
	for k, v := range extra {
		msg[k] = v
	}
	return tckRPC(t, env, agent, "SendMessage", map[string]any{"message": msg}).result(t, "SendMessage "+messageID)
}

// tckTask is the task of a SendMessage result.
func tckTask(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	task, ok := res["task"].(map[string]any)
	if !ok {
		t.Fatalf("result %v holds no task", res)
	}
	return task
}

// tckState is a task object's state.
func tckState(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return s
}

// tckID makes a messageId with the given prefix that no other test uses.
func tckID(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), tckRPCID.Add(1))
}

// sseEvents reads the data lines of an SSE body, each decoded as JSON.
func sseEvents(t *testing.T, r io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data:") {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(line, "data:"))), &ev); err != nil {
			t.Fatalf("SSE data %q is not JSON: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}
