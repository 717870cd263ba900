package relay_test

// A relay's checkpoint is stored with its task: a task paused by one build
// is resumed by the next. These tests hold the JSON an older build wrote
// (the build before relay took in internal/hop, whose hop.Checkpoint this
// was) against the current relay.Checkpoint.

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

// olderCheckpoint is a checkpoint with every field set, as the older build
// encoded it.
const olderCheckpoint = `{"subTaskId":"sub-1","subContextId":"ctx-1","subQuestion":{"questionId":"q-sub","text":"Which cost centre?","expires":"0001-01-01T00:00:00Z","answerSchema":{"type":"object"},"attempt":2,"maxAttempts":3},"token":"tok","ownQuestionId":"q-own","subSeenAt":"2026-12-01T23:27:12.349686622Z","refused":1,"resolved":2,"names":{"comment":"note"},"noPush":true}`

// TestACheckpointAnOlderBuildWroteDecodesAndEncodesTheSame: every field of
// olderCheckpoint is read into its field of relay.Checkpoint (no name is
// unknown), and the checkpoint encodes back to the same bytes, so that an
// older build can still read what this one writes.
func TestACheckpointAnOlderBuildWroteDecodesAndEncodesTheSame(t *testing.T) {
	dec := json.NewDecoder(strings.NewReader(olderCheckpoint))
	dec.DisallowUnknownFields()
	var got relay.Checkpoint
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("decode the older build's checkpoint: %v", err)
	}
	seen := time.Date(2026, 12, 1, 23, 27, 12, 349686622, time.UTC)
	want := relay.Checkpoint{
		SubTaskID: "sub-1", SubContextID: "ctx-1",
		SubQuestion: &question.Question{ID: "q-sub", Text: "Which cost centre?", Schema: json.RawMessage(`{"type":"object"}`), Attempt: 2, MaxAttempts: 3},
		Token:       "tok", OwnQuestionID: "q-own", SubSeenAt: &seen, Refused: 1, Resolved: 2,
		Names: map[string]string{"comment": "note"}, NoPush: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the older build's checkpoint decodes to\n%+v\nwant\n%+v", got, want)
	}
	raw, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != olderCheckpoint {
		t.Fatalf("the checkpoint encodes to\n%s\nwhere the older build wrote\n%s", raw, olderCheckpoint)
	}
}

// olderPaused is the checkpoint of the finance assistant's task paused on
// the expense agent's cost-centre question, as the older build stored it;
// the IDs and the expiry are those of the test's own tasks.
const olderPaused = `{"subTaskId":"{{sub}}","subContextId":"{{ctx}}","subQuestion":{"questionId":"{{subq}}","text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420.","expires":"{{expires}}","answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"options":[{"value":"CC-4410"},{"value":"CC-4420"}],"attempt":1},"ownQuestionId":"{{own}}","subSeenAt":"2026-12-01T23:27:12.349686622Z"}`

// TestARelayTaskPausedByAnOlderBuildResumes: the assistant's task, its
// checkpoint replaced by olderPaused, resumes on a server started afresh
// (as after an upgrade) both ways a paused relay does: the caller's answer is carried down to the sub-agent's
// question the checkpoint names, and the sub-agent's notification, judged
// against the checkpoint, wakes it. Each ends with the one filing.
func TestARelayTaskPausedByAnOlderBuildResumes(t *testing.T) {
	for _, how := range []string{"answered by the caller", "woken by the sub-agent"} {
		t.Run(how, func(t *testing.T) {
			w := startWorld(t, nil, nil, nil)
			ctx := testCtx(t)
			bob, subC, task, sub := w.receiptWaiting(t, ctx)
			topQ, subQ := questionOf(t, task), questionOf(t, sub)
			pushSettled(t, w.sub, sub.ID)

			row := storedTask(t, ctx, w.top, task.ID)
			older := strings.NewReplacer("{{sub}}", string(sub.ID), "{{ctx}}", sub.ContextID, "{{subq}}", subQ.ID,
				"{{expires}}", subQ.Expires.UTC().Format(time.RFC3339), "{{own}}", topQ.ID).Replace(olderPaused)
			row.Checkpoint = json.RawMessage(older)
			if _, err := w.top.Store.UpdateTask(ctx, row, nil); err != nil {
				t.Fatal(err)
			}
			// The upgrade: a new process, which has only the row to go by.
			w.restartTop(t, []askpoint.AgentSpec{assistantSpec(t, "http://"+w.topAddr, w.sub.URL+"/expenses")})
			bob = w.bob(t)
			if got := storedTask(t, ctx, w.top, task.ID).Checkpoint; !bytes.Equal(got, []byte(older)) {
				t.Fatalf("the stored checkpoint is %s, want the older build's %s", got, older)
			}

			if how == "answered by the caller" {
				send(t, ctx, bob, answer(task.ID, topQ.ID, map[string]any{"costCentre": "CC-4420"}))
			} else {
				sendState(t, ctx, subC, answer(sub.ID, subQ.ID, map[string]any{"costCentre": "CC-4420"}), a2a.TaskStateCompleted)
			}
			waitState(t, ctx, bob, task.ID, a2a.TaskStateCompleted)
			w.ledger.wantOneFiling(t, "CC-4420")
		})
	}
}
