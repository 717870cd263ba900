package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

const mcpServerSDKPackage = "@modelcontextprotocol/server"

// A tool of an MCP server written with the official TypeScript server SDK
// (@modelcontextprotocol/server 2.x, e2e/mcpserverjs) served by askpoint
// serve --mcp: its input_required elicitation is the task's question
// (labelled choices, bounds), an answer out of bounds is re-asked by
// askpoint, a right one books, and a decline reaches the tool.
func TestMCPTypeScriptServerToolAsAnAgent(t *testing.T) {
	node, npm := requireTool(t, "node"), requireTool(t, "npm")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	jsDir := filepath.Join(root, "e2e", "mcpserverjs")
	ensureNodeModules(t, npm, jsDir, mcpServerSDKPackage)
	mcpURL := startListening(t, node, "listening on ", filepath.Join(jsDir, "server.mjs"))

	bin := buildAskpoint(t)
	base := startListening(t, bin, "askpoint: listening on ", "serve", "--addr", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "askpoint.db"), "--mcp", mcpURL)
	ctx := t.Context()
	c, err := grpcdial.Dial(ctx, base+"/book-trip", client.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	send := func(m *a2a.Message) (*a2a.Task, *question.Question) {
		t.Helper()
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*a2a.Task)
		if !ok {
			t.Fatalf("reply %T, want a task", res)
		}
		q, _, _ := question.FromMessage(task.Status.Message)
		return task, q
	}
	answer := func(task *a2a.Task, q *question.Question, v map[string]any) (*a2a.Task, *question.Question) {
		v["questionId"] = q.ID
		dp := a2a.NewDataPart(v)
		dp.MediaType = question.MediaTypeJSON
		return send(a2a.NewMessageForTask(a2a.MessageRoleUser, task, dp))
	}

	task, q := send(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Lisbon")))
	if q == nil || q.Text != "How do you want to travel to Lisbon?" || len(q.Options) != 2 || q.Options[1].Label != "Business" {
		t.Fatalf("task %s: %q, options %+v; want the tool's question with labelled options", text.StateWord(task.Status.State), text.Of(task.Status.Message), q)
	}
	task, q2 := answer(task, q, map[string]any{"class": "biz", "nights": 40})
	if q2 == nil || q2.Attempt != 2 {
		t.Fatalf("40 nights: task %s %q; want askpoint's re-ask", text.StateWord(task.Status.State), text.Of(task.Status.Message))
	}
	done, _ := answer(task, q2, map[string]any{"class": "biz", "nights": 3, "refund": true})
	if done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) == 0 {
		t.Fatalf("task %s %q; want completed", text.StateWord(done.Status.State), text.Of(done.Status.Message))
	}
	parts := done.Artifacts[0].Parts
	if got := text.Parts(parts, "\n"); !strings.Contains(got, "Booked TRIP-Lisbon-biz-3") {
		t.Errorf("artifact text %q", got)
	}
	if d, ok := parts[len(parts)-1].Content.(a2a.Data); !ok || d.Value.(map[string]any)["refund"] != true {
		t.Errorf("artifact parts %+v; want structuredContent as a data part", parts)
	}

	other, q3 := send(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Porto")))
	if q3 == nil {
		t.Fatalf("Porto: %q; want the question", text.Of(other.Status.Message))
	}
	dp := a2a.NewDataPart(map[string]any{"questionId": q3.ID, "action": question.ActionDecline})
	dp.MediaType = question.MediaTypeJSON
	declined, _ := send(a2a.NewMessageForTask(a2a.MessageRoleUser, other, dp))
	if declined.Status.State != a2a.TaskStateCompleted || !strings.Contains(text.Parts(declined.Artifacts[0].Parts, ""), "you chose decline") {
		t.Errorf("declined: %s %q", text.StateWord(declined.Status.State), text.Of(declined.Status.Message))
	}
}
