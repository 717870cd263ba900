package servertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
)

func sendText(t *testing.T, env *apitest.Env, agent, text string) *a2a.Task {
	t.Helper()
	c := env.Client(t, agent, a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
	if err != nil {
		t.Fatalf("SendMessage(%q) error = %v", text, err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage(%q) = %T, want a task", text, res)
	}
	return task
}

func resultText(task *a2a.Task) string {
	txt, _ := artifactText(task, "result")
	return txt
}

func TestAuthRequiredSaysWhatIsNeededWithoutACredential(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	task := sendText(t, env, "script", "auth")
	if task.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("state = %v, want %v", task.Status.State, a2a.TaskStateAuthRequired)
	}
	if task.Status.Message == nil || !strings.Contains(task.Status.Message.Parts[0].Text(), "Sign in to the calendar service") {
		t.Fatalf("status message = %+v, want one saying what credential is needed", task.Status.Message)
	}
}

func TestAuthRequiredResumesWhenTheServerIsToldTheCredentialArrived(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	task := sendText(t, env, "script", "auth")
	if err := env.Server.CredentialArrived(t.Context(), string(task.ID), map[string]any{"scheme": "oauth2"}); err != nil {
		t.Fatalf("CredentialArrived() = %v", err)
	}
	got := waitFor(t, env, "script", task.ID, a2a.TaskStateCompleted)
	if txt := resultText(got); txt != "authorized by go call" {
		t.Errorf("artifact = %q, want %q", txt, "authorized by go call")
	}
	if err := env.Server.CredentialArrived(t.Context(), string(task.ID), nil); err == nil {
		t.Errorf("CredentialArrived() on a completed task = nil, want an error")
	}
}

func TestAuthRequiredResumesOnAFollowUpMessage(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	task := sendText(t, env, "script", "auth")
	c := env.Client(t, "script", a2a.TransportProtocolHTTPJSON)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("done, I signed in")),
	})
	if err != nil {
		t.Fatalf("SendMessage(follow-up) error = %v", err)
	}
	got := res.(*a2a.Task)
	if got.Status.State != a2a.TaskStateCompleted || resultText(got) != "authorized by message" {
		t.Fatalf("after follow-up: state %v, artifact %q; want completed, %q", got.Status.State, resultText(got), "authorized by message")
	}
}

func TestAuthRequiredSurvivesARestart(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	task := sendText(t, env, "script", "auth")
	env.Close()

	env2 := apitest.Start(t, apitest.Options{Quiet: true, DBPath: env.DBPath})
	if err := env2.Server.CredentialArrived(t.Context(), string(task.ID), true); err != nil {
		t.Fatalf("CredentialArrived() after restart = %v", err)
	}
	got := waitFor(t, env2, "script", task.ID, a2a.TaskStateCompleted)
	if txt := resultText(got); txt != "authorized by go call" {
		t.Errorf("artifact = %q, want %q", txt, "authorized by go call")
	}
}

// waitFor polls GetTask on the script agent until the task reaches want.
func waitFor(t *testing.T, env *apitest.Env, agent string, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	c := env.Client(t, agent, a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return waitState(t, ctx, c, id, want)
}
