package servertest_test

// End-to-end tests of the engine's protocol rules (DESIGN.md, "The engine's
// rules"): a real server on 127.0.0.1 with a real SQLite file, driven by the
// a2a-go client over both bindings (raw HTTP where the client cannot send
// what a rule is about).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

// ---- Blocking SendMessage and returnImmediately ----

func TestSendMessageBlocksUntilInputRequiredWithQuestion(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("ask"), a2a.TaskStateInputRequired)
		q := task.Status.Message
		if q == nil {
			t.Fatalf("SendMessage(ask) status.message = nil, want the question")
		}
		if q.Role != a2a.MessageRoleAgent {
			t.Errorf("SendMessage(ask) status.message.role = %v, want %v", q.Role, a2a.MessageRoleAgent)
		}
		if got := messageText(q); !strings.Contains(got, "What is your name?") {
			t.Errorf("SendMessage(ask) status.message text = %q, want it to contain %q", got, "What is your name?")
		}
		data, ok := dataPart(q.Parts)
		if !ok {
			t.Fatalf("SendMessage(ask) status.message has no data part, want the machine-readable question")
		}
		if id, _ := data["questionId"].(string); id == "" {
			t.Errorf("SendMessage(ask) question data part questionId = %v, want a non-empty string", data["questionId"])
		}
	})
}

func TestSendMessageBlocksUntilCompletedWithArtifact(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("complete"), a2a.TaskStateCompleted)
		got, ok := artifactText(task, "result")
		if !ok {
			t.Fatalf("SendMessage(complete) artifacts = %d, want an artifact named %q", len(task.Artifacts), "result")
		}
		if got != "done" {
			t.Errorf("SendMessage(complete) artifact %q text = %q, want %q", "result", got, "done")
		}
	})
}

func TestSendMessageBlocksWhileWorkingUntilReleased(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		key := apitest.UniqueKey(t)
		t.Cleanup(func() { apitest.Release(key) })

		type result struct {
			res a2a.SendMessageResult
			err error
		}
		done := make(chan result, 1)
		go func() {
			res, err := on.c.SendMessage(on.ctx, &a2a.SendMessageRequest{Message: userText("block " + key)})
			done <- result{res, err}
		}()

		// Wait until the run is under way, then check the call is still
		// waiting for it.
		var id a2a.TaskID
		for id == "" {
			list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateWorking})
			if err != nil {
				t.Fatalf("ListTasks(WORKING) error = %v", err)
			}
			if len(list.Tasks) > 0 {
				id = list.Tasks[0].ID
				break
			}
			select {
			case r := <-done:
				t.Fatalf("SendMessage(block) returned (%v, %v) before the task was even working", r.res, r.err)
			case <-on.ctx.Done():
				t.Fatalf("ListTasks(WORKING): no working task before the deadline")
			case <-time.After(10 * time.Millisecond):
			}
		}
		select {
		case r := <-done:
			t.Fatalf("SendMessage(block) returned (%v, %v) before Release, want it to block", describeResult(r.res), r.err)
		case <-time.After(notYet):
		}

		apitest.Release(key)
		var r result
		select {
		case r = <-done:
		case <-on.ctx.Done():
			t.Fatalf("SendMessage(block) did not return after Release")
		}
		if r.err != nil {
			t.Fatalf("SendMessage(block) error = %v", r.err)
		}
		task, ok := r.res.(*a2a.Task)
		if !ok {
			t.Fatalf("SendMessage(block) = %T, want *a2a.Task", r.res)
		}
		if task.ID != id {
			t.Errorf("SendMessage(block) task ID = %s, want the working task %s", task.ID, id)
		}
		if task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("SendMessage(block) state = %v, want %v", task.Status.State, a2a.TaskStateCompleted)
		}
		if got, _ := artifactText(task, "result"); got != "unblocked" {
			t.Errorf("SendMessage(block) artifact %q text = %q, want %q", "result", got, "unblocked")
		}
	})
}

func describeResult(res a2a.SendMessageResult) string {
	switch r := res.(type) {
	case *a2a.Task:
		return describe(r)
	case *a2a.Message:
		return describe(r)
	}
	return fmt.Sprintf("%T", res)
}

func TestSendMessageReturnImmediatelyReturnsNonTerminalTask(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		key := apitest.UniqueKey(t)
		t.Cleanup(func() { apitest.Release(key) })

		task := sendAsync(t, on.ctx, on.c, userText("block "+key))
		if s := task.Status.State; s != a2a.TaskStateSubmitted && s != a2a.TaskStateWorking {
			t.Fatalf("SendMessage(block, returnImmediately) state = %v, want %v or %v", s, a2a.TaskStateSubmitted, a2a.TaskStateWorking)
		}
		if task.ID == "" {
			t.Fatalf("SendMessage(block, returnImmediately) task ID is empty")
		}
		// The run goes on without the caller.
		apitest.Release(key)
		waitState(t, on.ctx, on.c, task.ID, a2a.TaskStateCompleted)
	})
}

// ---- historyLength ----

