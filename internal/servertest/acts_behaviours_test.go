package servertest_test

// The conformance agent's ACTS behaviours (ACTS specification section 11;
// examples/conformance), each flow over both bindings with the a2a-go
// client, triggered the ACTS way: by the text of the first part, with
// messageIds that name nothing.

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/internal/apitest"
)

// actsLongRunning is how long tck-long-running works in these tests: long
// enough to see the task working, short enough for a test.
const actsLongRunning = 1500 * time.Millisecond

// actsClient serves the conformance agent and returns a client for it.
func actsClient(t *testing.T, tr a2a.TransportProtocol) *a2aclient.Client {
	t.Helper()
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{{
		Name:  conformance.Name,
		Agent: conformance.AgentWithOptions(conformance.Options{ResubscribeDelay: tckResubscribeDelay, LongRunningDelay: actsLongRunning}),
		Card:  conformance.Card(),
	}}})
	return env.Client(t, conformance.Name, tr)
}

// actsText is a user message whose first part is text, with a messageId
// that names no behaviour.
func actsText(text string) *a2a.Message { return userText(text) }

func TestACTSBehaviourCompletesFailsRejectsAndPausesByTheFirstPartsText(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)
		for _, tc := range []struct {
			text  string
			state a2a.TaskState
			msg   string // the status message's text, "" for any non-empty one
		}{
			{"tck-complete-task hello", a2a.TaskStateCompleted, "Hello from TCK"},
			{"  tck-complete-task", a2a.TaskStateCompleted, "Hello from TCK"},
			{"tck-task-failure trigger error", a2a.TaskStateFailed, ""},
			{"tck-reject-task please", a2a.TaskStateRejected, ""},
			{"tck-auth-required trigger auth", a2a.TaskStateAuthRequired, ""},
			{"tck-input-required start", a2a.TaskStateInputRequired, ""},
		} {
			task := sendState(t, ctx, c, actsText(tc.text), tc.state)
			got := messageText(task.Status.Message)
			if task.Status.Message == nil || task.Status.Message.Role != a2a.MessageRoleAgent || got == "" || (tc.msg != "" && got != tc.msg) {
				t.Errorf("%q: status message %q (%+v), want the agent's %q", tc.text, got, task.Status.Message, tc.msg)
			}
		}
		// A prefix must be followed by the end of the text or a space; a
		// messageId with an a2a-tck prefix does not decide over the text.
		sendState(t, ctx, c, actsText("tck-cancellation is not tck-cancel"), a2a.TaskStateCompleted)
		sendState(t, ctx, c, conformanceMessage(tckID("tck-input-required"), "tck-complete-task"), a2a.TaskStateCompleted)
		// Text that names no behaviour leaves the messageId to decide.
		sendState(t, ctx, c, conformanceMessage(tckID("tck-input-required"), "TCK prerequisite task creation"), a2a.TaskStateInputRequired)
	})
}

func TestACTSAuthRequiredTaskCompletesOnTheFollowUp(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)
		task := sendState(t, ctx, c, actsText("tck-auth-required trigger auth"), a2a.TaskStateAuthRequired)
		sendState(t, ctx, c, followUp(task.ID, actsText("authorized now")), a2a.TaskStateCompleted)
	})
}

