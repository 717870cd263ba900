package servertest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// A refused Ask (a hold kept past the question's expiry, a question with
// no text) fails the task, and what the step held is released: the agent
// reserved it before it asked.
func TestRefusedAskReleasesWhatItHolds(t *testing.T) {
	cases := map[string]func(q question.Question) (question.Question, askpoint.Hold){
		"hold past the expiry": func(q question.Question) (question.Question, askpoint.Hold) {
			return q, askpoint.Hold{Name: "room", Until: q.Expires.Add(time.Hour), Data: map[string]string{"room": "R1"}}
		},
		"question without text": func(q question.Question) (question.Question, askpoint.Hold) {
			q.Text = ""
			return q, askpoint.Hold{Name: "room", Data: map[string]string{"room": "R1"}}
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			released := make(chan askpoint.HoldStatus, 4)
			agent := askpoint.Steps[struct{}, map[string]any]{
				OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
					q, h := build(question.Question{
						Text:    "Which day?",
						Schema:  json.RawMessage(`{"type":"object","required":["day"],"properties":{"day":{"type":"string"}}}`),
						Expires: time.Now().Add(time.Hour),
					})
					return askpoint.Ask(q, struct{}{}).Hold(h), nil
				},
				OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
					released <- h
					return nil
				},
			}
			env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.PollInterval = 10 * time.Millisecond },
				Agents: []askpoint.AgentSpec{{Name: "holder", Agent: agent, Card: a2a.AgentCard{Name: "Holder", Description: "Holds a room."}}}})
			c := env.Client(t, "holder", a2a.TransportProtocolJSONRPC)
			task := sendState(t, testCtx(t), c, userText("book"), a2a.TaskStateFailed)
			if !strings.Contains(statusText(task), "cannot") {
				t.Fatalf("status %q does not say the question was refused", statusText(task))
			}
			select {
			case h := <-released:
				if h.Name != "room" || !strings.Contains(string(h.Data), "R1") {
					t.Fatalf("released %q %s, want the room R1", h.Name, h.Data)
				}
			case <-testCtx(t).Done():
				t.Fatal("the room held by the refused Ask was never released")
			}
		})
	}
}

// A wake that arrives before the task's first step has returned (the
// sub-agent pushes its first status while the relay is still sending) is
// told busy, never not found: the token is stored only when the step
// returns.
func TestWakeBeforeTheFirstStepReturnsIsBusy(t *testing.T) {
	gate, running := make(chan struct{}), make(chan struct{})
	agent := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			close(running)
			select {
			case <-gate:
			case <-ctx.Done():
				return askpoint.Outcome{}, ctx.Err()
			}
			return askpoint.Await("Waiting for the event.", struct{}{}, wakeToken, time.Now().Add(time.Hour)), nil
		},
		OnEvent: func(ctx context.Context, call *askpoint.Call, _ struct{}, event json.RawMessage) (askpoint.Outcome, error) {
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("woken")}}), nil
		},
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{{Name: "waiter", Agent: agent,
		Card: a2a.AgentCard{Name: "Waiter", Description: "Awaits an event."}}}})
	c := env.Client(t, "waiter", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: userText("wait"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	<-running
	if code := postWake(t, env, id, wakeToken); code != http.StatusServiceUnavailable {
		close(gate)
		t.Fatalf("wake while the first step runs: status %d, want 503 (busy: send again)", code)
	}
	close(gate)
	eventually(t, "the task awaiting", func() bool {
		return strings.Contains(statusText(getTask(t, testCtx(t), c, id)), "Waiting for the event")
	})
	if code := postWake(t, env, id, wakeToken); code != http.StatusNoContent {
		t.Fatalf("wake after the step returned: status %d, want 204", code)
	}
	waitState(t, testCtx(t), c, id, a2a.TaskStateCompleted)
}

// An answer to a stale question is refused with a message that names the
// open question once.
func TestAStaleAnswerNamesTheOpenQuestionOnce(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	task := sendState(t, testCtx(t), c, userText("ask"), a2a.TaskStateInputRequired)
	q, _, _ := question.FromMessage(task.Status.Message)
	_, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"questionId": "q-old", "name": "Ada"}))})
	if err == nil {
		t.Fatal("an answer to a stale question was accepted")
	}
	if n := strings.Count(err.Error(), q.ID); n != 1 || !strings.Contains(err.Error(), "q-old") {
		t.Fatalf("error %q names the open question %s %d times, want once (and the stale one)", err, q.ID, n)
	}
}

// A hold kept until the question's expiry is accepted whatever fraction
// of a second the expiry has (the wire keeps whole seconds), on the real
// clock, for an Ask and for an Await.
func TestAHoldUntilASubSecondExpiryIsAccepted(t *testing.T) {
	for _, await := range []bool{false, true} {
		agent := askpoint.Steps[struct{}, map[string]any]{
			OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
				until := time.Now().Add(time.Hour).Truncate(time.Second).Add(987654321 * time.Nanosecond)
				h := askpoint.Hold{Name: "room", Until: until}
				if await {
					return askpoint.Await("Waiting.", struct{}{}, wakeToken, until).Hold(h), nil
				}
				q := question.Question{Text: "Which day?", Expires: until,
					Schema: json.RawMessage(`{"type":"object","required":["day"],"properties":{"day":{"type":"string"}}}`)}
				return askpoint.Ask(q, struct{}{}).Hold(h), nil
			},
			OnRelease: func(context.Context, *askpoint.Call, askpoint.HoldStatus) error { return nil },
		}
		env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{{Name: "holder", Agent: agent,
			Card: a2a.AgentCard{Name: "Holder", Description: "Holds a room."}}}})
		c := env.Client(t, "holder", a2a.TransportProtocolJSONRPC)
		want := a2a.TaskStateInputRequired
		if await {
			want = a2a.TaskStateWorking
		}
		res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: userText("book"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err != nil {
			t.Fatal(err)
		}
		id := res.(*a2a.Task).ID
		eventually(t, "the task paused", func() bool {
			got := getTask(t, testCtx(t), c, id)
			if got.Status.State == a2a.TaskStateFailed {
				t.Fatalf("await %v: the hold was refused: %s", await, statusText(got))
			}
			return got.Status.State == want && (!await || strings.Contains(statusText(got), "Waiting"))
		})
	}
}