// askTwiceHistory is the history of an "ask-twice" task answered once:
// request, name question, answer, colour question.
var askTwiceHistory = []a2a.MessageRole{a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent}

// historyCases are the historyLength values tested and the roles each
// should return from askTwiceHistory.
var historyCases = []struct {
	name  string
	hl    *int
	roles []a2a.MessageRole
}{
	{"absent", nil, askTwiceHistory},
	{"0", intp(0), nil},
	{"1", intp(1), askTwiceHistory[3:]},
	{"2", intp(2), askTwiceHistory[2:]},
}

// checkHistory checks h against the roles wanted and, when the newest
// message is wanted, that it is the colour question.
func checkHistory(t *testing.T, call string, h []*a2a.Message, want []a2a.MessageRole) {
	t.Helper()
	if got := roles(h); !slices.Equal(got, want) {
		t.Fatalf("%s history roles = %v, want %v", call, got, want)
	}
	if len(want) > 0 {
		if got := messageText(h[len(h)-1]); !strings.Contains(got, "Which colour?") {
			t.Errorf("%s newest history message = %q, want the colour question", call, got)
		}
	}
	if len(want) >= 2 {
		if d, _ := dataPart(h[len(h)-2].Parts); d["name"] != "Ann" {
			t.Errorf("%s second newest history message data = %v, want the answer {name: Ann}", call, d)
		}
	}
}

// askTwiceAnswered starts "ask-twice" and answers the first question.
func askTwiceAnswered(t *testing.T, env *apitest.Env, tr a2a.TransportProtocol, hl *int) *a2a.Task {
	t.Helper()
	c := env.Client(t, "script", tr)
	ctx := testCtx(t)
	task := sendState(t, ctx, c, userText("ask-twice"), a2a.TaskStateInputRequired)
	return sendTask(t, ctx, c, &a2a.SendMessageRequest{
		Message: followUp(task.ID, userData(map[string]any{"name": "Ann"})),
		Config:  &a2a.SendMessageConfig{HistoryLength: hl},
	})
}

// historyReader reads the history of an answered "ask-twice" task with
// historyLength hl; label names hl in failure messages.
type historyReader func(t *testing.T, hl *int, label string) []*a2a.Message

// historyCalls are the calls that take historyLength. Each prepares, once
// per server, what it reads and returns the reader.
var historyCalls = []struct {
	name    string
	prepare func(t *testing.T, on served) historyReader
}{
	{"SendMessage", func(t *testing.T, on served) historyReader {
		// The answer's own reply: a task per historyLength.
		return func(t *testing.T, hl *int, _ string) []*a2a.Message {
			task := askTwiceAnswered(t, on.env, on.tr, hl)
			if task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("SendMessage(answer) state = %v, want %v", task.Status.State, a2a.TaskStateInputRequired)
			}
			return task.History
		}
	}},
	{"GetTask", func(t *testing.T, on served) historyReader {
		task := askTwiceAnswered(t, on.env, on.tr, nil)
		return func(t *testing.T, hl *int, label string) []*a2a.Message {
			got, err := on.c.GetTask(testCtx(t), &a2a.GetTaskRequest{ID: task.ID, HistoryLength: hl})
			if err != nil {
				t.Fatalf("GetTask(historyLength %s) error = %v", label, err)
			}
			return got.History
		}
	}},
	{"ListTasks", func(t *testing.T, on served) historyReader {
		task := askTwiceAnswered(t, on.env, on.tr, nil)
		return func(t *testing.T, hl *int, label string) []*a2a.Message {
			list, err := on.c.ListTasks(testCtx(t), &a2a.ListTasksRequest{HistoryLength: hl})
			if err != nil {
				t.Fatalf("ListTasks(historyLength %s) error = %v", label, err)
			}
			if len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
				t.Fatalf("ListTasks(historyLength %s) = %d tasks, want exactly task %s", label, len(list.Tasks), task.ID)
			}
			return list.Tasks[0].History
		}
	}},
}

func TestHistoryLength(t *testing.T) {
	t.Parallel()
	for _, call := range historyCalls {
		t.Run("On"+call.name, func(t *testing.T) {
			eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
				read := call.prepare(t, on)
				for _, tc := range historyCases {
					t.Run(tc.name, func(t *testing.T) {
						checkHistory(t, call.name+"(historyLength "+tc.name+")", read(t, tc.hl, tc.name), tc.roles)
					})
				}
			})
		})
	}
}

func TestNegativeHistoryLengthIsInvalidParams(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("ask"), a2a.TaskStateInputRequired)

		_, err := on.c.SendMessage(on.ctx, &a2a.SendMessageRequest{
			Message: userText("complete"),
			Config:  &a2a.SendMessageConfig{HistoryLength: intp(-1)},
		})
		wantErr(t, "SendMessage(historyLength -1)", err, a2a.ErrInvalidParams)

		_, err = on.c.GetTask(on.ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: intp(-1)})
		wantErr(t, "GetTask(historyLength -1)", err, a2a.ErrInvalidParams)

		_, err = on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{HistoryLength: intp(-1)})
		wantErr(t, "ListTasks(historyLength -1)", err, a2a.ErrInvalidParams)
	})
}

