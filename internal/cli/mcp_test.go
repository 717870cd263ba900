package cli_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/cli"
)

var servingLine = regexp.MustCompile(`^serving MCP on (http://\S+/mcp)$`)

// startMCP runs "askpoint mcp" on a free loopback port; it is killed
// when the test ends.
func startMCP(t *testing.T, bin string, args ...string) *listener {
	t.Helper()
	return startListening(t, bin, servingLine, append([]string{"mcp", "--listen", "127.0.0.1:0"}, args...)...)
}

func mcpSession(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	})
	cs, err := c.Connect(t.Context(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// askCostCentre calls the expense agent's tool and returns the result,
// which asks for the cost centre.
func askCostCentre(t *testing.T, cs *mcp.ClientSession) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "expense_agent", Arguments: map[string]any{"message": taxiReceipt}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 {
		t.Fatalf("want the cost centre question, got %+v", res)
	}
	for k := range res.InputRequests {
		return k, res
	}
	return "", nil
}

func answerCostCentre(t *testing.T, cs *mcp.ClientSession, key, state string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "expense_agent", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"costCentre": "CC-4420"}}},
		RequestState:   state})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The question asked before a restart of askpoint mcp is answered after
// it: the bridge keeps nothing a restart loses (the key is in its file).
func TestMCPServesAgentsAndSurvivesARestart(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	keyFile := filepath.Join(t.TempDir(), "mcp.key")
	args := []string{"--agent", env.AgentURL("expense"), "--key-file", keyFile}

	first := startMCP(t, bin, args...)
	key, res := askCostCentre(t, mcpSession(t, &mcp.StreamableClientTransport{Endpoint: first.url}))
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v, want mode 0600", fi, err)
	}
	_ = first.cmd.Process.Kill()
	<-first.done

	done := answerCostCentre(t, mcpSession(t, &mcp.StreamableClientTransport{Endpoint: startMCP(t, bin, args...).url}), key, res.RequestState)
	if done.IsError || !strings.Contains(dumpJSON(done.StructuredContent), `"costCentre":"CC-4420"`) {
		t.Fatalf("after the restart: %s", dumpJSON(done))
	}
}

// A desktop host starts askpoint mcp --stdio and speaks MCP on its pipes.
func TestMCPOverStdio(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	cmd := exec.CommandContext(t.Context(), bin, "mcp", "--stdio", "--agent", env.AgentURL("expense"), "--key-file", filepath.Join(t.TempDir(), "mcp.key"))
	cs := mcpSession(t, &mcp.CommandTransport{Command: cmd})
	key, res := askCostCentre(t, cs)
	done := answerCostCentre(t, cs, key, res.RequestState)
	if done.IsError || !strings.Contains(dumpJSON(done.StructuredContent), `"costCentre":"CC-4420"`) {
		t.Fatalf("result %s", dumpJSON(done))
	}
}

func TestMCPRefusesWhatItCannotServeSafely(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.key")
	if err := os.WriteFile(open, bytes.Repeat([]byte{1}, 32), 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--listen", "0.0.0.0:8421", "--agent", "http://127.0.0.1:1/x"}, 2, "is not a loopback address"},
		{[]string{"--key-file", open, "--agent", "http://127.0.0.1:1/x"}, 1, "readable by group or others"},
		{[]string{"--key-file", short, "--agent", "http://127.0.0.1:1/x"}, 1, "holds 3 bytes"},
		{[]string{"--key-file", filepath.Join(dir, "new.key"), "--agent", "http://127.0.0.1:1/x"}, 1, "fetch the agent card from http://127.0.0.1:1/x"},
		{[]string{"--key-file", filepath.Join(dir, "inbox.key"), "--inbox", "127.0.0.1:8420/inbox", "--agent", "http://127.0.0.1:1/x"}, 2, "--inbox: "},
		{[]string{}, 2, "Usage: askpoint mcp"},
	} {
		var out, errb bytes.Buffer
		code := cli.Main(append([]string{"mcp"}, c.args...), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.says) {
			t.Errorf("askpoint mcp %v: exit %d, stderr %q; want %d saying %q", c.args, code, errb.String(), c.code, c.says)
		}
	}
}

func dumpJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// withToken sends a bearer token with every request.
type withToken string

func (tok withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tok))
	return http.DefaultTransport.RoundTrip(r)
}

// With --tokens, every MCP caller presents one, and a requestState is good
// for the caller it was issued to only.
func TestMCPTokensNameTheCallers(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"alice":"alice-token-0123456789","bob":"bob-token-0123456789"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l := startMCP(t, bin, "--agent", env.AgentURL("expense"), "--key-file", filepath.Join(dir, "mcp.key"), "--tokens", tokens)
	as := func(token string) mcp.Transport {
		return &mcp.StreamableClientTransport{Endpoint: l.url, HTTPClient: &http.Client{Transport: withToken(token)}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "cli-test", Version: "1"}, nil)
	if cs, err := c.Connect(t.Context(), as("wrong-token-0123456789"), nil); err == nil {
		_ = cs.Close()
		t.Fatal("a caller with an unknown token was served")
	}
	key, res := askCostCentre(t, mcpSession(t, as("alice-token-0123456789")))
	_, err := mcpSession(t, as("bob-token-0123456789")).CallTool(t.Context(), &mcp.CallToolParams{Name: "expense_agent", Arguments: map[string]any{},
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"costCentre": "CC-4420"}}},
		RequestState:   res.RequestState})
	if err == nil || !strings.Contains(err.Error(), "belongs to another caller") {
		t.Fatalf("bob used alice's requestState: %v", err)
	}
	done := answerCostCentre(t, mcpSession(t, as("alice-token-0123456789")), key, res.RequestState)
	if done.IsError || !strings.Contains(dumpJSON(done.StructuredContent), `"costCentre":"CC-4420"`) {
		t.Fatalf("alice's answer: %s", dumpJSON(done))
	}
}
