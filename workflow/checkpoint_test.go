package workflow_test

// A workflow's state is stored with its run's task: a run suspended by one
// build is resumed by the next. These tests hold the JSON an older build
// wrote (the build before relay took in internal/hop, when State.Hop was
// an internal hop.Checkpoint) against the current State.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
	"github.com/askpoint/askpoint/workflow"
)

// olderSuspended is the state of a run of the split's workflow suspended
// on the asker's question, as the older build stored it, with its IDs and
// expiry to fill in (olderState).
const olderSuspended = `{"transcript":[{"speaker":"caller","text":"Plan the offsite"}],"rounds":0,"speaker":"asker","hop":{"subTaskId":"{{sub}}","subContextId":"{{ctx}}","subQuestion":{"questionId":"{{subq}}","text":"Shall I go ahead with the booking? Please confirm.","expires":"{{expires}}","answerSchema":{"properties":{"confirm":{"minLength":1,"type":"string"}},"required":["confirm"],"type":"object"},"attempt":1},"subSeenAt":"2026-12-01T23:27:48.211956811Z"},"request":{"id":"{{req}}","participant":"asker","taskId":"{{sub}}"}}`

// olderState is olderSuspended for the asker's task sub (in context ctx)
// asking subq, which expires at expires, relayed as request req.
func olderState(sub a2a.TaskID, ctx, subq string, expires time.Time, req string) string {
	return strings.NewReplacer("{{sub}}", string(sub), "{{ctx}}", ctx, "{{subq}}", subq,
		"{{expires}}", expires.UTC().Format(time.RFC3339), "{{req}}", req).Replace(olderSuspended)
}

// TestAStateAnOlderBuildWroteDecodesAndEncodesTheSame: every field of an
// older build's state, its hop's included, is read into its field of
// workflow.State (no name is unknown), and the state encodes back to the
// same bytes, so that an older build can still read what this one writes.
func TestAStateAnOlderBuildWroteDecodesAndEncodesTheSame(t *testing.T) {
	expires := time.Date(2026, 12, 2, 23, 27, 48, 0, time.UTC)
	older := olderState("sub-1", "ctx-1", "q-sub", expires, "req-1")
	dec := json.NewDecoder(strings.NewReader(older))
	dec.DisallowUnknownFields()
	var got workflow.State
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode the older build's state: %v", err)
	}
	seen := time.Date(2026, 12, 1, 23, 27, 48, 211956811, time.UTC)
	want := workflow.State{
		Transcript: []workflow.Turn{{Speaker: "caller", Text: "Plan the offsite"}},
		Speaker:    "asker",
		Hop: &relay.Checkpoint{SubTaskID: "sub-1", SubContextID: "ctx-1", SubSeenAt: &seen, SubQuestion: &question.Question{
			ID: "q-sub", Text: "Shall I go ahead with the booking? Please confirm.", Expires: expires, Attempt: 1,
			Schema: json.RawMessage(`{"properties":{"confirm":{"minLength":1,"type":"string"}},"required":["confirm"],"type":"object"}`),
		}},
		Request: &workflow.Request{ID: "req-1", Participant: "asker", TaskID: "sub-1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the older build's state decodes to\n%+v (hop %+v)\nwant\n%+v (hop %+v)", got, got.Hop, want, want.Hop)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != older {
		t.Fatalf("the state encodes to\n%s\nwhere the older build wrote\n%s", raw, older)
	}
}

// TestARunSuspendedByAnOlderBuildResumes: a run suspended on the asker's
// question, its state replaced by an older build's, resumes on a workflow
// server started afresh (as after an upgrade) both ways a suspended run
// does: the caller's answer to the request is carried to the asker's
// question the state names, and the asker's notification, judged against
// the state, wakes it. Either way the asker gets the one answer, the
// chatter speaks next, and the run completes.
func TestARunSuspendedByAnOlderBuildResumes(t *testing.T) {
	for _, how := range []string{"answered by the caller", "woken by the participant"} {
		t.Run(how, func(t *testing.T) {
			s := startSplit(t, "")
			ctx := testCtx(t)
			task, askerTask, askerQ := s.suspended(t, ctx)
			if err := s.parts.Engine.Idle(ctx); err != nil { // the asker's notifications are delivered
				t.Fatal(err)
			}
			reqID := mustQuestion(t, task.Status).ID
			at := getHistory(t, ctx, s.parts.Client(t, "asker", a2a.TransportProtocolJSONRPC), askerTask)

			row, err := s.flow.Store.GetTask(ctx, string(task.ID))
			if err != nil {
				t.Fatal(err)
			}
			older := olderState(askerTask, at.ContextID, askerQ, mustQuestion(t, at.Status).Expires, reqID)
			row.Checkpoint = json.RawMessage(older)
			if _, err := s.flow.Store.UpdateTask(ctx, row, nil); err != nil {
				t.Fatal(err)
			}
			// The upgrade: a new process, which has only the row to go by.
			s.restartFlow(t)
			if got, err := s.flow.Store.GetTask(ctx, string(task.ID)); err != nil || !bytes.Equal(got.Checkpoint, []byte(older)) {
				t.Fatalf("the stored state is %s (%v), want the older build's %s", got.Checkpoint, err, older)
			}

			flow := s.flow.Client(t, "flow", a2a.TransportProtocolJSONRPC)
			if how == "answered by the caller" {
				send(t, ctx, flow, answer(task.ID, map[string]any{"questionId": reqID, "confirm": "yes"}))
			} else {
				s.answerAsker(t, ctx, askerTask, askerQ)
			}
			done := waitState(t, ctx, flow, task.ID, a2a.TaskStateCompleted)
			if got := s.asker.answerValues(); !slices.Equal(got, []string{"yes"}) {
				t.Fatalf("the asker got answers %q, want exactly [\"yes\"]", got)
			}
			if got := speakers(transcriptOf(t, done).Transcript); got != "caller,asker,chatter" {
				t.Fatalf("the run's transcript has speakers %s, want caller,asker,chatter", got)
			}
		})
	}
}
