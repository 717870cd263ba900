package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

// TestSendAndAskOverGRPC: `send --transport GRPC` walks the worked example
// to its data answer, and `ask --transport GRPC` with a bearer token
// answers by policy: the token reaches gRPC as metadata.
func TestSendAndAskOverGRPC(t *testing.T) {
	const token = "alice-token-0123456789"
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.Tokens = map[string]string{token: "alice"} }})
	url := env.AgentURL("expense")
	t.Setenv("ASKPOINT_TOKEN", "")

	bin := buildAskpoint(t)
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"rules":[{"name":"cc","when":{"field":"costCentre"},"answer":"CC-4410"}],"limits":{"fields":["costCentre"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, stream := range []string{"--stream=false", "--stream"} {
		out, stderr, code := exe(t, bin, "", "ask", url, taxiReceipt, "--transport", "GRPC", "--token", token, "--policy", policy, "--inbox", filepath.Join(dir, "inbox.db"), stream)
		if code != 0 {
			t.Fatalf("askpoint ask --transport GRPC %s: exit %d\nstdout:\n%s\nstderr:\n%s", stream, code, out, stderr)
		}
		mustContain(t, "askpoint ask --transport GRPC", out, "state:   TASK_STATE_COMPLETED", `"costCentre":"CC-4410"`)
	}
	out, stderr, code := exe(t, bin, "", "ask", url, taxiReceipt, "--transport", "GRPC", "--policy", policy, "--inbox", filepath.Join(dir, "inbox.db"))
	if code == 0 {
		t.Fatalf("askpoint ask --transport GRPC without a token succeeded:\n%s", out)
	}
	mustContain(t, "askpoint ask --transport GRPC without a token", stderr, "bearer token")

	open := apitest.Start(t, apitest.Options{Quiet: true})
	out, stderr, code = run(t, "send", "--transport", "GRPC", open.AgentURL("expense"), taxiReceipt)
	if code != 0 {
		t.Fatalf("send --transport GRPC exit %d, stderr %s", code, stderr)
	}
	mustContain(t, "send --transport GRPC", out, "state:   TASK_STATE_INPUT_REQUIRED", "options: CC-4410, CC-4420", "answer:  askpoint send --transport GRPC --task ")
	task := taskLine.FindStringSubmatch(out)
	q := questionLine.FindStringSubmatch(out)
	if task == nil || q == nil {
		t.Fatalf("output names no task or question ID:\n%s", out)
	}
	out, stderr, code = run(t, "send", "--transport", "GRPC", "--task", task[1], "--data", `{"questionId":"`+q[1]+`","costCentre":"CC-4410"}`, open.AgentURL("expense"))
	if code != 0 {
		t.Fatalf("send --transport GRPC (data answer) exit %d, stderr %s", code, stderr)
	}
	mustContain(t, "send --transport GRPC (data answer)", out, "state:   TASK_STATE_COMPLETED", "EXP-")
}
