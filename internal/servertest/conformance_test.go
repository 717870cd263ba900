package servertest_test

// The conformance agent (examples/conformance) behaves as the A2A
// conformance suite asks through each message's messageId prefix. These
// tests hold its behaviour over both bindings, so that a run of the suite
// (docs/CONFORMANCE.md) measures the engine, not a drifting test agent.

import (
	"encoding/base64"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// conformanceMessage is a user text message with the given messageId.
func conformanceMessage(id, text string) *a2a.Message {
	m := userText(text)
	m.ID = id
	return m
}

func TestConformanceAgentCompletesByMessageIDPrefix(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		cases := []struct {
			prefix string
			state  a2a.TaskState
			check  func(t *testing.T, task *a2a.Task)
		}{
			{"tck-complete-task", a2a.TaskStateCompleted, func(t *testing.T, task *a2a.Task) {
				if got := messageText(task.Status.Message); got != "Hello from TCK" || task.Status.Message.Role != a2a.MessageRoleAgent {
					t.Errorf("status message = %q (role %v), want the agent's \"Hello from TCK\"", got, task.Status.Message.Role)
				}
			}},
			{"tck-artifact-text", a2a.TaskStateCompleted, func(t *testing.T, task *a2a.Task) {
				if got := onlyPart(t, task).Content; got != a2a.Text("Generated text content") {
					t.Errorf("artifact part = %#v, want the text \"Generated text content\"", got)
				}
			}},
			{"tck-artifact-file", a2a.TaskStateCompleted, func(t *testing.T, task *a2a.Task) {
				p := onlyPart(t, task)
				raw, ok := p.Content.(a2a.Raw)
				if !ok || base64.StdEncoding.EncodeToString(raw) != "dGNr" || p.Filename != "output.txt" || p.MediaType != "text/plain" {
					t.Errorf("artifact part = %#v (%q, %q), want raw dGNr named output.txt, text/plain", p.Content, p.Filename, p.MediaType)
				}
			}},
			// Longer than tck-artifact-file, which it starts with.
			{"tck-artifact-file-url", a2a.TaskStateCompleted, func(t *testing.T, task *a2a.Task) {
				p := onlyPart(t, task)
				if p.Content != a2a.URL("https://example.com/output.txt") || p.Filename != "output.txt" || p.MediaType != "text/plain" {
					t.Errorf("artifact part = %#v (%q, %q), want the url https://example.com/output.txt named output.txt, text/plain", p.Content, p.Filename, p.MediaType)
				}
			}},
			{"tck-artifact-data", a2a.TaskStateCompleted, func(t *testing.T, task *a2a.Task) {
				d, ok := onlyPart(t, task).Content.(a2a.Data)
				m, _ := d.Value.(map[string]any)
				if !ok || m["key"] != "value" || m["count"] != float64(42) || len(m) != 2 {
					t.Errorf("artifact part = %#v, want the data {\"key\":\"value\",\"count\":42}", d.Value)
				}
			}},
			{"tck-reject-task", a2a.TaskStateRejected, nil},
			{"tck-input-required", a2a.TaskStateInputRequired, func(t *testing.T, task *a2a.Task) {
				if task.ContextID == "" {
					t.Errorf("input-required task has no contextId")
				}
			}},
			{"tck-something-else", a2a.TaskStateCompleted, nil},
		}
		for _, tc := range cases {
			task := sendState(t, on.ctx, on.c, conformanceMessage(tckID(tc.prefix), "TCK prerequisite task creation"), tc.state)
			if tc.check != nil {
				t.Run(tc.prefix, func(t *testing.T) { tc.check(t, task) })
			}
		}
	})
}

// onlyPart is the one part of the task's one artifact.
func onlyPart(t *testing.T, task *a2a.Task) *a2a.Part {
	t.Helper()
	if len(task.Artifacts) != 1 || len(task.Artifacts[0].Parts) != 1 {
		t.Fatalf("task has artifacts %+v, want one artifact with one part", task.Artifacts)
	}
	return task.Artifacts[0].Parts[0]
}

func TestConformanceAgentFollowUpsAreDecidedByTheirOwnMessageID(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		first := sendState(t, on.ctx, on.c, conformanceMessage(tckID("tck-input-required"), "start"), a2a.TaskStateInputRequired)
		// Any text answers; an input-required follow-up asks again.
		for _, text := range []string{"TCK history message 1", "TCK history message 2"} {
			again := sendState(t, on.ctx, on.c, followUp(first.ID, conformanceMessage(tckID("tck-input-required"), text)), a2a.TaskStateInputRequired)
			if again.ID != first.ID || again.ContextID != first.ContextID {
				t.Fatalf("follow-up answered task %s in context %s, want %s in %s", again.ID, again.ContextID, first.ID, first.ContextID)
			}
		}
		done := sendState(t, on.ctx, on.c, followUp(first.ID, conformanceMessage(tckID("tck-complete-task"), "finish")), a2a.TaskStateCompleted)
		if got := messageText(done.Status.Message); got != "Hello from TCK" {
			t.Errorf("completed status message = %q, want \"Hello from TCK\"", got)
		}
		wantUserTexts(t, getTask(t, on.ctx, on.c, first.ID).History, "start", "TCK history message 1", "TCK history message 2", "finish")
	})
}

