package servertest_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// answerCase starts a script task that asks, then sends one answer.
type answerCase struct {
	env  *apitest.Env
	c    *a2aclient.Client
	task *a2a.Task
	q    *question.Question
}

func startAsking(t *testing.T, cfg func(*askpoint.Config), command string) *answerCase {
	t.Helper()
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: cfg})
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	task := sendState(t, ctx, c, userText(command), a2a.TaskStateInputRequired)
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok {
		t.Fatalf("status message holds no question (ok=%v, err=%v)", ok, err)
	}
	return &answerCase{env: env, c: c, task: task, q: q}
}

func (a *answerCase) send(t *testing.T, m *a2a.Message) (*a2a.Task, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	res, err := a.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(a.task.ID, m)})
	if err != nil {
		return nil, err
	}
	return res.(*a2a.Task), nil
}

func statusText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	return messageText(task.Status.Message)
}

func TestTextAnswerMatchingAnOptionLabelIsAccepted(t *testing.T) {
	a := startAsking(t, nil, "choose")
	got, err := a.send(t, userText("  large "))
	if err != nil {
		t.Fatalf("SendMessage(answer) error = %v", err)
	}
	if txt, _ := artifactText(got, "result"); got.Status.State != a2a.TaskStateCompleted || txt != "size L" {
		t.Fatalf("state %v, result %q; want completed with %q", got.Status.State, txt, "size L")
	}
}

func TestTextAnswerForAOneFieldSchemaIsAccepted(t *testing.T) {
	a := startAsking(t, nil, "ask")
	got, err := a.send(t, userText("Ada"))
	if err != nil {
		t.Fatalf("SendMessage(answer) error = %v", err)
	}
	if txt, _ := artifactText(got, "result"); got.Status.State != a2a.TaskStateCompleted || txt != "hello Ada" {
		t.Fatalf("state %v, result %q; want completed with %q", got.Status.State, txt, "hello Ada")
	}
}

func TestDeclineEndsTheTaskRejectedWithTheReason(t *testing.T) {
	a := startAsking(t, nil, "ask")
	got, err := a.send(t, userData(map[string]any{"questionId": a.q.ID, "action": "decline", "reason": "not my expense"}))
	if err != nil {
		t.Fatalf("SendMessage(decline) error = %v", err)
	}
	if got.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(got), "not my expense") {
		t.Fatalf("state %v, message %q; want rejected naming the reason", got.Status.State, statusText(got))
	}
}

func TestCancelActionEndsTheTaskCanceled(t *testing.T) {
	a := startAsking(t, nil, "ask")
	got, err := a.send(t, userData(map[string]any{"questionId": a.q.ID, "action": "cancel"}))
	if err != nil {
		t.Fatalf("SendMessage(cancel) error = %v", err)
	}
	if got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("state %v, want canceled", got.Status.State)
	}
}

func TestInvalidAnswersAreReAskedUpToTheCapThenFail(t *testing.T) {
	a := startAsking(t, func(c *askpoint.Config) { c.MaxAttempts = 3 }, "choose")
	seen := map[string]bool{a.q.ID: true}
	for attempt := 2; attempt <= 3; attempt++ {
		got, err := a.send(t, userText("medium"))
		if err != nil {
			t.Fatalf("SendMessage(invalid #%d) error = %v", attempt-1, err)
		}
		q, ok, _ := question.FromMessage(got.Status.Message)
		if got.Status.State != a2a.TaskStateInputRequired || !ok {
			t.Fatalf("after invalid answer #%d: state %v, want input-required with a question", attempt-1, got.Status.State)
		}
		if seen[q.ID] || q.Attempt != attempt || q.MaxAttempts != 3 || len(q.Errors) == 0 {
			t.Fatalf("re-ask %d: id %q (seen before: %v), attempt %d/%d, %d errors; want a new id, attempt %d/3 and errors",
				attempt, q.ID, seen[q.ID], q.Attempt, q.MaxAttempts, len(q.Errors), attempt)
		}
		if !strings.Contains(q.Errors[0].Message, "expected one of S, L") {
			t.Errorf("re-ask error = %q, want it to name the options", q.Errors[0].Message)
		}
		seen[q.ID] = true
	}
	got, err := a.send(t, userText("medium"))
	if err != nil {
		t.Fatalf("SendMessage(third invalid) error = %v", err)
	}
	if got.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(got), "No valid answer after 3 attempts") {
		t.Fatalf("state %v, message %q; want failed saying no valid answer after 3 attempts", got.Status.State, statusText(got))
	}
}

