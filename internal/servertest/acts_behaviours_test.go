package servertest_test

// The conformance agent's ACTS behaviours (ACTS specification section 11;
// examples/conformance), each flow over both bindings with the a2a-go
// client, triggered the ACTS way: by the text of the first part, with
// messageIds that name nothing.

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/internal/apitest"
)

// actsLongRunning is how long tck-long-running works in these tests: long
// enough to see the task working, short enough for a test.
const actsLongRunning = 1500 * time.Millisecond

// startACTSBehaviours serves the conformance agent with the ACTS timings.
func startACTSBehaviours(t *testing.T) *apitest.Env {
	t.Helper()
	return startConformance(t, conformance.AgentWithOptions(conformance.Options{ResubscribeDelay: tckResubscribeDelay, LongRunningDelay: actsLongRunning}))
}

// eachACTS is eachServed for the conformance agent with the ACTS timings.
func eachACTS(t *testing.T, f func(t *testing.T, on served)) {
	t.Helper()
	eachServed(t, startACTSBehaviours, conformance.Name, f)
}

// actsText is a user message whose first part is text, with a messageId
// that names no behaviour.
func actsText(text string) *a2a.Message { return userText(text) }

func TestACTSBehaviourCompletesFailsRejectsAndPausesByTheFirstPartsText(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
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
			task := sendState(t, on.ctx, on.c, actsText(tc.text), tc.state)
			got := messageText(task.Status.Message)
			if task.Status.Message == nil || task.Status.Message.Role != a2a.MessageRoleAgent || got == "" || (tc.msg != "" && got != tc.msg) {
				t.Errorf("%q: status message %q (%+v), want the agent's %q", tc.text, got, task.Status.Message, tc.msg)
			}
		}
		// A prefix must be followed by the end of the text or a space; a
		// messageId with an a2a-tck prefix does not decide over the text.
		sendState(t, on.ctx, on.c, actsText("tck-cancellation is not tck-cancel"), a2a.TaskStateCompleted)
		sendState(t, on.ctx, on.c, conformanceMessage(tckID("tck-input-required"), "tck-complete-task"), a2a.TaskStateCompleted)
		// Text that names no behaviour leaves the messageId to decide.
		sendState(t, on.ctx, on.c, conformanceMessage(tckID("tck-input-required"), "TCK prerequisite task creation"), a2a.TaskStateInputRequired)
	})
}

func TestACTSAuthRequiredTaskCompletesOnTheFollowUp(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
		task := sendState(t, on.ctx, on.c, actsText("tck-auth-required trigger auth"), a2a.TaskStateAuthRequired)
		sendState(t, on.ctx, on.c, followUp(task.ID, actsText("authorized now")), a2a.TaskStateCompleted)
	})
}

func TestACTSMultiTurnAsksAgainUntilAFollowUpSaysDone(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
		first := sendState(t, on.ctx, on.c, actsText("tck-multi-turn start conversation"), a2a.TaskStateInputRequired)
		q1 := questionID(t, "turn 1 question", first.Status.Message)

		// A follow-up that is not "done" gets a second question, even when
		// its text names another behaviour: the conversation's rule decides.
		m := actsText("here is more input")
		m.ContextID = first.ContextID
		second := sendState(t, on.ctx, on.c, followUp(first.ID, m), a2a.TaskStateInputRequired)
		if second.ID != first.ID || second.ContextID != first.ContextID {
			t.Fatalf("turn 2 answered task %s in %s, want %s in %s", second.ID, second.ContextID, first.ID, first.ContextID)
		}
		if q2 := questionID(t, "turn 2 question", second.Status.Message); q2 == q1 {
			t.Errorf("turn 2 asked question %s again, want a new question", q2)
		}
		sendState(t, on.ctx, on.c, followUp(first.ID, actsText("tck-complete-task not yet")), a2a.TaskStateInputRequired)

		// A follow-up with a contextId of another conversation is refused
		// and changes nothing.
		wrong := actsText("done")
		wrong.ContextID = "wrong-context-id-12345"
		_, err := on.c.SendMessage(on.ctx, &a2a.SendMessageRequest{Message: followUp(first.ID, wrong)})
		wantErr(t, "follow-up with a wrong contextId", err, a2a.ErrInvalidParams)

		// Only taskId: the task's context is taken; "done" completes it.
		done := sendState(t, on.ctx, on.c, followUp(first.ID, actsText("done")), a2a.TaskStateCompleted)
		if done.ContextID != first.ContextID {
			t.Errorf("completed in context %s, want %s", done.ContextID, first.ContextID)
		}
		if len(done.Artifacts) == 0 {
			t.Errorf("completed task has no artifact")
		}

		// History: the request, then each question and its answer, in order.
		got := getTask(t, on.ctx, on.c, first.ID)
		wantRoles := []a2a.MessageRole{a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser}
		if r := roles(got.History); len(r) < len(wantRoles) || !slices.Equal(r[:len(wantRoles)], wantRoles) {
			t.Fatalf("history roles = %v, want %v first", r, wantRoles)
		}
		wantUserTexts(t, got.History, "tck-multi-turn start conversation", "here is more input", "tck-complete-task not yet", "done")
	})
}

