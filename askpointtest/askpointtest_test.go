package askpointtest_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/relay"
)

func echo() askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "echo", Card: a2a.AgentCard{Name: "Echo", Description: "Says done."},
		Agent: askpoint.Steps[struct{}, struct{}]{OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("done")}}), nil
		}}}
}

func TestStartServesAnAgentOnARealServer(t *testing.T) {
	env := askpointtest.Start(t, echo())
	res, err := env.Client(t, "echo").SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	if err != nil {
		t.Fatal(err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("SendMessage = %+v, want a completed task", res)
	}
	if env.DBPath == "" {
		t.Fatal("no SQLite file")
	}
}

// A relay needs its own URL before it is built: Listen, build, Serve.
func TestListenThenServeAnAgentThatNeedsItsOwnURL(t *testing.T) {
	sub := askpointtest.Start(t, echo())
	env := askpointtest.Listen(t)
	a, err := relay.Agent(relay.Config{SubAgentURL: sub.AgentURL("echo"), CallbackURL: env.AgentURL("front")})
	if err != nil {
		t.Fatal(err)
	}
	env.Serve(t, askpoint.AgentSpec{Name: "front", Agent: a, Card: a2a.AgentCard{Name: "Front", Description: "Relays to echo."}})
	res, err := env.Client(t, "front").SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	if err != nil {
		t.Fatal(err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
		t.Fatalf("SendMessage = %+v, want the relay's task completed with echo's artifact", res)
	}
}
