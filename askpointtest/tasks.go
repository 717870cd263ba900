package askpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// Send sends text to the agent named agent as a user's message that starts
// a task, waits for the task to pause or end (a blocking send), and returns
// it. The test fails on an error or a reply that is not a task.
func (e *Env) Send(t testing.TB, agent, text string) *a2a.Task {
	t.Helper()
	return e.SendMessage(t, agent, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
}

// SendMessage is Send with a message of the test's: the first of a task,
// or one for a task it names (m.TaskID).
func (e *Env) SendMessage(t testing.TB, agent string, m *a2a.Message) *a2a.Task {
	t.Helper()
	ctx, cancel := waitContext(t)
	defer cancel()
	res, err := e.Client(t, agent).SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("askpointtest: SendMessage to %s: %v", agent, err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("askpointtest: %s answered with %s, not a task", agent, describe(res))
	}
	e.mu.Lock()
	e.tasks[task.ID] = agent
	e.mu.Unlock()
	return task
}

// Answer answers task's open question and returns the task as it stands
// after the reply (paused again, a re-ask, or ended). A string v is sent as
// the message's text, read as the server reads a person's words (an
// option's label or value, yes or no, the one field's value); any other v
// is encoded as the answer's JSON object (a struct, a map) and sent as a
// data part (question.MediaTypeJSON) naming the question's ID. The test
// fails when task has no open question.
func (e *Env) Answer(t testing.TB, task *a2a.Task, v any) *a2a.Task {
	t.Helper()
	return e.reply(t, task, answerPart(t, e.Question(t, task), v))
}

// Decline declines task's open question with reason, as a caller that will
// not answer does; the agent decides what follows (by default the task
// ends rejected with the reason).
func (e *Env) Decline(t testing.TB, task *a2a.Task, reason string) *a2a.Task {
	t.Helper()
	return e.reply(t, task, declinePart(e.Question(t, task), reason))
}

// answerPart is the part that answers q with v: a string as text, anything
// else as a JSON object naming q.
func answerPart(t testing.TB, q *question.Question, v any) *a2a.Part {
	t.Helper()
	if s, ok := v.(string); ok {
		return a2a.NewTextPart(s)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("askpointtest: the answer %T does not encode to JSON: %v", v, err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		t.Fatalf("askpointtest: the answer %s is not a JSON object: answer with a struct, a map or a string", raw)
	}
	obj["questionId"] = q.ID
	return dataPart(obj)
}

// declinePart declines q with reason.
func declinePart(q *question.Question, reason string) *a2a.Part {
	return dataPart(map[string]any{"questionId": q.ID, "action": question.ActionDecline, "reason": reason})
}

func dataPart(v map[string]any) *a2a.Part {
	p := a2a.NewDataPart(v)
	p.MediaType = question.MediaTypeJSON
	return p
}

func (e *Env) reply(t testing.TB, task *a2a.Task, p *a2a.Part) *a2a.Task {
	t.Helper()
	return e.SendMessage(t, e.agentOf(t, task.ID), a2a.NewMessageForTask(a2a.MessageRoleUser, task, p))
}

// Question is task's open question. The test fails, saying what the task
// is, when it has none (the task is not input-required).
func (e *Env) Question(t testing.TB, task *a2a.Task) *question.Question {
	t.Helper()
	if task == nil {
		t.Fatal("askpointtest: Question of a nil task")
	}
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("askpointtest: task %s has no open question: it is %s", task.ID, describe(task))
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok {
		t.Fatalf("askpointtest: task %s is input-required without a question the extension can read (%v): %q", task.ID, err, text.Of(task.Status.Message))
	}
	return q
}

// WaitState waits until the task reaches state and returns it as it is
// then. It follows the task's events (SubscribeToTask) rather than polling,
// for as long as the test's deadline allows; the test fails, saying what
// the task is, when the task ends in another state or the time runs out.
func (e *Env) WaitState(t testing.TB, taskID string, state a2a.TaskState) *a2a.Task {
	t.Helper()
	id := a2a.TaskID(taskID)
	ctx, cancel := waitContext(t)
	defer cancel()
	agent := e.agentOf(t, id)
	c := e.Client(t, agent)
	for {
		task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err != nil {
			t.Fatalf("askpointtest: waiting for task %s to be %s: %v", taskID, text.StateWord(state), err)
		}
		if task.Status.State == state {
			return task
		}
		if task.Status.State.Terminal() {
			t.Fatalf("askpointtest: task %s will not be %s: it is %s", taskID, text.StateWord(state), describe(task))
		}
		var subErr error
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				subErr = err
				break
			}
			if s, ok := stateOf(ev); ok && (s == state || s.Terminal()) {
				break
			}
		}
		if ctx.Err() != nil {
			task, _ = c.GetTask(context.WithoutCancel(ctx), &a2a.GetTaskRequest{ID: id})
			t.Fatalf("askpointtest: task %s was not %s by the test's deadline: it is %s", taskID, text.StateWord(state), describe(task))
		}
		if subErr != nil {
			// The task may have ended between GetTask and the
			// subscription: read it again once, then give up.
			again, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
			if err == nil && (again.Status.State == state || again.Status.State.Terminal()) {
				continue
			}
			t.Fatalf("askpointtest: waiting for task %s to be %s: SubscribeToTask: %v", taskID, text.StateWord(state), subErr)
		}
	}
}