// ---- Follow-ups: taskId, contextId, unknown and terminal tasks ----

func TestFollowUpWithOnlyTaskIDKeepsTaskContext(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("ask"), a2a.TaskStateInputRequired)
		if task.ContextID == "" {
			t.Fatalf("SendMessage(ask) contextId is empty, want one assigned by the server")
		}

		answer := followUp(task.ID, userData(map[string]any{"name": "Ann"}))
		if answer.ContextID != "" {
			t.Fatalf("test bug: the follow-up carries contextId %q", answer.ContextID)
		}
		done := sendState(t, on.ctx, on.c, answer, a2a.TaskStateCompleted)
		if done.ID != task.ID {
			t.Errorf("SendMessage(answer) task ID = %s, want %s", done.ID, task.ID)
		}
		if done.ContextID != task.ContextID {
			t.Errorf("SendMessage(answer) contextId = %q, want the task's %q", done.ContextID, task.ContextID)
		}
		if got, _ := artifactText(done, "result"); got != "hello Ann" {
			t.Errorf("SendMessage(answer) artifact %q text = %q, want %q", "result", got, "hello Ann")
		}
		for i, m := range done.History {
			if m.ContextID != task.ContextID {
				t.Errorf("history[%d] (%s) contextId = %q, want the task's %q", i, m.Role, m.ContextID, task.ContextID)
			}
		}
	})
}

func TestFollowUpWithOtherContextIsInvalidParamsAndChangesNothing(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("ask"), a2a.TaskStateInputRequired)
		before := getTask(t, on.ctx, on.c, task.ID)

		answer := followUp(task.ID, userData(map[string]any{"name": "Ann"}))
		answer.ContextID = a2a.NewContextID()
		_, err := on.c.SendMessage(on.ctx, &a2a.SendMessageRequest{Message: answer})
		wantErr(t, "SendMessage(other contextId)", err, a2a.ErrInvalidParams)
		if !strings.Contains(err.Error(), "contextId") {
			t.Errorf("SendMessage(other contextId) error = %q, want it to name contextId", err)
		}

		after := getTask(t, on.ctx, on.c, task.ID)
		if after.Status.State != before.Status.State {
			t.Errorf("GetTask() state = %v, want %v (unchanged)", after.Status.State, before.Status.State)
		}
		if after.Status.Message == nil || before.Status.Message == nil || after.Status.Message.ID != before.Status.Message.ID {
			t.Errorf("GetTask() status message changed: %v, want %v", after.Status.Message, before.Status.Message)
		}
		if len(after.History) != len(before.History) {
			t.Errorf("GetTask() history length = %d, want %d (unchanged)", len(after.History), len(before.History))
		}
		if after.ContextID != before.ContextID {
			t.Errorf("GetTask() contextId = %q, want %q (unchanged)", after.ContextID, before.ContextID)
		}
	})
}

// ---- SendStreamingMessage ----

// streamSend opens SendStreamingMessage for m on a client of its own.
func streamSend(t *testing.T, env *apitest.Env, tr a2a.TransportProtocol, m *a2a.Message) *stream {
	t.Helper()
	return sendStream(t, testCtx(t), env.Client(t, "script", tr), m)
}

// firstTask requires the next event to be the task snapshot.
func firstTask(t *testing.T, ctx context.Context, s *stream) *a2a.Task {
	t.Helper()
	ev := s.nextEvent(t, ctx)
	task, ok := ev.(*a2a.Task)
	if !ok {
		t.Fatalf("first event = %s, want the task", describe(ev))
	}
	if task.ID == "" {
		t.Fatalf("first event: task ID is empty")
	}
	return task
}

// wantEvents requires the next events to be want (as described by
// describe), all for task id.
func wantEvents(t *testing.T, ctx context.Context, s *stream, id a2a.TaskID, want ...string) {
	t.Helper()
	for i, w := range want {
		ev := s.nextEvent(t, ctx)
		if got := describe(ev); got != w {
			t.Fatalf("event %d = %s, want %s", i, got, w)
		}
		if got := ev.TaskInfo().TaskID; got != id {
			t.Fatalf("event %d (%s) task ID = %s, want %s", i, w, got, id)
		}
	}
}

const (
	evWorking   = "status TASK_STATE_WORKING"
	evInput     = `status TASK_STATE_INPUT_REQUIRED "What is your name?"`
	evAuth      = `status TASK_STATE_AUTH_REQUIRED "Sign in to the calendar service at https://calendar.example/authorize, then tell me."`
	evResult    = "artifact result"
	evCompleted = "status TASK_STATE_COMPLETED"
)

func TestStreamingMessageStartsWithTaskThenUpdatesInOrderUntilCompleted(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		s := streamSend(t, on.env, on.tr, userText("progress"))
		task := firstTask(t, on.ctx, s)
		if task.Status.State != a2a.TaskStateSubmitted {
			t.Errorf("first event task state = %v, want %v", task.Status.State, a2a.TaskStateSubmitted)
		}
		wantEvents(t, on.ctx, s, task.ID,
			evWorking,
			`status TASK_STATE_WORKING "working on it"`,
			"artifact partial",
			`status TASK_STATE_WORKING "almost there"`,
			evResult,
			evCompleted,
		)
		s.wantEnd(t, on.ctx)
	})
}

