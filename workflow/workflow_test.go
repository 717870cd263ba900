package workflow_test

// These tests run workflows on a real askpoint server (SQLite, HTTP on
// 127.0.0.1) whose participants are askpoint agents reached over A2A at
// their own URLs, as askpoint serve runs the planning demo. They pin the
// property the workflow package promises and that frameworks which treat a
// participant's input-required as a finished turn lack: a participant's
// question suspends the whole workflow with one request to the caller; no
// other participant is invoked meanwhile, nothing another participant says
// is bound to the waiting task, and only the caller's answer reaches it.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/workflow"
)

func participants(names ...string) []workflow.Participant {
	var out []workflow.Participant
	for _, n := range names {
		out = append(out, workflow.Participant{Name: n})
	}
	return out
}

// suspendedRun starts a run of the workflow agent flow with a streaming
// SendMessage and requires it to stop in input-required with exactly one
// request, asked for the asker: it returns the workflow's task, the
// request's question ID and the asker's task.
func suspendedRun(t *testing.T, r *rig, flow, text string) (task *a2a.Task, requestID string, askerTask a2a.TaskID) {
	t.Helper()
	ctx := testCtx(t)
	before := len(r.asker.tasks())
	got := stream(t, ctx, r.client(flow), r.request(text))
	irs := got.inputRequired()
	if len(irs) != 1 {
		t.Fatalf("the stream had %d input-required events, want exactly 1 request; last status %v %q", len(irs), got.last.State, textOf(got.last.Message))
	}
	q := mustQuestion(t, irs[0])
	if q.ID == "" {
		t.Fatalf("the request has no question ID")
	}
	tasks := r.asker.tasks()
	if len(tasks) != before+1 {
		t.Fatalf("the asker was started %d times by this run, want once", len(tasks)-before)
	}
	askerTask = a2a.TaskID(tasks[len(tasks)-1])
	if p := q.About[workflow.AboutParticipant]; p != "asker" {
		t.Errorf("request's about.%s = %q, want \"asker\" (about %v)", workflow.AboutParticipant, p, q.About)
	}
	if pt := q.About[workflow.AboutTask]; pt != string(askerTask) {
		t.Errorf("request's about.%s = %q, want the asker's task %s", workflow.AboutTask, pt, askerTask)
	}
	if !strings.Contains(q.Text, "asker") || !strings.Contains(q.Text, "confirm") {
		t.Errorf("request text = %q, want it to name the asker and carry its question", q.Text)
	}
	return got.task, q.ID, askerTask
}

// askerThenChatter is the workflow agent "flow" in mode over the asker and
// then the chatter.
func askerThenChatter(mode workflow.Mode) map[string]workflow.Config {
	return map[string]workflow.Config{"flow": {Mode: mode, Participants: participants("asker", "chatter")}}
}

// suspend starts a rig serving askerThenChatter(mode) and a run of it that
// the asker's question stops (suspendedRun, which says what it returns).
func suspend(t *testing.T, mode workflow.Mode) (r *rig, task *a2a.Task, requestID string, askerTask a2a.TaskID) {
	t.Helper()
	r = newRig(t, "", askerThenChatter(mode))
	task, requestID, askerTask = suspendedRun(t, r, "flow", "Book the 9:40 train to Lyon")
	return r, task, requestID, askerTask
}

// answerToEnd answers request reqID of run task with confirm value, waits
// for the run to complete and requires value to be the one answer the
// asker got.
func answerToEnd(t *testing.T, r *rig, ctx context.Context, task a2a.TaskID, reqID, value string) *a2a.Task {
	t.Helper()
	flow := r.client("flow")
	send(t, ctx, flow, answer(task, map[string]any{"questionId": reqID, "confirm": value}))
	done := waitState(t, ctx, flow, task, a2a.TaskStateCompleted)
	if got := r.asker.answerValues(); !slices.Equal(got, []string{value}) {
		t.Fatalf("the asker got answers %q, want exactly the caller's [%q]", got, value)
	}
	return done
}

