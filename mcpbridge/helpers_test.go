package mcpbridge_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/examples/travel"
	"github.com/askpoint/askpoint/mcpbridge"
)

// rig is askpoint's example agents on a real server, a bridge to them
// served over Streamable HTTP on 127.0.0.1, and what a test needs to
// look at both sides.
type rig struct {
	env    *askpointtest.Env
	bridge *mcpbridge.Bridge
	url    string // the bridge's /mcp endpoint
	desk   *travel.Desk
	cfg    mcpbridge.Config
	srv    *httptest.Server
}

// agents are the example agents every rig serves.
func agents(desk *travel.Desk) []askpoint.AgentSpec {
	return []askpoint.AgentSpec{
		{Name: "approval", Agent: approval.Agent(), Card: approval.Card()},
		{Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil), Card: expense.Card()},
		{Name: "travel", Agent: travel.Agent(desk), Card: travel.Card()},
	}
}

// newRig starts the agents (and extra ones) and a bridge to each of them;
// tune adjusts the bridge's config. Callers authenticate with a bearer
// token that names them ("alice" is user alice).
func newRig(t *testing.T, tune func(*mcpbridge.Config), extra ...askpoint.AgentSpec) *rig {
	t.Helper()
	desk := &travel.Desk{}
	specs := append(agents(desk), extra...)
	env := askpointtest.Start(t, specs...)
	cfg := mcpbridge.Config{Key: testKey(t)}
	for _, s := range specs {
		cfg.Agents = append(cfg.Agents, mcpbridge.Agent{URL: env.AgentURL(s.Name)})
	}
	if tune != nil {
		tune(&cfg)
	}
	b, srv := serveBridge(t, cfg)
	return &rig{env: env, bridge: b, url: srv.URL + "/mcp", desk: desk, cfg: cfg, srv: srv}
}

// serveBridge builds a bridge and serves it at /mcp on 127.0.0.1, behind
// a bearer token that names the caller.
func serveBridge(t *testing.T, cfg mcpbridge.Config) (*mcpbridge.Bridge, *httptest.Server) {
	t.Helper()
	b, err := mcpbridge.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, nil)(b.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return b, srv
}

func testKey(t *testing.T) []byte {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return key
}

// tokenTransport sends a bearer token with every request.
type tokenTransport struct{ token string }

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tt.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session as user with the go-sdk client. With a nil
// elicit the client leaves input_required results to the test (it retries
// by hand); with one, the SDK fulfils them and retries itself. version ""
// is the newest revision; with an older one, the client has no multi
// round-trip requests and elicit answers elicitation/create.
func (r *rig) connect(t *testing.T, user, version string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{ElicitationHandler: elicit}
	if elicit == nil || version != "" {
		// A client of an older revision has no multi round-trip requests.
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "bridge-test", Version: "1"}, opts)
	tr := &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: tokenTransport{token: user}}}
	cs, err := c.Connect(t.Context(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls tool with a message and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, tool, message string) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": message}})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

// form is the one form of an input_required result: its key and params.
func form(t *testing.T, res *mcp.CallToolResult) (string, *mcp.ElicitParams) {
	t.Helper()
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		t.Fatalf("want an input_required result with one form and a requestState, got %s", dump(res))
	}
	for k, ir := range res.InputRequests {
		ep, ok := ir.(*mcp.ElicitParams)
		if !ok {
			t.Fatalf("input request %q is a %T, want an elicitation", k, ir)
		}
		return k, ep
	}
	panic("unreachable")
}

// retry retries tool with responses and state.
func retry(t *testing.T, cs *mcp.ClientSession, tool string, responses mcp.InputResponseMap, state string) (*mcp.CallToolResult, error) {
	t.Helper()
	return cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, InputResponses: responses, RequestState: state})
}

// answer fills in the form of res with content and retries.
func answer(t *testing.T, cs *mcp.ClientSession, tool string, res *mcp.CallToolResult, content map[string]any) *mcp.CallToolResult {
	t.Helper()
	key, _ := form(t, res)
	next, err := retry(t, cs, tool, mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: content}}, res.RequestState)
	if err != nil {
		t.Fatalf("answer %v: %v", content, err)
	}
	return next
}

// properties is a form's requestedSchema as generic JSON.
func properties(t *testing.T, ep *mcp.ElicitParams) map[string]any {
	t.Helper()
	raw, err := json.Marshal(ep.RequestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// text is a result's text content joined.
func text(res *mcp.CallToolResult) string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return strings.Join(out, "\n")
}

func dump(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// task reads an A2A task from the server under test.
func (r *rig) task(t *testing.T, agent string, id any) *a2a.Task {
	t.Helper()
	s, _ := id.(string)
	task, err := r.env.Client(t, agent).GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(s)})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// snapshot is what a test compares to see that nothing of a task changed.
func snapshot(task *a2a.Task) string {
	var b bytes.Buffer
	b.WriteString(string(task.Status.State))
	if task.Status.Message != nil {
		b.WriteString(" " + task.Status.Message.ID)
	}
	for _, m := range task.History {
		b.WriteString(" " + m.ID)
	}
	return b.String()
}

// rpcError is err as a JSON-RPC error with code invalid params, whose
// message has every one of words.
func rpcError(t *testing.T, err error, words ...string) {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("want a JSON-RPC error, got %v", err)
	}
	if we.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("code = %d, want %d (invalid params); message %q", we.Code, jsonrpc.CodeInvalidParams, we.Message)
	}
	for _, w := range words {
		if !strings.Contains(we.Message, w) {
			t.Errorf("error %q does not say %q", we.Message, w)
		}
	}
}