func TestStreamingMessageClosesAtInputRequiredByDefault(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		s := streamSend(t, on.env, on.tr, userText("ask"))
		task := firstTask(t, on.ctx, s)
		wantEvents(t, on.ctx, s, task.ID, evWorking, evInput)
		s.wantEnd(t, on.ctx)
	})
}

// answerName answers the name question of paused task id on another
// connection.
func answerName(t *testing.T, on served, id a2a.TaskID) {
	t.Helper()
	other := on.env.Client(t, "script", on.tr)
	sendState(t, on.ctx, other, followUp(id, userData(map[string]any{"name": "Ann"})), a2a.TaskStateCompleted)
}

// wantResumedToEnd requires the open stream s to follow task id from its
// resumption until it completes, and then to end.
func wantResumedToEnd(t *testing.T, on served, s *stream, id a2a.TaskID) {
	t.Helper()
	wantEvents(t, on.ctx, s, id, evWorking, evResult, evCompleted)
	s.wantEnd(t, on.ctx)
}

func TestStreamingMessageStaysOpenWhilePaused(t *testing.T) {
	t.Parallel()
	credential := func(t *testing.T, on served, id a2a.TaskID) {
		if err := on.env.Server.CredentialArrived(on.ctx, string(id), map[string]any{"ok": true}); err != nil {
			t.Fatalf("CredentialArrived() error = %v", err)
		}
	}
	for _, tc := range []struct {
		name   string
		mode   askpoint.InputRequiredStreams
		text   string // what pauses the task
		paused string // the event that pauses it
		resume func(t *testing.T, on served, id a2a.TaskID)
	}{
		{"AtInputRequiredWhenConfigured", askpoint.KeepStreamsOpen, "ask", evInput, answerName},
		{"AtAuthRequiredWithCloseStreams", askpoint.CloseStreams, "auth", evAuth, credential},
		{"AtAuthRequiredWithKeepStreamsOpen", askpoint.KeepStreamsOpen, "auth", evAuth, credential},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachScript(t, apitest.Options{Config: func(c *askpoint.Config) {
				c.InputRequiredStreams = tc.mode
			}}, func(t *testing.T, on served) {
				s := streamSend(t, on.env, on.tr, userText(tc.text))
				task := firstTask(t, on.ctx, s)
				wantEvents(t, on.ctx, s, task.ID, evWorking, tc.paused)
				s.wantOpen(t)
				tc.resume(t, on, task.ID)
				wantResumedToEnd(t, on, s, task.ID)
			})
		})
	}
}

// ---- SubscribeToTask ----

// subscribe opens SubscribeToTask for id on a client of its own.
func subscribe(t *testing.T, env *apitest.Env, tr a2a.TransportProtocol, id a2a.TaskID) *stream {
	t.Helper()
	return subscribeStream(t, testCtx(t), env.Client(t, "script", tr), id)
}

func TestSubscribeToPausedTaskStartsWithTaskAndFollowsIt(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		paused := sendState(t, on.ctx, on.c, userText("ask"), a2a.TaskStateInputRequired)

		s := subscribe(t, on.env, on.tr, paused.ID)
		snap := firstTask(t, on.ctx, s)
		if snap.ID != paused.ID || snap.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("first event = task %s %v, want task %s %v", snap.ID, snap.Status.State, paused.ID, a2a.TaskStateInputRequired)
		}
		s.wantOpen(t)

		answerName(t, on, paused.ID)
		wantResumedToEnd(t, on, s, paused.ID)
	})
}

// ---- GetTask ----

func TestGetTaskReturnsTaskWithStateArtifactsAndHistory(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		req := userText("complete")
		sent := sendState(t, on.ctx, on.c, req, a2a.TaskStateCompleted)

		got := getTask(t, on.ctx, on.c, sent.ID)
		if got.ID != sent.ID || got.ContextID != sent.ContextID {
			t.Errorf("GetTask() = task %s in %s, want %s in %s", got.ID, got.ContextID, sent.ID, sent.ContextID)
		}
		if got.Status.State != a2a.TaskStateCompleted {
			t.Errorf("GetTask() state = %v, want %v", got.Status.State, a2a.TaskStateCompleted)
		}
		if text, _ := artifactText(got, "result"); text != "done" {
			t.Errorf("GetTask() artifact %q text = %q, want %q", "result", text, "done")
		}
		if len(got.History) == 0 || got.History[0].ID != req.ID || got.History[0].Role != a2a.MessageRoleUser {
			t.Errorf("GetTask() history = %v, want it to start with the request %s", roles(got.History), req.ID)
		}
	})
}

// ---- ListTasks ----

func taskIDs(tasks []*a2a.Task) []a2a.TaskID {
	out := make([]a2a.TaskID, len(tasks))
	for i, task := range tasks {
		out[i] = task.ID
	}
	return out
}

