package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

const wakeToken = "wake-token-0123456789abcdef"

// waiter awaits an event for an hour, holding a seat for ten minutes; an
// event completes it after gate is closed (or at once when gate is nil).
type waiter struct {
	clock    *fakeClock
	released *releases
	gate     chan struct{}
	running  chan struct{}
	// tokens, when set, gets the step's Call.WakeToken when an event
	// resumes it.
	tokens chan string
}

func (w *waiter) agent() askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			now := w.clock.Now()
			return askpoint.Await("Waiting for the event.", struct{}{}, wakeToken, now.Add(time.Hour)).
				Hold(askpoint.Hold{Name: "seat", Until: now.Add(10 * time.Minute), Data: map[string]string{"seat": "14C"}}), nil
		},
		OnEvent: func(ctx context.Context, call *askpoint.Call, _ struct{}, event json.RawMessage) (askpoint.Outcome, error) {
			if w.tokens != nil {
				w.tokens <- call.WakeToken()
			}
			if w.running != nil {
				close(w.running)
			}
			if w.gate != nil {
				<-w.gate
			}
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("event: " + string(event))}}), nil
		},
		OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
			w.released.add(call.Key, w.clock.Now())
			return nil
		},
	}
}

func startWaiter(t *testing.T, w *waiter, adjust func(*askpoint.Config)) (*apitest.Env, a2a.TaskID) {
	t.Helper()
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Now = w.clock.Now
		c.PollInterval = 10 * time.Millisecond
		if adjust != nil {
			adjust(c)
		}
	}, Agents: []askpoint.AgentSpec{{Name: "waiter", Agent: w.agent(), Card: a2a.AgentCard{Name: "Waiter", Description: "Awaits an event."}}}})
	c := env.Client(t, "waiter", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("wait"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	eventually(t, "the task awaiting", func() bool {
		got := getTask(t, ctx, c, id)
		return got.Status.State == a2a.TaskStateWorking && strings.Contains(statusText(got), "Waiting for the event")
	})
	return env, id
}

// postWake posts an event to the wake endpoint and returns the status.
func postWake(t *testing.T, env *apitest.Env, id a2a.TaskID, token string) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env.AgentURL("waiter")+"/wake/"+string(id), strings.NewReader(`{"ping":1}`))
	req.Header.Set("A2A-Notification-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestAwaitingTaskKeepsWaitingAfterItsHoldIsReleased(t *testing.T) {
	w := &waiter{clock: newFakeClock(), released: &releases{}}
	env, id := startWaiter(t, w, nil)
	w.clock.Advance(11 * time.Minute)
	eventually(t, "the seat's release", func() bool { return len(w.released.list()) == 1 })
	if err := env.Engine.Idle(testCtx(t)); err != nil {
		t.Fatalf("Idle: %v", err)
	}
	if code := postWake(t, env, id, wakeToken); code != http.StatusNoContent {
		t.Fatalf("wake after the hold's release: status %d, want 204 (the task still waits)", code)
	}
	waitState(t, testCtx(t), env.Client(t, "waiter", a2a.TransportProtocolJSONRPC), id, a2a.TaskStateCompleted)
}

func TestWakeSaysBusyWhileTheTaskRunsAndLateAfterItEnds(t *testing.T) {
	w := &waiter{clock: newFakeClock(), released: &releases{}, gate: make(chan struct{}), running: make(chan struct{})}
	env, id := startWaiter(t, w, nil)
	if code := postWake(t, env, id, "not-the-token-0123456789"); code != http.StatusNotFound {
		t.Fatalf("wake with a wrong token: status %d, want 404", code)
	}
	if code := postWake(t, env, id, wakeToken); code != http.StatusNoContent {
		t.Fatalf("first wake: status %d, want 204", code)
	}
	<-w.running
	if code := postWake(t, env, id, wakeToken); code != http.StatusServiceUnavailable {
		t.Fatalf("wake while the step runs: status %d, want 503 (busy: send again)", code)
	}
	err := env.Server.Wake(testCtx(t), string(id), wakeToken, json.RawMessage(`{}`))
	if !errors.Is(err, askpoint.ErrBusy) {
		t.Fatalf("Server.Wake while the step runs = %v, want ErrBusy", err)
	}
	close(w.gate)
	waitState(t, testCtx(t), env.Client(t, "waiter", a2a.TransportProtocolJSONRPC), id, a2a.TaskStateCompleted)
	if code := postWake(t, env, id, wakeToken); code != http.StatusAccepted {
		t.Fatalf("wake after the end: status %d, want 202 (late, dropped)", code)
	}
	if code := postWake(t, env, id, "not-the-token-0123456789"); code != http.StatusNotFound {
		t.Fatalf("wake with a wrong token after the end: status %d, want 404", code)
	}
}