func TestConformanceAgentRepliesWithAMessageAndCreatesNoTask(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		m := conformanceMessage(tckID("tck-message-response"), "hello")
		m.ContextID = "ctx-chosen-by-the-caller"
		reply := wantDirectReply(t, on, m, conformanceMessage(tckID("tck-message-response"), "hello"))
		if reply.TaskID != "" || reply.ContextID != m.ContextID || reply.ID == "" {
			t.Errorf("reply = task %q context %q id %q; want no task, context %q and an ID", reply.TaskID, reply.ContextID, reply.ID, m.ContextID)
		}
	})
}

func TestConformanceAgentStreamsWorkingArtifactCompleted(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		for _, prefix := range []string{"tck-stream-001", "tck-stream-003", "tck-stream-ordering-001", "tck-stream-artifact-text", "tck-stream-artifact-file"} {
			t.Run(prefix, func(t *testing.T) {
				s := sendStream(t, on.ctx, on.c, conformanceMessage(tckID(prefix), "stream"))
				task := firstTask(t, on.ctx, s)
				wantEvents(t, on.ctx, s, task.ID, evWorking, "artifact output", evCompleted)
				s.wantEnd(t, on.ctx)
			})
		}
		t.Run("tck-stream-002", func(t *testing.T) {
			s := sendStream(t, on.ctx, on.c, conformanceMessage(tckID("tck-stream-002"), "stream"))
			task := firstTask(t, on.ctx, s)
			last := lastEvent(s.rest(t, on.ctx))
			if su, ok := last.(*a2a.TaskStatusUpdateEvent); (!ok || su.Status.State != a2a.TaskStateCompleted) && task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("stream ended with %s, want completed", describe(last))
			}
		})
	})
}

func TestConformanceAgentStreamsAChunkedArtifact(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		s := sendStream(t, on.ctx, on.c, conformanceMessage(tckID("tck-stream-artifact-chunked"), "chunks"))
		task := firstTask(t, on.ctx, s)
		wantEvents(t, on.ctx, s, task.ID, evWorking)
		one, two := nextChunks(t, on.ctx, s)
		wantEvents(t, on.ctx, s, task.ID, evCompleted)
		s.wantEnd(t, on.ctx)

		if one.Artifact.ID != two.Artifact.ID || one.Append || one.LastChunk || !two.Append || !two.LastChunk {
			t.Errorf("chunks: (%s append=%v last=%v) then (%s append=%v last=%v); want one artifact ID, the first neither append nor last, the second both",
				one.Artifact.ID, one.Append, one.LastChunk, two.Artifact.ID, two.Append, two.LastChunk)
		}
		if messageText(&a2a.Message{Parts: one.Artifact.Parts}) != "chunk-1 " || messageText(&a2a.Message{Parts: two.Artifact.Parts}) != "chunk-2" {
			t.Errorf("chunk texts %q and %q, want \"chunk-1 \" and \"chunk-2\"",
				messageText(&a2a.Message{Parts: one.Artifact.Parts}), messageText(&a2a.Message{Parts: two.Artifact.Parts}))
		}
		// The task keeps the whole artifact.
		got := getTask(t, on.ctx, on.c, task.ID)
		if len(got.Artifacts) != 1 || len(got.Artifacts[0].Parts) != 2 || got.Artifacts[0].ID != one.Artifact.ID {
			t.Fatalf("task artifacts = %+v, want one artifact holding both chunks", got.Artifacts)
		}
		if txt, _ := artifactText(got, "chunked"); txt != "chunk-1 \nchunk-2" {
			t.Errorf("stored artifact text = %q, want both chunks in order", txt)
		}
	})
}

func TestConformanceAgentLongTaskCanBeSubscribedAgain(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		task := sendAsync(t, on.ctx, on.c, conformanceMessage(tckID("test-resubscribe-message-id"), "long"))
		if task.Status.State.Terminal() {
			t.Fatalf("task is %v at once, want it still running", task.Status.State)
		}
		s := subscribeStream(t, on.ctx, on.c, task.ID)
		if snap := firstTask(t, on.ctx, s); snap.Status.State.Terminal() {
			t.Fatalf("subscription snapshot is %v, want the task still running", snap.Status.State)
		}
		if last := lastEvent(s.rest(t, on.ctx)); describe(last) != evCompleted {
			t.Errorf("subscription ended with %s, want completed", describe(last))
		}
	})
}