func TestACTSMultiTurnAsksAgainUntilAFollowUpSaysDone(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)

		first := sendState(t, ctx, c, actsText("tck-multi-turn start conversation"), a2a.TaskStateInputRequired)
		q1 := questionID(t, "turn 1 question", first.Status.Message)

		// A follow-up that is not "done" gets a second question, even when
		// its text names another behaviour: the conversation's rule decides.
		m := actsText("here is more input")
		m.ContextID = first.ContextID
		second := sendState(t, ctx, c, followUp(first.ID, m), a2a.TaskStateInputRequired)
		if second.ID != first.ID || second.ContextID != first.ContextID {
			t.Fatalf("turn 2 answered task %s in %s, want %s in %s", second.ID, second.ContextID, first.ID, first.ContextID)
		}
		if q2 := questionID(t, "turn 2 question", second.Status.Message); q2 == q1 {
			t.Errorf("turn 2 asked question %s again, want a new question", q2)
		}
		sendState(t, ctx, c, followUp(first.ID, actsText("tck-complete-task not yet")), a2a.TaskStateInputRequired)

		// A follow-up with a contextId of another conversation is refused
		// and changes nothing.
		wrong := actsText("done")
		wrong.ContextID = "wrong-context-id-12345"
		_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(first.ID, wrong)})
		wantErr(t, "follow-up with a wrong contextId", err, a2a.ErrInvalidParams)

		// Only taskId: the task's context is taken; "done" completes it.
		done := sendState(t, ctx, c, followUp(first.ID, actsText("done")), a2a.TaskStateCompleted)
		if done.ContextID != first.ContextID {
			t.Errorf("completed in context %s, want %s", done.ContextID, first.ContextID)
		}
		if len(done.Artifacts) == 0 {
			t.Errorf("completed task has no artifact")
		}

		// History: the request, then each question and its answer, in order.
		got := getTask(t, ctx, c, first.ID)
		wantRoles := []a2a.MessageRole{a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser}
		if r := roles(got.History); len(r) < len(wantRoles) || !equalRoles(r[:len(wantRoles)], wantRoles) {
			t.Fatalf("history roles = %v, want %v first", r, wantRoles)
		}
		var users []string
		for _, h := range got.History {
			if h.Role == a2a.MessageRoleUser {
				users = append(users, messageText(h))
			}
		}
		wantUsers := []string{"tck-multi-turn start conversation", "here is more input", "tck-complete-task not yet", "done"}
		if len(users) != len(wantUsers) {
			t.Fatalf("user messages in history = %q, want %q", users, wantUsers)
		}
		for i := range wantUsers {
			if users[i] != wantUsers[i] {
				t.Fatalf("user messages in history = %q, want %q", users, wantUsers)
			}
		}
	})
}

func equalRoles(a, b []a2a.MessageRole) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestACTSArtifactBehavioursCompleteWithTheirArtifacts(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)
		for _, tc := range []struct {
			text string
			ok   func(p *a2a.Part) bool
		}{
			{"tck-artifact-text hello", func(p *a2a.Part) bool { return p.Content == a2a.Text("Generated text content") }},
			{"tck-artifact-data structured", func(p *a2a.Part) bool {
				d, ok := p.Content.(a2a.Data)
				m, _ := d.Value.(map[string]any)
				return ok && m["key"] == "value" && m["count"] == float64(42)
			}},
			{"tck-artifact-file document", func(p *a2a.Part) bool {
				raw, ok := p.Content.(a2a.Raw)
				return ok && string(raw) == "tck" && p.Filename == "output.txt" && p.MediaType == "text/plain"
			}},
			{"tck-artifact-file-url document", func(p *a2a.Part) bool {
				return p.Content == a2a.URL("https://example.com/output.txt") && p.Filename == "output.txt" && p.MediaType == "text/plain"
			}},
		} {
			task := sendState(t, ctx, c, actsText(tc.text), a2a.TaskStateCompleted)
			if p := onlyPart(t, task); !tc.ok(p) {
				t.Errorf("%q: artifact part %#v (%q, %q) is not the one the behaviour promises", tc.text, p.Content, p.Filename, p.MediaType)
			}
		}
	})
}

func TestACTSMessageResponseIsAMessageAndNoTask(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: actsText("tck-message-response hello")})
		if err != nil {
			t.Fatal(err)
		}
		if m, ok := res.(*a2a.Message); !ok || m.Role != a2a.MessageRoleAgent || messageText(m) != "Direct message response" {
			t.Fatalf("SendMessage() = %#v, want the agent's message", res)
		}
		s := openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
			return c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: actsText("tck-message-response streaming")})
		})
		if ev := s.nextEvent(t, ctx); describe(ev) != `message "Direct message response"` {
			t.Fatalf("stream's first event = %s, want the message", describe(ev))
		}
		s.wantEnd(t, ctx)
		if list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{}); err != nil || len(list.Tasks) != 0 {
			t.Errorf("ListTasks() = %v, %v; want no task", list, err)
		}
	})
}