func sortedIDs(ids []a2a.TaskID) []a2a.TaskID {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func TestListTasksFiltersByContext(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		ctxA, ctxB := a2a.NewContextID(), a2a.NewContextID()
		var inA []a2a.TaskID
		for _, cx := range []string{ctxA, ctxB, ctxA} {
			m := userText("complete")
			m.ContextID = cx
			task := sendState(t, on.ctx, on.c, m, a2a.TaskStateCompleted)
			if cx == ctxA {
				inA = append(inA, task.ID)
			}
		}

		list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{ContextID: ctxA})
		if err != nil {
			t.Fatalf("ListTasks(contextId) error = %v", err)
		}
		if got, want := sortedIDs(taskIDs(list.Tasks)), sortedIDs(inA); !slices.Equal(got, want) {
			t.Errorf("ListTasks(contextId) = %v, want %v", got, want)
		}
		for _, task := range list.Tasks {
			if task.ContextID != ctxA {
				t.Errorf("ListTasks(contextId) task %s contextId = %q, want %q", task.ID, task.ContextID, ctxA)
			}
		}
		if list.TotalSize != len(inA) {
			t.Errorf("ListTasks(contextId) totalSize = %d, want %d", list.TotalSize, len(inA))
		}
	})
}

func TestListTasksFiltersByStatus(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		want := map[a2a.TaskState][]a2a.TaskID{}
		for _, cmd := range []struct {
			text  string
			state a2a.TaskState
		}{
			{"complete", a2a.TaskStateCompleted},
			{"ask", a2a.TaskStateInputRequired},
			{"complete", a2a.TaskStateCompleted},
			{"fail", a2a.TaskStateFailed},
		} {
			task := sendState(t, on.ctx, on.c, userText(cmd.text), cmd.state)
			want[cmd.state] = append(want[cmd.state], task.ID)
		}

		for _, state := range []a2a.TaskState{a2a.TaskStateCompleted, a2a.TaskStateInputRequired, a2a.TaskStateFailed, a2a.TaskStateCanceled} {
			list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{Status: state})
			if err != nil {
				t.Fatalf("ListTasks(status %v) error = %v", state, err)
			}
			if got, want := sortedIDs(taskIDs(list.Tasks)), sortedIDs(want[state]); !slices.Equal(got, want) {
				t.Errorf("ListTasks(status %v) = %v, want %v", state, got, want)
			}
			for _, task := range list.Tasks {
				if task.Status.State != state {
					t.Errorf("ListTasks(status %v) task %s state = %v", state, task.ID, task.Status.State)
				}
			}
		}
	})
}

// nextMilli waits (at most a few milliseconds) until the wall clock has
// moved past the current millisecond, so the next write sorts strictly
// after every earlier one (the store keeps update times in milliseconds).
func nextMilli() {
	start := time.Now().UnixMilli()
	for deadline := time.Now().Add(time.Second); time.Now().UnixMilli() <= start && time.Now().Before(deadline); {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestListTasksPagingVisitsEveryTaskOnceNewestFirst(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		const n, size = 7, 3
		var created []a2a.TaskID
		for range n {
			nextMilli()
			created = append(created, sendState(t, on.ctx, on.c, userText("complete"), a2a.TaskStateCompleted).ID)
		}
		newestFirst := slices.Clone(created)
		slices.Reverse(newestFirst)

		var seen []a2a.TaskID
		token := ""
		for page := 1; ; page++ {
			if page > n {
				t.Fatalf("ListTasks: more than %d pages for %d tasks", n, n)
			}
			list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{PageSize: size, PageToken: token})
			if err != nil {
				t.Fatalf("ListTasks(page %d) error = %v", page, err)
			}
			if len(list.Tasks) == 0 || len(list.Tasks) > size {
				t.Fatalf("ListTasks(page %d) = %d tasks, want 1 to %d", page, len(list.Tasks), size)
			}
			if list.TotalSize != n {
				t.Errorf("ListTasks(page %d) totalSize = %d, want %d", page, list.TotalSize, n)
			}
			seen = append(seen, taskIDs(list.Tasks)...)
			token = list.NextPageToken
			if token == "" {
				break
			}
		}
		if !slices.Equal(seen, newestFirst) {
			t.Errorf("ListTasks pages visited %v, want every task once, newest first: %v", seen, newestFirst)
		}
	})
}

func TestListTasksIncludeArtifacts(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("complete"), a2a.TaskStateCompleted)

		for _, include := range []bool{false, true} {
			list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{IncludeArtifacts: include})
			if err != nil {
				t.Fatalf("ListTasks(includeArtifacts %v) error = %v", include, err)
			}
			if len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
				t.Fatalf("ListTasks(includeArtifacts %v) = %v, want [%s]", include, taskIDs(list.Tasks), task.ID)
			}
			got := list.Tasks[0]
			if !include {
				if len(got.Artifacts) != 0 {
					t.Errorf("ListTasks(includeArtifacts false) artifacts = %d, want none", len(got.Artifacts))
				}
				continue
			}
			if text, ok := artifactText(got, "result"); !ok || text != "done" {
				t.Errorf("ListTasks(includeArtifacts true) artifact %q = %q (found %v), want %q", "result", text, ok, "done")
			}
		}
	})
}