func TestACTSArtifactBehavioursCompleteWithTheirArtifacts(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
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
			task := sendState(t, on.ctx, on.c, actsText(tc.text), a2a.TaskStateCompleted)
			if p := onlyPart(t, task); !tc.ok(p) {
				t.Errorf("%q: artifact part %#v (%q, %q) is not the one the behaviour promises", tc.text, p.Content, p.Filename, p.MediaType)
			}
		}
	})
}

func TestACTSMessageResponseIsAMessageAndNoTask(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
		wantDirectReply(t, on, actsText("tck-message-response hello"), actsText("tck-message-response streaming"))
	})
}

// wantDirectReply sends m and requires the conformance agent's direct reply
// back, then streams streamed and requires that reply as the stream's one
// event, and then no task stored. It returns the reply to m.
func wantDirectReply(t *testing.T, on served, m, streamed *a2a.Message) *a2a.Message {
	t.Helper()
	res, err := on.c.SendMessage(on.ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage() error = %v", err)
	}
	reply, ok := res.(*a2a.Message)
	if !ok {
		t.Fatalf("SendMessage() = %T, want a message", res)
	}
	if reply.Role != a2a.MessageRoleAgent || messageText(reply) != "Direct message response" {
		t.Errorf("reply = role %v %q, want the agent's \"Direct message response\"", reply.Role, messageText(reply))
	}
	s := sendStream(t, on.ctx, on.c, streamed)
	if ev := s.nextEvent(t, on.ctx); describe(ev) != `message "Direct message response"` {
		t.Fatalf("stream's first event = %s, want the message", describe(ev))
	}
	s.wantEnd(t, on.ctx)
	list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks() error = %v", err)
	}
	if len(list.Tasks) != 0 {
		t.Errorf("ListTasks() = %d tasks, want none: a reply creates no task", len(list.Tasks))
	}
	return reply
}

func TestACTSStreamBasicAndChunked(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
		s := sendStream(t, on.ctx, on.c, actsText("tck-stream-basic generate output"))
		task := firstTask(t, on.ctx, s)
		wantEvents(t, on.ctx, s, task.ID, evWorking, "artifact output", evCompleted)
		s.wantEnd(t, on.ctx)
		if txt, _ := artifactText(getTask(t, on.ctx, on.c, task.ID), "output"); txt != "Streamed content" {
			t.Errorf("stored artifact = %q, want \"Streamed content\"", txt)
		}

		s = sendStream(t, on.ctx, on.c, actsText("tck-stream-chunked multi-part"))
		task = firstTask(t, on.ctx, s)
		wantEvents(t, on.ctx, s, task.ID, evWorking)
		one, two := nextChunks(t, on.ctx, s)
		if one.Artifact.ID != two.Artifact.ID || one.Append || !two.Append || !two.LastChunk {
			t.Fatalf("chunks %+v, %+v; want two chunks of one artifact, the second appended and last", one, two)
		}
		wantEvents(t, on.ctx, s, task.ID, evCompleted)
		s.wantEnd(t, on.ctx)
	})
}

// nextChunks requires the next two events of s to be artifact chunks.
func nextChunks(t *testing.T, ctx context.Context, s *stream) (one, two *a2a.TaskArtifactUpdateEvent) {
	t.Helper()
	var chunks [2]*a2a.TaskArtifactUpdateEvent
	for i := range chunks {
		ev := s.nextEvent(t, ctx)
		chunk, ok := ev.(*a2a.TaskArtifactUpdateEvent)
		if !ok {
			t.Fatalf("event = %s, want artifact chunk %d", describe(ev), i+1)
		}
		chunks[i] = chunk
	}
	return chunks[0], chunks[1]
}

func TestACTSLongRunningWorksThenCompletesAndCanBeSubscribedTo(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
		task := sendAsync(t, on.ctx, on.c, actsText("tck-long-running start process"))
		if st := task.Status.State; st != a2a.TaskStateSubmitted && st != a2a.TaskStateWorking {
			t.Fatalf("returnImmediately: state %v, want submitted or working", st)
		}
		working := waitState(t, on.ctx, on.c, task.ID, a2a.TaskStateWorking)
		if len(working.Artifacts) != 0 {
			t.Errorf("working task already has artifacts")
		}
		s := subscribeStream(t, on.ctx, on.c, task.ID)
		if snap := firstTask(t, on.ctx, s); snap.Status.State != a2a.TaskStateWorking {
			t.Fatalf("subscription snapshot %v, want working", snap.Status.State)
		}
		if last := lastEvent(s.rest(t, on.ctx)); describe(last) != evCompleted {
			t.Errorf("subscription ended with %s, want completed", describe(last))
		}
		if done := getTask(t, on.ctx, on.c, task.ID); done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) == 0 {
			t.Errorf("task %v with %d artifacts, want completed with an artifact", done.Status.State, len(done.Artifacts))
		}
	})
}

func TestACTSCancelStaysWorkingUntilCanceled(t *testing.T) {
	eachACTS(t, func(t *testing.T, on served) {
		task := sendAsync(t, on.ctx, on.c, actsText("tck-cancel start"))
		waitState(t, on.ctx, on.c, task.ID, a2a.TaskStateWorking)
		cancelTask(t, on.ctx, on.c, task.ID)
		_, err := on.c.CancelTask(on.ctx, &a2a.CancelTaskRequest{ID: task.ID})
		wantErr(t, "second CancelTask", err, a2a.ErrTaskNotCancelable)
	})
}
