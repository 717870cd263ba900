package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
)

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func dialAs(t *testing.T, url, token string) *a2aclient.Client {
	t.Helper()
	c, err := client.Dial(t.Context(), url, &http.Client{Transport: bearer{token}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// TestServedOrchestratorsWorkWithTokensRequired runs the binary with bearer
// tokens required: the finance assistant and the planning workflow reach
// the expense agent on the same server with a credential of their own. The
// assistant charges alice's default cost centre without asking her; the
// workflow suspends for bob and finishes with his answer.
func TestServedOrchestratorsWorkWithTokensRequired(t *testing.T) {
	bin := buildAskpoint(t)
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-9876543210ab"
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"),
		"--token", "alice="+aliceToken, "--token", "bob="+bobToken, "--cost-centre", "alice=CC-4420")
	if err != nil {
		t.Fatal(err)
	}
	// The line comes right after the listening line startServer waits for.
	srv.log.WaitFor("bearer tokens configured", 5*time.Second)
	if !strings.Contains(srv.log.String(), "2 bearer tokens configured") {
		t.Errorf("start-up output does not count the 2 callers' tokens (the server's own is not a caller's):\n%s", srv.log)
	}
	ctx := t.Context()
	receipt := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))

	alice := dialAs(t, srv.url+"/assistant", aliceToken)
	res, err := alice.SendMessage(ctx, &a2a.SendMessageRequest{Message: receipt})
	if err != nil {
		t.Fatalf("alice → assistant: %v", err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) == 0 {
		t.Fatalf("alice's task is %v (%v); want completed without a question, charged to her default", task.Status.State, task.Status.Message)
	}
	if got := crashPartsText(task.Artifacts[0].Parts); !strings.Contains(got, "CC-4420") {
		t.Fatalf("alice's expense = %q, want it charged to CC-4420", got)
	}

	bob := dialAs(t, srv.url+"/planning", bobToken)
	res, err = bob.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
	if err != nil {
		t.Fatalf("bob → planning: %v", err)
	}
	run := res.(*a2a.Task)
	q, ok, err := question.FromMessage(run.Status.Message)
	if run.Status.State != a2a.TaskStateInputRequired || !ok || err != nil || q.About["participant"] != "expense" {
		t.Fatalf("bob's run is %v with question %+v (ok=%v, err=%v); want input-required with the expense agent's request", run.Status.State, q, ok, err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, crashData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	m.TaskID = run.ID
	res, err = bob.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("bob answers: %v", err)
	}
	if done := res.(*a2a.Task); done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("bob's run after his answer is %v (%v), want completed", done.Status.State, done.Status.Message)
	}
}