func TestListTasksBadPageTokenIsInvalidParams(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		sendState(t, on.ctx, on.c, userText("complete"), a2a.TaskStateCompleted)
		for _, token := range []string{"not a token", "bm90LWpzb24", "e30"} { // junk, base64 "not-json", base64 "{}"
			_, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{PageToken: token})
			wantErr(t, "ListTasks(pageToken "+token+")", err, a2a.ErrInvalidParams)
		}
	})
}

// ---- CancelTask ----

func TestCancelPausedTask(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, userText("ask"), a2a.TaskStateInputRequired)
		cancelTask(t, on.ctx, on.c, task.ID)
	})
}

func TestCancelWorkingTaskStaysCanceledAfterRunEnds(t *testing.T) {
	eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
		key := apitest.UniqueKey(t)
		t.Cleanup(func() { apitest.Release(key) })

		task := sendAsync(t, on.ctx, on.c, userText("block "+key))
		waitState(t, on.ctx, on.c, task.ID, a2a.TaskStateWorking)

		cancelTask(t, on.ctx, on.c, task.ID)

		// Let the blocked run go; it must not complete the canceled task.
		apitest.Release(key)
		// The released run ends (its write loses); then the task is still
		// canceled and holds nothing the run made.
		if err := on.env.Engine.Idle(on.ctx); err != nil {
			t.Fatalf("Idle: %v", err)
		}
		got := getTask(t, on.ctx, on.c, task.ID)
		if got.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("GetTask() after Release state = %v, want %v", got.Status.State, a2a.TaskStateCanceled)
		}
		if len(got.Artifacts) != 0 {
			t.Fatalf("GetTask() after Release artifacts = %d, want none (the run must not finish)", len(got.Artifacts))
		}
	})
}

// ---- Refusals ----

// Calls that name a task to follow up, read, cancel or subscribe to, made on
// a completed task or on an unknown task ID, for the refusals table.
var (
	followUpCall = func(t *testing.T, on served, id a2a.TaskID) error {
		_, err := on.c.SendMessage(on.ctx, &a2a.SendMessageRequest{Message: followUp(id, userText("complete"))})
		return err
	}
	streamFollowUpCall = func(t *testing.T, on served, id a2a.TaskID) error {
		return firstError(t, on.ctx, streamSend(t, on.env, on.tr, followUp(id, userText("complete"))))
	}
	subscribeCall = func(t *testing.T, on served, id a2a.TaskID) error {
		return firstError(t, on.ctx, subscribe(t, on.env, on.tr, id))
	}
	getCall = func(t *testing.T, on served, id a2a.TaskID) error {
		_, err := on.c.GetTask(on.ctx, &a2a.GetTaskRequest{ID: id})
		return err
	}
	cancelCall = func(t *testing.T, on served, id a2a.TaskID) error {
		_, err := on.c.CancelTask(on.ctx, &a2a.CancelTaskRequest{ID: id})
		return err
	}
)

func TestRefusedCallsNameTheirError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		finished bool // the call names a completed task (the task must stay so), else an unknown task ID
		call     func(t *testing.T, on served, id a2a.TaskID) error
		what     string // the call in failure messages
		want     error
		// check is wantErr, or wantRefused for a streaming call
		check func(t *testing.T, call string, err, want error)
	}{
		{"FollowUpToUnknownTaskIsTaskNotFound", false, followUpCall, "SendMessage(unknown taskId)", a2a.ErrTaskNotFound, wantErr},
		{"FollowUpToTerminalTaskIsUnsupportedOperation", true, followUpCall, "SendMessage(completed task)", a2a.ErrUnsupportedOperation, wantErr},
		{"StreamingMessageWithNoPartsIsInvalidParams", false, func(t *testing.T, on served, _ a2a.TaskID) error {
			empty := &a2a.Message{ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser} // no parts
			return firstError(t, on.ctx, streamSend(t, on.env, on.tr, empty))
		}, "SendStreamingMessage(no parts)", a2a.ErrInvalidParams, wantRefused},
		{"StreamingMessageToUnknownTaskIsTaskNotFound", false, streamFollowUpCall, "SendStreamingMessage(unknown taskId)", a2a.ErrTaskNotFound, wantRefused},
		{"SubscribeToTerminalTaskIsUnsupportedOperation", true, subscribeCall, "SubscribeToTask(completed task)", a2a.ErrUnsupportedOperation, wantRefused},
		{"SubscribeToUnknownTaskIsTaskNotFound", false, subscribeCall, "SubscribeToTask(unknown task)", a2a.ErrTaskNotFound, wantRefused},
		{"GetUnknownTaskIsTaskNotFound", false, getCall, "GetTask(unknown)", a2a.ErrTaskNotFound, wantErr},
		{"CancelTerminalTaskIsNotCancelable", true, cancelCall, "CancelTask(completed)", a2a.ErrTaskNotCancelable, wantErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachScript(t, apitest.Options{}, func(t *testing.T, on served) {
				if !tc.finished {
					tc.check(t, tc.what, tc.call(t, on, a2a.NewTaskID()), tc.want)
					return
				}
				task := sendState(t, on.ctx, on.c, userText("complete"), a2a.TaskStateCompleted)
				tc.check(t, tc.what, tc.call(t, on, task.ID), tc.want)
				if got := getTask(t, on.ctx, on.c, task.ID).Status.State; got != a2a.TaskStateCompleted {
					t.Errorf("GetTask() after %s state = %v, want %v (unchanged)", tc.what, got, a2a.TaskStateCompleted)
				}
			})
		})
	}
}

