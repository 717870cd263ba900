package askpointtest_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/question"
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

// asker asks for a name that expires in a minute, and greets.
func asker() askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "asker", Card: a2a.AgentCard{Name: "Asker", Description: "Asks a name."},
		Agent: askpoint.Steps[struct{}, struct {
			Name string `json:"name" jsonschema:"required"`
		}]{
			OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Your name?", Expires: time.Date(2030, 1, 1, 0, 1, 0, 0, time.UTC),
					Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}, struct{}{}), nil
			},
		}}
}

// A paused task holds no waiter, and the sweeper, run at once on a clock
// the test moves, expires the question: what a server does on its own,
// reached through the harness instead of methods of the Server.
func TestIdleWaitersAndSweepNowDriveAServerOnATestsClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	env := askpointtest.StartWith(t, askpointtest.Options{Config: func(c *askpoint.Config) {
		c.Now = clock
		c.DisableSweeper = true // only SweepNow acts on the expiry
	}}, asker())
	c := env.Client(t, "asker")
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hi"))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state %s, want input-required", task.Status.State)
	}
	if err := env.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if w := env.Waiters(); w != 0 {
		t.Errorf("Waiters() = %d with one paused task and no caller waiting, want 0", w)
	}
	if n := env.StepRetries() + env.TransientRetries(); n != 0 {
		t.Errorf("retries = %d on a server that failed nothing, want 0", n)
	}
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if err := env.SweepNow(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateFailed {
		t.Errorf("after the clock passed the expiry and SweepNow: %s, want failed", got.Status.State)
	}
}