// wantChatterSilent requires the chatter never to have been invoked once
// the server has settled; when says after what.
func wantChatterSilent(t *testing.T, r *rig, when string) {
	t.Helper()
	r.settle()
	if n := r.chatter.count(); n != 0 {
		t.Fatalf("the chatter was invoked %d times %s (with %q), want never", n, when, r.chatter.startTexts())
	}
}

// TestParticipantQuestionSuspendsTheWorkflow is the regression for
// auto-answering: in every mode the chatter speaks right after the asker,
// and its reply ("yes, confirmed") would be taken as the asker's answer by
// a framework that binds the next message to the waiting task.
func TestParticipantQuestionSuspendsTheWorkflow(t *testing.T) {
	modes := []struct {
		name    string
		cfg     workflow.Config
		handoff string
	}{
		{"group-chat", workflow.Config{Mode: workflow.GroupChat, Participants: participants("asker", "chatter"), MaxRounds: 2}, ""},
		{"handoff", workflow.Config{Mode: workflow.Handoff, Participants: participants("asker", "chatter")}, "chatter"},
		{"sequential", workflow.Config{Mode: workflow.Sequential, Participants: participants("asker", "chatter")}, ""},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, m.handoff, map[string]workflow.Config{"flow": m.cfg})
			ctx := testCtx(t)
			flow, askerC := r.client("flow"), r.client("asker")

			task, reqID, askerTask := suspendedRun(t, r, "flow", "Book the 9:40 train to Lyon")
			chatterBefore := r.chatter.count()
			if chatterBefore != 0 {
				t.Fatalf("the chatter was invoked %d times before the asker's turn ended, want 0", chatterBefore)
			}

			// Suspended: nobody else speaks, nothing reaches the asker.
			r.settle()
			if n := r.chatter.count(); n != chatterBefore {
				t.Fatalf("the chatter was invoked %d times while the workflow waited for the caller, want 0", n-chatterBefore)
			}
			if n := r.asker.count(); n != 1 {
				t.Fatalf("the asker was started %d times, want 1", n)
			}
			now := getHistory(t, ctx, flow, task.ID)
			if q := mustQuestion(t, now.Status); q.ID != reqID {
				t.Fatalf("the workflow's open request is %s, want still %s", q.ID, reqID)
			}
			at := getHistory(t, ctx, askerC, askerTask)
			if at.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("asker's task is %v, want input-required while the caller has not answered", at.Status.State)
			}
			for _, msg := range at.History {
				if strings.Contains(textOf(msg), chatterReply) {
					t.Fatalf("the asker's task got the chatter's words: %s", historyText(at))
				}
			}
			if a := userAnswers(at); len(a) != 0 || len(r.asker.answerValues()) != 0 {
				t.Fatalf("the asker's question was answered before the caller answered: %s", historyText(at))
			}
			eventually(t, "the request's notification", func() bool { return len(r.hook.requestIDs(task.ID)) >= 1 })

			// The caller answers the request: exactly that reaches the asker.
			const value = "the caller says go"
			done := answerToEnd(t, r, ctx, task.ID, reqID, value)

			at = getHistory(t, ctx, askerC, askerTask)
			answers := userAnswers(at)
			if len(answers) != 1 {
				t.Fatalf("asker's history has %d answers, want 1: %s", len(answers), historyText(at))
			}
			if d := dataOf(answers[0]); d["confirm"] != value {
				t.Fatalf("asker's answer message = %s, want confirm %q", describeMessage(answers[0]), value)
			}
			if by := answeredBy(answers[0]); by != "caller" {
				t.Errorf("asker's answer message %s = %v, want \"caller\"", client.MetaAnsweredBy, by)
			}
			for _, msg := range at.History {
				if strings.Contains(textOf(msg), chatterReply) {
					t.Fatalf("the asker's task got the chatter's words: %s", historyText(at))
				}
			}

			// The conversation went on after the answer.
			if n := r.chatter.count(); n != 1 {
				t.Fatalf("the chatter was invoked %d times, want once, after the answer", n)
			}
			if heard := r.chatter.startTexts()[0]; !strings.Contains(heard, "asker got "+value) {
				t.Errorf("the chatter heard %q, want the asker's reply to the caller's answer", heard)
			}
			tr := transcriptOf(t, done)
			if got := speakers(tr.Transcript); got != "caller,asker,chatter" || tr.Rounds != 2 {
				t.Fatalf("transcript = %s (%d rounds), want caller,asker,chatter in 2 rounds", got, tr.Rounds)
			}

			// One request, notified once.
			eventually(t, "the completion", func() bool { return slices.Contains(r.hook.states(task.ID), "completed") })
			if ids := r.hook.requestIDs(task.ID); !slices.Equal(ids, []string{reqID}) {
				t.Fatalf("input-required notifications carried requests %q, want exactly [%s]", ids, reqID)
			}
		})
	}
}

