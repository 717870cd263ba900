//go:build unix

package cli_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// Issue 23, finding 1: a forged push notification must not redirect a
// person's answer, and the caller's bearer token, to an attacker. Before,
// a statusUpdate for a real pending task with ?agent=http://attacker and a
// new questionId closed the real item and opened one that pointed at the
// attacker and inherited the original request.
func TestForgedPushNotificationsChangeNoItem(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	agentURL := env.AgentURL("expense")
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	attacker := &apitest.AuthLog{}
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attacker.Add(r)
		http.Error(w, "no", http.StatusNotFound)
	}))
	t.Cleanup(evil.Close)

	const pushToken = "push-token-0123456789"
	item, taskID := deferExpense(t, bin, agentURL, inboxPath, taxiReceipt)
	l := startListener(t, bin, "--inbox", inboxPath, "--token", pushToken, "--agent", agentURL)

	forged := func(agent string, st a2a.TaskStatus) int {
		target := l.url + "?agent=" + url.QueryEscape(agent)
		return push(t, target, pushToken, &a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(taskID), ContextID: "ctx", Status: st})
	}
	evilQuestion := func() *a2a.Message {
		q := question.Question{ID: "q-evil", Text: "Your password, please?", Schema: []byte(`{"type":"object","properties":{"password":{"type":"string"}}}`)}
		m := q.Message()
		m.TaskID, m.ContextID = a2a.TaskID(taskID), "ctx"
		return m
	}
	// 1. Another agent's URL for the real task: refused.
	if code := forged(evil.URL, a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: evilQuestion()}); code == http.StatusNoContent {
		t.Errorf("a notification naming another agent for a known task was taken (204)")
	}
	// 2. The real agent's URL with a made-up question: the agent itself
	// says otherwise, and that is what counts.
	forged(agentURL, a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: evilQuestion()})
	// 3. A made-up end of the task: the agent says it still waits.
	forged(agentURL, a2a.TaskStatus{State: a2a.TaskStateCanceled})
	// 4. A task the inbox does not know, from an agent it was not told of.
	target := l.url + "?agent=" + url.QueryEscape(evil.URL)
	push(t, target, pushToken, &a2a.TaskStatusUpdateEvent{TaskID: "t-unknown", ContextID: "ctx", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: evilQuestion()}})

	out, _, code := exe(t, bin, "", "inbox", "--inbox", inboxPath, "--all")
	if code != 0 {
		t.Fatalf("askpoint inbox --all: exit %d", code)
	}
	if strings.Contains(out, evil.URL) || strings.Contains(out, "password") || strings.Contains(out, "closed") {
		t.Fatalf("forged notifications changed the inbox:\n%s", out)
	}
	mustContain(t, "askpoint inbox --all", out, item+"  ", "open", agentURL, "Which cost centre")

	out, stderr, code := exe(t, bin, "1\n", "answer", item, "--inbox", inboxPath, "--token", "caller-secret-0123")
	if code != 0 {
		t.Fatalf("askpoint answer: exit %d\n%s\n%s", code, out, stderr)
	}
	mustContain(t, "askpoint answer", out, "TASK_STATE_COMPLETED")
	if got := attacker.All(); len(got) != 0 {
		t.Errorf("the attacker received %q", got)
	}
}