func TestACTSStreamBasicAndChunked(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)

		s := openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
			return c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: actsText("tck-stream-basic generate output")})
		})
		task := firstTask(t, ctx, s)
		wantEvents(t, ctx, s, task.ID, evWorking, "artifact output", evCompleted)
		s.wantEnd(t, ctx)
		if txt, _ := artifactText(getTask(t, ctx, c, task.ID), "output"); txt != "Streamed content" {
			t.Errorf("stored artifact = %q, want \"Streamed content\"", txt)
		}

		s = openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
			return c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: actsText("tck-stream-chunked multi-part")})
		})
		task = firstTask(t, ctx, s)
		wantEvents(t, ctx, s, task.ID, evWorking)
		one, _ := s.nextEvent(t, ctx).(*a2a.TaskArtifactUpdateEvent)
		two, _ := s.nextEvent(t, ctx).(*a2a.TaskArtifactUpdateEvent)
		if one == nil || two == nil || one.Artifact.ID != two.Artifact.ID || one.Append || !two.Append || !two.LastChunk {
			t.Fatalf("chunks %+v, %+v; want two chunks of one artifact, the second appended and last", one, two)
		}
		wantEvents(t, ctx, s, task.ID, evCompleted)
		s.wantEnd(t, ctx)
	})
}

func TestACTSLongRunningWorksThenCompletesAndCanBeSubscribedTo(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)
		task := sendTask(t, ctx, c, &a2a.SendMessageRequest{
			Message: actsText("tck-long-running start process"),
			Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
		})
		if st := task.Status.State; st != a2a.TaskStateSubmitted && st != a2a.TaskStateWorking {
			t.Fatalf("returnImmediately: state %v, want submitted or working", st)
		}
		working := waitState(t, ctx, c, task.ID, a2a.TaskStateWorking)
		if len(working.Artifacts) != 0 {
			t.Errorf("working task already has artifacts")
		}
		s := openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
			return c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID})
		})
		if snap := firstTask(t, ctx, s); snap.Status.State != a2a.TaskStateWorking {
			t.Fatalf("subscription snapshot %v, want working", snap.Status.State)
		}
		var last a2a.Event
		for {
			it, ok := s.next(t, ctx)
			if !ok {
				break
			}
			if it.err != nil {
				t.Fatalf("subscription error = %v", it.err)
			}
			last = it.ev
		}
		if describe(last) != evCompleted {
			t.Errorf("subscription ended with %s, want completed", describe(last))
		}
		if done := getTask(t, ctx, c, task.ID); done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) == 0 {
			t.Errorf("task %v with %d artifacts, want completed with an artifact", done.Status.State, len(done.Artifacts))
		}
	})
}

func TestACTSCancelStaysWorkingUntilCanceled(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		c := actsClient(t, tr)
		ctx := testCtx(t)
		task := sendTask(t, ctx, c, &a2a.SendMessageRequest{
			Message: actsText("tck-cancel start"),
			Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
		})
		waitState(t, ctx, c, task.ID, a2a.TaskStateWorking)
		canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		if err != nil {
			t.Fatalf("CancelTask() error = %v", err)
		}
		if canceled.Status.State != a2a.TaskStateCanceled {
			t.Fatalf("CancelTask() state %v, want canceled", canceled.Status.State)
		}
		if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateCanceled {
			t.Errorf("after cancel: %v, want canceled", got.Status.State)
		}
		_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		wantErr(t, "second CancelTask", err, a2a.ErrTaskNotCancelable)
	})
}