// TestSuspendedTurnConsumesNoRound: a group chat of three rounds over
// [asker, chatter] takes three finished turns even though each of the
// asker's turns waited for the caller.
func TestSuspendedTurnConsumesNoRound(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", map[string]workflow.Config{
		"flow": {Mode: workflow.GroupChat, Participants: participants("asker", "chatter"), MaxRounds: 3},
	})
	ctx := testCtx(t)
	flow := r.client("flow")

	task, first, _ := suspendedRun(t, r, "flow", "Plan the offsite")
	second := send(t, ctx, flow, answer(task.ID, map[string]any{"questionId": first, "confirm": "first"}))
	if second.Status.State != a2a.TaskStateInputRequired {
		second = waitState(t, ctx, flow, task.ID, a2a.TaskStateInputRequired)
	}
	q2 := mustQuestion(t, second.Status)
	if q2.ID == first {
		t.Fatalf("the asker's second turn reused request %s", first)
	}
	if n := r.chatter.count(); n != 1 {
		t.Fatalf("before the asker's second turn the chatter spoke %d times, want 1", n)
	}
	send(t, ctx, flow, answer(task.ID, map[string]any{"questionId": q2.ID, "confirm": "second"}))
	done := waitState(t, ctx, flow, task.ID, a2a.TaskStateCompleted)

	tr := transcriptOf(t, done)
	if tr.Rounds != 3 {
		t.Fatalf("rounds = %d, want 3 (a suspended turn is not a round)", tr.Rounds)
	}
	var texts []string
	for _, turn := range tr.Transcript {
		texts = append(texts, turn.Speaker+": "+turn.Text)
	}
	want := []string{"caller: Plan the offsite", "asker: asker got first", "chatter: " + chatterReply, "asker: asker got second"}
	if !slices.Equal(texts, want) {
		t.Fatalf("transcript = %q, want %q", texts, want)
	}
	if n := r.chatter.count(); n != 1 {
		t.Fatalf("the chatter spoke %d times, want 1", n)
	}
	if n := r.asker.count(); n != 2 {
		t.Fatalf("the asker was started %d times, want 2 (one task per turn)", n)
	}
}