// firstError requires the stream's first item to be an error, not an
// event, and returns it.
func firstError(t *testing.T, ctx context.Context, s *stream) error {
	t.Helper()
	it, ok := s.next(t, ctx)
	switch {
	case !ok:
		t.Fatalf("stream ended without an error, want one")
	case it.err == nil:
		t.Fatalf("first item = %s, want an error", describe(it.ev))
	}
	return it.err
}

// ---- A2A-Version ----

// rawPost posts body to url with the A2A-Version header set to version
// (none when version is ""), and returns the status and decoded body.
func rawPost(t *testing.T, url, version string, body any) (int, map[string]any) {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("build request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set(a2a.SvcParamVersion, version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response of POST %s: %v", url, err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("POST %s: response %q is not a JSON object: %v", url, data, err)
	}
	return resp.StatusCode, out
}

func jsonrpcSend(text string) map[string]any {
	return map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
		"params": &a2a.SendMessageRequest{Message: userText(text)},
	}
}

var badVersions = []struct{ name, version string }{
	{"missing", ""},
	{"0.3", "0.3"},
}

const versionHint = "A2A-Version: 1.0"

// rawBindings send SendMessage("complete") to the script agent as raw
// requests, one binding each.
var rawBindings = []struct {
	name string
	post func(t *testing.T, env *apitest.Env, version string) (status int, out map[string]any)
	// result is the part of a successful response that holds the event.
	result func(out map[string]any) any
	// refused checks what the binding adds to a VersionNotSupported error
	// object e.
	refused func(t *testing.T, status int, e map[string]any)
}{
	{
		name: "JSONRPC",
		post: func(t *testing.T, env *apitest.Env, version string) (int, map[string]any) {
			return rawPost(t, env.AgentURL("script")+askpoint.PathJSONRPC, version, jsonrpcSend("complete"))
		},
		result: func(out map[string]any) any { return out["result"] },
		refused: func(t *testing.T, _ int, e map[string]any) {
			if code, _ := e["code"].(float64); code != -32009 {
				t.Errorf("JSON-RPC error code = %v, want -32009 (VersionNotSupported)", e["code"])
			}
		},
	},
	{
		name: "HTTP+JSON",
		post: func(t *testing.T, env *apitest.Env, version string) (int, map[string]any) {
			return rawPost(t, env.AgentURL("script")+askpoint.PathREST+"/message:send", version,
				&a2a.SendMessageRequest{Message: userText("complete")})
		},
		result: func(out map[string]any) any { return out },
		refused: func(t *testing.T, status int, e map[string]any) {
			if status != http.StatusBadRequest {
				t.Errorf("HTTP status = %d, want %d", status, http.StatusBadRequest)
			}
			reason := ""
			if details, _ := e["details"].([]any); len(details) > 0 {
				if d, _ := details[0].(map[string]any); d != nil {
					reason, _ = d["reason"].(string)
				}
			}
			if want := a2a.ErrorReason(a2a.ErrVersionNotSupported); reason != want {
				t.Errorf("HTTP+JSON error reason = %q, want %q", reason, want)
			}
		},
	},
}

func TestMissingOrOldVersionIsVersionNotSupportedAndStoresNothing(t *testing.T) {
	t.Parallel()
	for _, b := range rawBindings {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			env := apitest.Start(t, apitest.Options{})
			for _, tc := range badVersions {
				t.Run(tc.name, func(t *testing.T) {
					status, out := b.post(t, env, tc.version)
					e, ok := out["error"].(map[string]any)
					if !ok {
						t.Fatalf("%s response = %v, want an error", b.name, out)
					}
					if msg, _ := e["message"].(string); !strings.Contains(msg, versionHint) {
						t.Errorf("%s error message = %q, want it to name the header %q", b.name, msg, versionHint)
					}
					b.refused(t, status, e)
				})
			}
			assertNoTasks(t, env)
		})
	}
}

// assertNoTasks requires the server to hold no task of the script agent.
func assertNoTasks(t *testing.T, env *apitest.Env) {
	t.Helper()
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	list, err := c.ListTasks(testCtx(t), &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks() error = %v", err)
	}
	if list.TotalSize != 0 {
		t.Errorf("ListTasks() totalSize = %d after refused requests, want 0", list.TotalSize)
	}
}