// A step that resumed from a wait on a token of its own (a relay's
// checkpoint of an older version) may move its sender onto the task's
// derived token (Call.WakeToken) before it returns: a wake with that token
// meanwhile is busy, sent again, not refused as for an unknown task.
func TestAWakeWithTheTasksDerivedTokenWhileAStepRunsIsBusy(t *testing.T) {
	w := &waiter{clock: newFakeClock(), released: &releases{}, gate: make(chan struct{}), running: make(chan struct{}), tokens: make(chan string, 1)}
	env, id := startWaiter(t, w, nil)
	if code := postWake(t, env, id, wakeToken); code != http.StatusNoContent {
		t.Fatalf("first wake: status %d, want 204", code)
	}
	derived := <-w.tokens
	<-w.running
	if len(derived) < 16 || derived == wakeToken {
		t.Fatalf("Call.WakeToken() = %q, want a token of the task's own", derived)
	}
	if code := postWake(t, env, id, derived); code != http.StatusServiceUnavailable {
		t.Fatalf("wake with the task's derived token while the step runs: status %d, want 503 (busy: send again)", code)
	}
	if code := postWake(t, env, id, "not-the-token-0123456789"); code != http.StatusNotFound {
		t.Fatalf("wake with a wrong token while the step runs: status %d, want 404", code)
	}
	close(w.gate)
	waitState(t, testCtx(t), env.Client(t, "waiter", a2a.TransportProtocolJSONRPC), id, a2a.TaskStateCompleted)
}

func TestWakeAfterTheDeadlineIsLate(t *testing.T) {
	w := &waiter{clock: newFakeClock(), released: &releases{}}
	env, id := startWaiter(t, w, func(c *askpoint.Config) { c.DisableSweeper = true })
	w.clock.Advance(2 * time.Hour)
	if code := postWake(t, env, id, wakeToken); code != http.StatusAccepted {
		t.Fatalf("wake after the deadline: status %d, want 202 (late)", code)
	}
	if got := getTask(t, testCtx(t), env.Client(t, "waiter", a2a.TransportProtocolJSONRPC), id); got.Status.State != a2a.TaskStateWorking {
		t.Fatalf("after a late wake the task is %v, want still working until the sweeper ends it", got.Status.State)
	}
}

func TestHoldUntilTheQuestionsExpiryWithinTheSecondIsAccepted(t *testing.T) {
	clock := newFakeClock()
	clock.Advance(123 * time.Millisecond) // a time with fractions of a second
	ta := &timed{now: clock.Now, released: &releases{}, answers: &int64s{}}
	agent := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			o, _ := ta.agent().Start(ctx, call)
			q := *o.Question()
			return askpoint.Ask(q, struct{}{}).Hold(askpoint.Hold{Name: "seat", Until: q.Expires}), nil
		},
		OnRelease: func(context.Context, *askpoint.Call, askpoint.HoldStatus) error { return nil },
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.Now = clock.Now },
		Agents: []askpoint.AgentSpec{{Name: "holder", Agent: agent, Card: a2a.AgentCard{Name: "Holder", Description: "Holds until expiry."}}}})
	sendState(t, testCtx(t), env.Client(t, "holder", a2a.TransportProtocolJSONRPC), userText("ask"), a2a.TaskStateInputRequired)
}