// TestRestartBetweenSuspensionAndResume: the suspended workflow is rows in
// the store; a new server on the same address and database takes the
// caller's answer, the run completes, and the request was emitted once.
func TestRestartBetweenSuspensionAndResume(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", askerThenChatter(workflow.Sequential))
	task, reqID, askerTask := suspendedRun(t, r, "flow", "Renew the parking permit")
	eventually(t, "the request's notification", func() bool { return len(r.hook.requestIDs(task.ID)) >= 1 })

	r.restart()
	r.settle() // the new server's pollers and push deliverer have run
	if ids := r.hook.requestIDs(task.ID); !slices.Equal(ids, []string{reqID}) {
		t.Fatalf("after the restart, input-required notifications carried %q, want exactly [%s]", ids, reqID)
	}
	if n := r.chatter.count(); n != 0 {
		t.Fatalf("the chatter was invoked %d times across the restart, want 0", n)
	}

	ctx := testCtx(t)
	flow := r.client("flow")
	if q := mustQuestion(t, getHistory(t, ctx, flow, task.ID).Status); q.ID != reqID {
		t.Fatalf("after the restart the open request is %s, want %s", q.ID, reqID)
	}
	done := answerToEnd(t, r, ctx, task.ID, reqID, "after the restart")
	if got := speakers(transcriptOf(t, done).Transcript); got != "caller,asker,chatter" {
		t.Fatalf("transcript speakers = %s, want caller,asker,chatter", got)
	}
	if a := userAnswers(getHistory(t, ctx, r.client("asker"), askerTask)); len(a) != 1 {
		t.Fatalf("the asker's task has %d answers, want 1", len(a))
	}
	eventually(t, "the completion", func() bool { return slices.Contains(r.hook.states(task.ID), "completed") })
	r.settle()
	if ids := r.hook.requestIDs(task.ID); !slices.Equal(ids, []string{reqID}) {
		t.Fatalf("input-required notifications carried %q, want exactly [%s] (one request, emitted once)", ids, reqID)
	}
	if got := strings.Join(r.hook.states(task.ID), ","); got != "input-required,completed" {
		t.Errorf("notifications = %s, want input-required,completed", got)
	}
}

// TestAutoAnswerIsOptInAndRecorded: a participant allowed to be answered
// from the workflow's context is answered by it (recorded as such in both
// tasks), and the workflow never asks the caller; without AutoAnswer the
// same question suspends the workflow.
func TestAutoAnswerIsOptInAndRecorded(t *testing.T) {
	t.Parallel()
	const fact = "confirmed by the travel policy"
	auto := participants("asker", "chatter")
	auto[0].AutoAnswer = []client.Resolver{client.Facts(map[string]any{"confirm": fact})}
	r := newRig(t, "", map[string]workflow.Config{
		"auto":   {Mode: workflow.Sequential, Participants: auto},
		"manual": askerThenChatter(workflow.Sequential)["flow"],
	})
	ctx := testCtx(t)
	flow := r.client("auto")

	got := stream(t, ctx, flow, r.request("Book the 9:40 train to Lyon"))
	if irs := got.inputRequired(); len(irs) != 0 {
		t.Fatalf("the workflow went input-required %d times, want never (its participant may be answered from context)", len(irs))
	}
	done := waitState(t, ctx, flow, got.task.ID, a2a.TaskStateCompleted)
	if tr := transcriptOf(t, done); speakers(tr.Transcript) != "caller,asker,chatter" || tr.Transcript[1].Text != "asker got "+fact {
		t.Fatalf("transcript = %+v, want the asker to have got %q", tr.Transcript, fact)
	}
	hist := getHistory(t, ctx, flow, done.ID)
	recorded := false
	for _, m := range hist.History {
		recorded = recorded || m.Role == a2a.MessageRoleAgent && strings.Contains(textOf(m), "The workflow answered") && strings.Contains(textOf(m), "asker")
	}
	if !recorded {
		t.Fatalf("the workflow's history does not record that the workflow answered the asker: %s", historyText(hist))
	}
	at := getHistory(t, ctx, r.client("asker"), a2a.TaskID(r.asker.tasks()[0]))
	answers := userAnswers(at)
	if len(answers) != 1 || dataOf(answers[0])["confirm"] != fact {
		t.Fatalf("the asker's answers = %s, want one with confirm %q", historyText(at), fact)
	}
	if by := answeredBy(answers[0]); by != "workflow" {
		t.Fatalf("the asker's answer %s = %v, want \"workflow\"", client.MetaAnsweredBy, by)
	}
	r.settle()
	if ids := r.hook.requestIDs(done.ID); len(ids) != 0 {
		t.Fatalf("the caller was notified of requests %q, want none", ids)
	}

	// The default: the same participant without AutoAnswer asks the caller.
	suspendedRun(t, r, "manual", "Book the 9:40 train to Lyon")
	if n := r.chatter.count(); n != 1 {
		t.Fatalf("the chatter spoke %d times, want once (in the auto run only)", n)
	}
	if ids := r.asker.answerValues(); len(ids) != 1 {
		t.Fatalf("the asker got %d answers, want only the auto run's", len(ids))
	}
}