func TestVersionPatchReleaseAccepted(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{})
	for _, b := range rawBindings {
		t.Run(b.name, func(t *testing.T) {
			status, out := b.post(t, env, "1.0.1")
			if status != http.StatusOK || out["error"] != nil {
				t.Fatalf("%s with A2A-Version 1.0.1 = status %d, %v; want %d with a result", b.name, status, out, http.StatusOK)
			}
			raw, _ := json.Marshal(b.result(out))
			var sr a2a.StreamResponse
			if err := json.Unmarshal(raw, &sr); err != nil {
				t.Fatalf("%s result %s: %v", b.name, raw, err)
			}
			task, ok := sr.Event.(*a2a.Task)
			if !ok || task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("%s with A2A-Version 1.0.1 result = %s, want task %v", b.name, describe(sr.Event), a2a.TaskStateCompleted)
			}
		})
	}
}

// ---- History is the audit trail ----

func TestHistoryIsAuditTrailInOrder(t *testing.T) {
	eachServed(t, func(t *testing.T) *apitest.Env { return apitest.Start(t, apitest.Options{}) }, "expense", func(t *testing.T, on served) {
		request := userText("File my taxi receipt from Tuesday, 42 euros")
		first := sendState(t, on.ctx, on.c, request, a2a.TaskStateInputRequired)
		q1 := questionID(t, "first question", first.Status.Message)

		textAnswer := followUp(first.ID, userText("engineering"))
		reask := sendState(t, on.ctx, on.c, textAnswer, a2a.TaskStateInputRequired)
		q2 := questionID(t, "re-ask", reask.Status.Message)
		if q2 == q1 {
			t.Errorf("re-ask questionId = %q, want a new ID (not the first question's)", q2)
		}
		reaskData, _ := dataPart(reask.Status.Message.Parts)
		if !errorsMention(reaskData["errors"], "expected one of CC-4410, CC-4420") {
			t.Errorf("re-ask errors = %v, want one saying %q", reaskData["errors"], "expected one of CC-4410, CC-4420")
		}

		dataAnswer := followUp(first.ID, userData(map[string]any{"questionId": q2, "costCentre": "CC-4410"}))
		done := sendState(t, on.ctx, on.c, dataAnswer, a2a.TaskStateCompleted)

		var expenseID string
		for _, a := range done.Artifacts {
			if d, ok := dataPart(a.Parts); ok {
				expenseID, _ = d["expenseId"].(string)
			}
		}
		if expenseID == "" {
			t.Errorf("completed task artifacts = %d, want one with a data part holding expenseId", len(done.Artifacts))
		}

		h := getTask(t, on.ctx, on.c, first.ID).History
		wantRoles := []a2a.MessageRole{
			a2a.MessageRoleUser, a2a.MessageRoleAgent, // request, question
			a2a.MessageRoleUser, a2a.MessageRoleAgent, // text answer, re-ask
			a2a.MessageRoleUser, a2a.MessageRoleAgent, // data answer, final message
		}
		if got := roles(h); !slices.Equal(got, wantRoles) {
			t.Fatalf("GetTask() history roles = %v, want %v", got, wantRoles)
		}
		for i, want := range []string{request.ID, first.Status.Message.ID, textAnswer.ID, reask.Status.Message.ID, dataAnswer.ID, done.Status.Message.ID} {
			if h[i].ID != want {
				t.Errorf("history[%d] messageId = %s (%q), want %s", i, h[i].ID, messageText(h[i]), want)
			}
		}
		if got := questionID(t, "history[1]", h[1]); got != q1 {
			t.Errorf("history[1] questionId = %q, want %q", got, q1)
		}
		if got := questionID(t, "history[3]", h[3]); got != q2 {
			t.Errorf("history[3] questionId = %q, want %q", got, q2)
		}
		if got := messageText(h[2]); got != "engineering" {
			t.Errorf("history[2] text = %q, want %q", got, "engineering")
		}
		if d, ok := dataPart(h[4].Parts); !ok || d["costCentre"] != "CC-4410" || d["questionId"] != q2 {
			t.Errorf("history[4] data = %v, want costCentre CC-4410 and questionId %q", d, q2)
		}
		if got := messageText(h[5]); !strings.Contains(got, expenseID) || expenseID == "" {
			t.Errorf("history[5] text = %q, want the final message naming expense %q", got, expenseID)
		}
	})
}

// questionID reads the questionId of a question message's data part.
func questionID(t *testing.T, what string, m *a2a.Message) string {
	t.Helper()
	if m == nil {
		t.Fatalf("%s: no message, want a question", what)
	}
	if m.Role != a2a.MessageRoleAgent {
		t.Errorf("%s role = %v, want %v", what, m.Role, a2a.MessageRoleAgent)
	}
	d, ok := dataPart(m.Parts)
	if !ok {
		t.Fatalf("%s has no data part, want one holding questionId", what)
	}
	id, _ := d["questionId"].(string)
	if id == "" {
		t.Fatalf("%s data part questionId = %v, want a non-empty string", what, d["questionId"])
	}
	return id
}

// errorsMention reports whether the re-ask's errors list holds an error
// whose message contains text.
func errorsMention(errs any, text string) bool {
	list, _ := errs.([]any)
	for _, e := range list {
		if m, _ := e.(map[string]any); m != nil {
			if msg, _ := m["message"].(string); strings.Contains(msg, text) {
				return true
			}
		}
	}
	return false
}
