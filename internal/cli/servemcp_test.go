package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// confirmServer is an MCP server (go-sdk, stateless) with one tool that
// asks to confirm before it answers.
func confirmServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "ops", Version: "1"}, nil)
	in := map[string]any{"type": "object", "required": []any{"service"}, "properties": map[string]any{"service": map[string]any{"type": "string"}}}
	s.AddTool(&mcp.Tool{Name: "restart_service", Description: "Restarts a service.", InputSchema: in}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var args struct{ Service string }
		_ = json.Unmarshal(req.Params.Arguments, &args)
		r, ok := req.Params.InputResponses["confirm"].(*mcp.ElicitResult)
		if !ok {
			return &mcp.CallToolResult{RequestState: "confirm:" + args.Service, InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
				Mode: "form", Message: "Restart " + args.Service + " now?",
				RequestedSchema: map[string]any{"type": "object", "required": []any{"sure"}, "properties": map[string]any{"sure": map[string]any{"type": "boolean", "title": "Sure"}}},
			}}}, nil
		}
		if r.Action != "accept" || r.Content["sure"] != true || req.Params.RequestState != "confirm:"+args.Service {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Not restarted."}}}, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Restarted " + args.Service + "."}}}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var baseLine = regexp.MustCompile(`^askpoint: listening on (http://\S+)$`)

// startServe runs "askpoint serve" on a free port and returns its base URL
// once it lists the agent.
func startServe(t *testing.T, bin string, args ...string) (*listener, string) {
	t.Helper()
	l := startListening(t, bin, regexp.MustCompile(`^askpoint: data in (.+)$`), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	for {
		if m := baseLine.FindStringSubmatch(l.next(t)); m != nil {
			return l, m[1]
		}
	}
}

// askpoint serve --mcp serves each tool as an agent named after it; its
// question (the tool's elicitation) survives a SIGKILL of askpoint
// between the question and the answer.
func TestServeMCPToolSurvivesAKill(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	mcpURL := confirmServer(t)
	db := filepath.Join(t.TempDir(), "askpoint.db")
	first, base := startServe(t, bin, "--db", db, "--mcp", mcpURL)

	ctx := t.Context()
	card, err := client.Card(ctx, base+"/restart-service", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(card.Description, "MCP tool restart_service of the MCP server at "+mcpURL) {
		t.Errorf("card description %q; want the tool and its server", card.Description)
	}
	c, err := grpcdial.Dial(ctx, base+"/restart-service", client.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("billing"))})
	c.Destroy()
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok || q.Text != "Restart billing now?" {
		t.Fatalf("task %s: %q, want the tool's question (%v)", text.StateWord(task.Status.State), text.Of(task.Status.Message), err)
	}
	_ = first.cmd.Process.Kill() // SIGKILL
	<-first.done

	_, base = startServe(t, bin, "--db", db, "--mcp", mcpURL)
	c, err = grpcdial.Dial(ctx, base+"/restart-service", client.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	dp := a2a.NewDataPart(map[string]any{"questionId": q.ID, "sure": true})
	dp.MediaType = question.MediaTypeJSON
	res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, dp)})
	if err != nil {
		t.Fatal(err)
	}
	done := res.(*a2a.Task)
	if done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) == 0 || text.Parts(done.Artifacts[0].Parts, "") != "Restarted billing." {
		t.Fatalf("after the kill: %s %q %+v", text.StateWord(done.Status.State), text.Of(done.Status.Message), done.Artifacts)
	}
}

// A server that cannot be listed stops askpoint serve at start, naming it.
func TestServeMCPRefusesAServerItCannotList(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	_, stderr, code := exe(t, bin, "", "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "a.db"), "--mcp", "http://127.0.0.1:1/mcp")
	if code != 1 || !strings.Contains(stderr, "--mcp http://127.0.0.1:1/mcp") || !strings.Contains(stderr, "cannot be reached") {
		t.Errorf("exit %d, stderr %q; want 1 naming the server", code, stderr)
	}
}