// TestParticipantWithNoMessageFailsTheWorkflow: when the first participant
// of a sequence says nothing, the second is not invoked with an invented
// message; the workflow fails with ErrNoMessage.
func TestParticipantWithNoMessageFailsTheWorkflow(t *testing.T) {
	t.Parallel()
	r := newRig(t, "", map[string]workflow.Config{
		"flow": {Mode: workflow.Sequential, Participants: participants("silent", "chatter")},
	})
	ctx := testCtx(t)
	flow := r.client("flow")
	task := send(t, ctx, flow, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Summarise the meeting")))
	if task.Status.State != a2a.TaskStateFailed {
		task = waitState(t, ctx, flow, task.ID, a2a.TaskStateFailed)
	}
	if msg := textOf(task.Status.Message); !strings.Contains(msg, workflow.ErrNoMessage.Error()) {
		t.Fatalf("status message = %q, want it to contain %q", msg, workflow.ErrNoMessage.Error())
	}
	if n := r.silent.count(); n != 1 {
		t.Fatalf("the silent participant was invoked %d times, want 1", n)
	}
	wantChatterSilent(t, r, "by the run")
}

// TestPendingRequestsAreListed: the suspended runs are the workflow agent's
// tasks in input-required.
func TestPendingRequestsAreListed(t *testing.T) {
	t.Parallel()
	r, pending, reqID, askerTask := suspend(t, workflow.Sequential)
	ctx := testCtx(t)
	flow := r.client("flow")
	other, otherReq, _ := suspendedRun(t, r, "flow", "Book the 18:02 back")
	send(t, ctx, flow, answer(other.ID, map[string]any{"questionId": otherReq, "confirm": "yes"}))
	waitState(t, ctx, flow, other.ID, a2a.TaskStateCompleted)

	res, err := flow.ListTasks(ctx, &a2a.ListTasksRequest{Status: a2a.TaskStateInputRequired})
	if err != nil {
		t.Fatalf("ListTasks(input-required) error = %v", err)
	}
	var ids []a2a.TaskID
	for _, tk := range res.Tasks {
		ids = append(ids, tk.ID)
	}
	if len(res.Tasks) != 1 || res.Tasks[0].ID != pending.ID {
		t.Fatalf("ListTasks(input-required) = %v, want exactly the suspended run %s", ids, pending.ID)
	}
	q := mustQuestion(t, res.Tasks[0].Status)
	if q.ID != reqID || q.About[workflow.AboutParticipant] != "asker" || q.About[workflow.AboutTask] != string(askerTask) {
		t.Fatalf("listed request = %s about %v, want %s about asker's task %s", q.ID, q.About, reqID, askerTask)
	}
}

// TestCallerDeclineEndsTheWorkflowWithoutTheNextParticipant: declining the
// request is carried to the asker as the caller's decline; the chatter is
// never invoked.
func TestCallerDeclineEndsTheWorkflowWithoutTheNextParticipant(t *testing.T) {
	t.Parallel()
	r, task, reqID, askerTask := suspend(t, workflow.GroupChat)
	ctx := testCtx(t)
	flow := r.client("flow")
	send(t, ctx, flow, answer(task.ID, map[string]any{"questionId": reqID, "action": "decline", "reason": "not this week"}))
	end := waitState(t, ctx, flow, task.ID, a2a.TaskStateRejected) // a decline means the same at every level
	if msg := textOf(end.Status.Message); !strings.Contains(strings.ToLower(msg), "asker") {
		t.Errorf("status message = %q, want it to say the asker's turn ended it", msg)
	}
	at := getHistory(t, ctx, r.client("asker"), askerTask)
	if at.Status.State != a2a.TaskStateRejected {
		t.Errorf("asker's task is %v, want rejected (the caller declined)", at.Status.State)
	}
	answers := userAnswers(at)
	if len(answers) != 1 || dataOf(answers[0])["action"] != "decline" || answeredBy(answers[0]) != "caller" {
		t.Fatalf("asker's answers = %s, want the caller's decline", historyText(at))
	}
	wantChatterSilent(t, r, "after the decline")
}

// TestParticipantTaskEndedElsewhereWithdrawsTheRequest: when the waiting
// participant's task ends without the caller (canceled at the participant),
// its notification withdraws the request and the workflow fails; the
// chatter is never invoked.
func TestParticipantTaskEndedElsewhereWithdrawsTheRequest(t *testing.T) {
	t.Parallel()
	r, task, _, askerTask := suspend(t, workflow.Sequential)
	ctx := testCtx(t)
	flow := r.client("flow")
	if _, err := r.client("asker").CancelTask(ctx, &a2a.CancelTaskRequest{ID: askerTask}); err != nil {
		t.Fatalf("CancelTask(asker's task) error = %v", err)
	}
	end := waitState(t, ctx, flow, task.ID, a2a.TaskStateFailed)
	if msg := textOf(end.Status.Message); !strings.Contains(strings.ToLower(msg), "asker") {
		t.Errorf("status message = %q, want it to name the asker", msg)
	}
	wantChatterSilent(t, r, "after the asker's task ended")
}

// TestReAskedRequestStillSaysWhoAsks: an answer the request's schema
// refuses is re-asked by the server; the re-ask is still about the asker
// and its task, and the next valid answer reaches the asker.
func TestReAskedRequestStillSaysWhoAsks(t *testing.T) {
	t.Parallel()
	r, task, reqID, askerTask := suspend(t, workflow.Sequential)
	ctx := testCtx(t)
	flow := r.client("flow")
	again := send(t, ctx, flow, answer(task.ID, map[string]any{"questionId": reqID, "confirm": ""}))
	q := mustQuestion(t, again.Status)
	if q.ID == reqID || len(q.Errors) == 0 {
		t.Fatalf("re-ask = %s with errors %v, want a new question with the errors", q.ID, q.Errors)
	}
	if q.About[workflow.AboutParticipant] != "asker" || q.About[workflow.AboutTask] != string(askerTask) {
		t.Errorf("the re-asked request's about = %v, want participant asker and task %s (the caller must still see who asks)", q.About, askerTask)
	}
	if n := len(r.asker.answerValues()); n != 0 {
		t.Fatalf("the refused answer reached the asker (%d answers)", n)
	}
	answerToEnd(t, r, ctx, task.ID, q.ID, "second try")
}

// TestLateParticipantNotificationKeepsTheRequest: a participant's
// notification that arrives late (a "working" status sent before it asked,
// retried after the workflow suspended, as an A2A server that notifies
// every status may do) must not replace the caller's request: the open
// request keeps its ID and the caller's answer to it still works.
func TestLateParticipantNotificationKeepsTheRequest(t *testing.T) {
	t.Parallel()
	r, task, reqID, askerTask := suspend(t, workflow.Sequential)
	ctx := testCtx(t)
	flow := r.client("flow")

	// The workflow's own push configuration on the asker's task says where
	// and with which token the asker's notifications go.
	pc, err := r.client("asker").GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: askerTask, ID: "relay"})
	if err != nil {
		t.Fatalf("GetTaskPushConfig(asker's task, relay) error = %v", err)
	}
	at := getHistory(t, ctx, r.client("asker"), askerTask)
	late := a2a.StreamResponse{Event: &a2a.TaskStatusUpdateEvent{
		TaskID: askerTask, ContextID: at.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateWorking},
	}}
	body, err := json.Marshal(late)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, pc.URL, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Notification-Token", pc.Token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST the late notification: %v", err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("POST the late notification: HTTP %d, want 2xx", res.StatusCode)
	}

	r.settle()
	now := getHistory(t, ctx, flow, task.ID)
	if q := mustQuestion(t, now.Status); q.ID != reqID {
		t.Errorf("after a late 'working' notification from the asker the open request is %s, want still %s (the caller's pending answer would be refused)", q.ID, reqID)
	}
	if ids := slices.Compact(r.hook.requestIDs(task.ID)); len(ids) != 1 {
		t.Errorf("the caller was notified of requests %q, want one request", ids)
	}
	answerToEnd(t, r, ctx, task.ID, reqID, "go")
}