// WaitQuestion waits until the task asks (input-required, see WaitState)
// and returns its open question.
func (e *Env) WaitQuestion(t testing.TB, taskID string) *question.Question {
	t.Helper()
	return e.Question(t, e.WaitState(t, taskID, a2a.TaskStateInputRequired))
}

// agentOf is the agent that has the task: the one it was sent to through
// this Env, else the first served agent that knows it (a sub-task a relay
// started, say).
func (e *Env) agentOf(t testing.TB, id a2a.TaskID) string {
	t.Helper()
	e.mu.Lock()
	agent, ok := e.tasks[id]
	e.mu.Unlock()
	if ok {
		return agent
	}
	for _, name := range e.agents {
		if _, err := e.Client(t, name).GetTask(t.Context(), &a2a.GetTaskRequest{ID: id}); err == nil {
			e.mu.Lock()
			e.tasks[id] = name
			e.mu.Unlock()
			return name
		}
	}
	t.Fatalf("askpointtest: no agent of %s has a task %s that this caller may see", e.URL, id)
	return ""
}

func stateOf(ev a2a.Event) (a2a.TaskState, bool) {
	switch v := ev.(type) {
	case *a2a.Task:
		return v.Status.State, true
	case *a2a.TaskStatusUpdateEvent:
		return v.Status.State, true
	}
	return "", false
}

// describe says what a reply is, for a failing test: a task's state and
// status text, or a message's text.
func describe(v any) string {
	switch v := v.(type) {
	case *a2a.Task:
		if v == nil {
			return "unknown"
		}
		s := text.StateWord(v.Status.State)
		if m := text.Of(v.Status.Message); m != "" {
			s += fmt.Sprintf(" (%q)", m)
		}
		return s
	case *a2a.Message:
		return fmt.Sprintf("a message %q", text.Of(v))
	}
	return fmt.Sprintf("%T", v)
}

// waitContext is t's context, ending a little before t's deadline so that
// a wait fails with what it waited for rather than with the test binary's
// panic.
func waitContext(t testing.TB) (context.Context, context.CancelFunc) {
	d, ok := t.(interface{ Deadline() (time.Time, bool) })
	if !ok {
		return context.WithCancel(t.Context())
	}
	deadline, ok := d.Deadline()
	if !ok {
		return context.WithCancel(t.Context())
	}
	grace := min(max(time.Until(deadline)/20, 100*time.Millisecond), 5*time.Second)
	return context.WithDeadline(t.Context(), deadline.Add(-grace))
}