func TestWrongQuestionIDIsRefusedAndCountsNoAttempt(t *testing.T) {
	a := startAsking(t, nil, "ask")
	before := getTask(t, t.Context(), a.c, a.task.ID)
	_, err := a.send(t, userData(map[string]any{"questionId": "q-stale", "name": "Ada"}))
	wantErr(t, "SendMessage(stale question)", err, a2a.ErrInvalidParams)
	if !strings.Contains(err.Error(), a.q.ID) {
		t.Errorf("error %q does not name the open question %q", err, a.q.ID)
	}
	after := getTask(t, t.Context(), a.c, a.task.ID)
	q, _, _ := question.FromMessage(after.Status.Message)
	if after.Status.State != a2a.TaskStateInputRequired || q.ID != a.q.ID || len(after.History) != len(before.History) {
		t.Fatalf("task changed: state %v, question %q, history %d→%d", after.Status.State, q.ID, len(before.History), len(after.History))
	}
	got, err := a.send(t, userData(map[string]any{"name": "Ada"}))
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("answer without questionId: %v, %v; want it bound to the open question and completed", err, got)
	}
}

func TestAnAgentsInvalidSchemaFailsTheTaskWithAReason(t *testing.T) {
	for _, tt := range []struct{ command, mentions string }{
		{"bad-schema", "cannot be answered"},
		{"ext-ref", "file:///etc/passwd"},
	} {
		t.Run(tt.command, func(t *testing.T) {
			env := apitest.Start(t, apitest.Options{Quiet: true})
			c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
			got := sendState(t, t.Context(), c, userText(tt.command), a2a.TaskStateFailed)
			if !strings.Contains(statusText(got), tt.mentions) {
				t.Errorf("failure message %q does not mention %q", statusText(got), tt.mentions)
			}
		})
	}
}

func TestOversizedAnswerIsRefusedAndNothingIsStored(t *testing.T) {
	a := startAsking(t, func(c *askpoint.Config) { c.MaxAnswerBytes = 1024 }, "ask")
	before := getTask(t, t.Context(), a.c, a.task.ID)
	_, err := a.send(t, userData(map[string]any{"name": strings.Repeat("x", 4096)}))
	wantErr(t, "SendMessage(oversized answer)", err, a2a.ErrInvalidParams)
	if !strings.Contains(err.Error(), "1024") {
		t.Errorf("error %q does not name the 1024-byte limit", err)
	}
	after := getTask(t, t.Context(), a.c, a.task.ID)
	if len(after.History) != len(before.History) || after.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("history %d→%d, state %v: the refused answer changed the task", len(before.History), len(after.History), after.Status.State)
	}
}

// answerAfterExpiry asks a question that expires in an hour, with the
// sweeper off, moves the clock a second past the expiry and answers it:
// the case, and the answer's error.
func answerAfterExpiry(t *testing.T) (*answerCase, error) {
	t.Helper()
	var now atomic.Pointer[time.Time]
	start := time.Now()
	now.Store(&start)
	a := startAsking(t, func(c *askpoint.Config) {
		c.QuestionExpiry = time.Hour
		c.Now = func() time.Time { return *now.Load() }
		c.DisableSweeper = true
	}, "ask")
	late := start.Add(time.Hour + time.Second)
	now.Store(&late)
	_, err := a.send(t, userData(map[string]any{"name": "Ada"}))
	return a, err
}

// TestAnswerAfterExpiryIsRefusedAndTheTaskExpires: an answer that comes
// after its question's expiry, before any sweep has acted on it, expires
// the task itself and is refused saying so (Config.DisableSweeper's
// promise). The sweeper is off: with it on, a sweep that fell between the
// clock's move and the answer expired the task first, and the answer got
// the refusal of a finished task instead (TestAnswerRacingExpiryHasOneOutcome
// covers that race).
func TestAnswerAfterExpiryIsRefusedAndTheTaskExpires(t *testing.T) {
	a, err := answerAfterExpiry(t)
	wantErr(t, "SendMessage(late answer)", err, a2a.ErrUnsupportedOperation)
	if !strings.Contains(err.Error(), a.q.ID) || !strings.Contains(err.Error(), "expired") {
		t.Errorf("error %q does not say question %s expired", err, a.q.ID)
	}
	got := getTask(t, t.Context(), a.c, a.task.ID)
	if got.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(got), "expired") {
		t.Fatalf("state %v, message %q; want failed saying the question expired", got.Status.State, statusText(got))
	}
}

// TestMessageToAnEndedTaskSaysHowItEnded: a message to a task that has
// ended is refused with the task's final status in the error, so a caller
// who answers late (here without the question's ID, after the question
// expired) learns why and not only that the task is over.
func TestMessageToAnEndedTaskSaysHowItEnded(t *testing.T) {
	a, err := answerAfterExpiry(t)
	if err == nil {
		t.Fatal("SendMessage(late answer) succeeded; want the expiry's refusal")
	}
	ended := getTask(t, t.Context(), a.c, a.task.ID)
	why := strings.SplitN(statusText(ended), "\n", 2)[0]
	if ended.Status.State != a2a.TaskStateFailed || !strings.Contains(why, "expired") {
		t.Fatalf("state %v, message %q; want failed saying the question expired", ended.Status.State, why)
	}
	_, err = a.send(t, userText("Ada, sorry for the wait"))
	wantErr(t, "SendMessage(to the ended task)", err, a2a.ErrUnsupportedOperation)
	for _, want := range []string{"is failed", why, "takes no more messages"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
