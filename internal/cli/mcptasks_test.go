package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
)

// stdioMCP is askpoint mcp --stdio spoken to line by line, as a desktop
// host of revision 2026-07-28 that declares the tasks extension does.
type stdioMCP struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	next int
}

func startStdioMCP(t *testing.T, bin string, args ...string) *stdioMCP {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"mcp", "--stdio"}, args...)...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &stdioMCP{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	s.out.Buffer(nil, 1<<20)
	t.Cleanup(s.stop)
	return s
}

// stop closes standard input, which ends the server, and waits for it.
func (s *stdioMCP) stop() {
	_ = s.in.Close()
	_ = s.cmd.Wait()
}

// rpc sends one request and reads lines until its response.
func (s *stdioMCP) rpc(t *testing.T, method string, params map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	s.next++
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "stdio-host", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"elicitation": map[string]any{"form": map[string]any{}}, "extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}},
	}
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": s.next, "method": method, "params": params})
	if _, err := s.in.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	for s.out.Scan() {
		var msg struct {
			ID     *int           `json:"id"`
			Result map[string]any `json:"result"`
			Error  map[string]any `json:"error"`
		}
		if err := json.Unmarshal(s.out.Bytes(), &msg); err != nil {
			t.Fatalf("not JSON-RPC on standard output: %q", s.out.Text())
		}
		if msg.ID != nil && *msg.ID == s.next {
			return msg.Result, msg.Error
		}
	}
	t.Fatalf("%s: standard output ended: %v", method, s.out.Err())
	return nil, nil
}

// A task created over stdio is answered with tasks/update by another
// askpoint mcp process after the first one exited: the taskId is all
// the state there is, signed with the key in the key file.
func TestMCPTaskOverStdioSurvivesARestart(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	args := []string{"--agent", env.AgentURL("expense"), "--key-file", filepath.Join(t.TempDir(), "mcp.key")}

	first := startStdioMCP(t, bin, args...)
	created, rpcErr := first.rpc(t, "tools/call", map[string]any{"name": "expense_agent", "arguments": map[string]any{"message": taxiReceipt}})
	if rpcErr != nil || created["resultType"] != "task" {
		t.Fatalf("tools/call: %v %s, want a task", rpcErr, dumpJSON(created))
	}
	id := created["taskId"].(string)
	a2aID := created["_meta"].(map[string]any)["dev.askpoint/taskId"].(string)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	describe := func(task *a2a.Task) string { return apitest.Text(task.Status.Message) }
	apitest.WaitState(t, ctx, c, &a2a.GetTaskRequest{ID: a2a.TaskID(a2aID)}, a2a.TaskStateInputRequired, describe)
	first.stop()

	second := startStdioMCP(t, bin, args...)
	task, rpcErr := second.rpc(t, "tasks/get", map[string]any{"taskId": id})
	if rpcErr != nil || task["status"] != "input_required" {
		t.Fatalf("tasks/get after the restart: %v %s", rpcErr, dumpJSON(task))
	}
	var key string
	for k := range task["inputRequests"].(map[string]any) {
		key = k
	}
	if !strings.Contains(dumpJSON(task["inputRequests"]), "Which cost centre") {
		t.Errorf("inputRequests %s, want the cost centre question", dumpJSON(task["inputRequests"]))
	}
	ack, rpcErr := second.rpc(t, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"costCentre": "CC-4420"}}}})
	if rpcErr != nil || ack["resultType"] != "complete" {
		t.Fatalf("tasks/update: %v %s", rpcErr, dumpJSON(ack))
	}
	apitest.WaitState(t, ctx, c, &a2a.GetTaskRequest{ID: a2a.TaskID(a2aID)}, a2a.TaskStateCompleted, describe)
	done, rpcErr := second.rpc(t, "tasks/get", map[string]any{"taskId": id})
	if rpcErr != nil || done["status"] != "completed" || !strings.Contains(dumpJSON(done["result"]), `"costCentre":"CC-4420"`) {
		t.Fatalf("tasks/get at the end: %v %s, want the filed expense as the result", rpcErr, dumpJSON(done))
	}
}