// TestCancelingASuspendedRunCancelsTheWaitingParticipantsTask: the
// participant's task is held while the caller is asked; when the caller
// cancels the run instead of answering, the participant's task is
// canceled too (not left waiting for its own expiry), and the chatter is
// never invoked.
func TestCancelingASuspendedRunCancelsTheWaitingParticipantsTask(t *testing.T) {
	t.Parallel()
	r, task, _, askerTask := suspend(t, workflow.GroupChat)
	ctx := testCtx(t)
	flow := r.client("flow")
	if _, err := flow.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	waitState(t, ctx, r.client("asker"), askerTask, a2a.TaskStateCanceled)
	wantChatterSilent(t, r, "after the cancel")
}

// A participant's notifications that come after its turn (and after the run
// ended) reach the workflow's wake endpoint with a token it still knows:
// they are dropped or answered late, never refused as unknown (which the
// participant's server would retry as a failed delivery, again and again).
func TestLateParticipantNotificationsAreNeverUnknown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		participants []string
		run          func(t *testing.T, ctx context.Context, r *rig)
	}{
		{"the caller answers and the run completes", []string{"asker", "chatter"}, func(t *testing.T, ctx context.Context, r *rig) {
			flow := r.client("flow")
			task, first, _ := suspendedRun(t, r, "flow", "Plan the offsite")
			send(t, ctx, flow, answer(task.ID, map[string]any{"questionId": first, "confirm": "yes"}))
			waitState(t, ctx, flow, task.ID, a2a.TaskStateCompleted)
		}},
		// The run ends in the step that started the participant: it never
		// waited on the token it gave the participant.
		{"a silent participant fails the run in its first step", []string{"silent", "chatter"}, func(t *testing.T, ctx context.Context, r *rig) {
			flow := r.client("flow")
			task := send(t, ctx, flow, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Summarise the meeting")))
			if task.Status.State != a2a.TaskStateFailed {
				waitState(t, ctx, flow, task.ID, a2a.TaskStateFailed)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var unknown []string
			r := &rig{t: t, asker: &calls{}, chatter: &calls{}, silent: &calls{}, hook: newHookReceiver(t),
				flows: map[string]workflow.Config{"flow": {Mode: workflow.Sequential, Participants: participants(c.participants...)}}}
			r.wrap = func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
					h.ServeHTTP(rec, req)
					if strings.Contains(req.URL.Path, "/wake/") && rec.code == http.StatusNotFound {
						mu.Lock()
						unknown = append(unknown, req.URL.Path)
						mu.Unlock()
					}
				})
			}
			ln, base := apitest.Listen(t, "")
			r.base = base
			r.start(ln, "")
			c.run(t, testCtx(t), r)
			r.settle() // every notification owed has been sent, retries included
			mu.Lock()
			defer mu.Unlock()
			if len(unknown) > 0 {
				t.Fatalf("%d participant notifications were refused as for an unknown task: %v", len(unknown), unknown)
			}
		})
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
