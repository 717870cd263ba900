package workflow_test

// A workflow run's wake token resumes its task: every participant is given
// it (its push configuration's token) and the workflow's server checks it.
// The workflow's database must keep only its digest (issue 23, finding 7).
// These tests serve the participants from a server of their own, so that
// the workflow's database holds nothing the participants were given.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/workflow"
)

// split is a workflow server ("flow": the asker, then the chatter) in
// front of a server of participants.
type split struct {
	parts, flow    *apitest.Env
	asker, chatter *calls
	flowAddr       string
	pg             string // the workflow server's PostgreSQL, "" for SQLite
}

func startSplit(t *testing.T, pg string) *split {
	t.Helper()
	s := &split{asker: &calls{}, chatter: &calls{}, pg: pg}
	ln, flowBase := apitest.Listen(t, "")
	s.flowAddr = strings.TrimPrefix(flowBase, "http://")
	s.parts = apitest.Start(t, apitest.Options{
		Quiet: true,
		Agents: []askpoint.AgentSpec{
			{Name: "asker", Agent: asker(s.asker, ""), Card: card("Asker")},
			{Name: "chatter", Agent: chatter(s.chatter), Card: card("Chatter")},
		},
		Config: func(c *askpoint.Config) {
			c.WebhookHosts = []string{s.flowAddr}
			c.PollInterval, c.PushRetryMin, c.PushRetryMax = 20*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
			c.Reminders = []float64{}
		},
	})
	s.startFlow(t, ln, "")
	return s
}

// startFlow starts the workflow server on ln with the SQLite file db (""
// for a new one; on PostgreSQL, the split's schema).
func (s *split) startFlow(t *testing.T, ln net.Listener, db string) {
	t.Helper()
	a, err := workflow.Agent(workflow.Config{
		Mode: workflow.Sequential, CallbackURL: "http://" + s.flowAddr + "/flow",
		Participants: []workflow.Participant{
			{Name: "asker", URL: s.parts.URL + "/asker"}, {Name: "chatter", URL: s.parts.URL + "/chatter"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.flow = apitest.Start(t, apitest.Options{
		Quiet: true, Listener: ln, DBPath: db, PostgresURL: s.pg,
		Agents: []askpoint.AgentSpec{{Name: "flow", Agent: a, Card: card("Workflow flow")}},
		Config: func(c *askpoint.Config) {
			c.PollInterval, c.PushRetryMin, c.PushRetryMax = 20*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
			c.Reminders = []float64{}
		},
	})
}

// restartFlow stops the workflow server and starts another on the same
// address and database.
func (s *split) restartFlow(t *testing.T) {
	t.Helper()
	db := s.flow.DBPath
	s.flow.Close()
	ln, _ := apitest.Listen(t, s.flowAddr)
	s.startFlow(t, ln, db)
}

// suspended starts a run and returns the workflow's task, paused on the
// asker's question, and the asker's task and question.
func (s *split) suspended(t *testing.T, ctx context.Context) (task *a2a.Task, askerTask a2a.TaskID, askerQ string) {
	t.Helper()
	task = send(t, ctx, s.flow.Client(t, "flow", a2a.TransportProtocolJSONRPC), a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Plan the offsite")))
	mustQuestion(t, task.Status)
	ids := s.asker.tasks()
	if len(ids) != 1 {
		t.Fatalf("the asker was started %d times, want once", len(ids))
	}
	askerTask = a2a.TaskID(ids[0])
	at := getHistory(t, ctx, s.parts.Client(t, "asker", a2a.TransportProtocolJSONRPC), askerTask)
	return task, askerTask, mustQuestion(t, at.Status).ID
}

// answerAsker answers the asker's question at the participants' server,
// not through the workflow: only the asker's notification, with the token
// it was given, can then wake the workflow.
func (s *split) answerAsker(t *testing.T, ctx context.Context, id a2a.TaskID, qid string) {
	t.Helper()
	got := send(t, ctx, s.parts.Client(t, "asker", a2a.TransportProtocolJSONRPC), answer(id, map[string]any{"questionId": qid, "confirm": "yes"}))
	if got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("the asker's task after its answer is %v (%q), want completed", got.Status.State, textOf(got.Status.Message))
	}
}

// TestTheWorkflowsWakeTokenIsStoredNowhereAndStillWakesAfterARestart: a
// run suspended on a participant's question keeps no wake token in its
// database (the SQLite file and its WAL, or every PostgreSQL table); a
// restarted server knows the token the participant was given, the
// participant's notification with it resumes the run, and the next
// participant is given the same token.
func TestTheWorkflowsWakeTokenIsStoredNowhereAndStillWakesAfterARestart(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			pg := ""
			if db == "postgres" {
				pg = dbtest.Schema(t)
			}
			s := startSplit(t, pg)
			ctx := testCtx(t)
			task, askerTask, askerQ := s.suspended(t, ctx)
			token := s.parts.WakePush(t, ctx, askerTask).Token
			if bytes.Contains(s.flow.StoredBytes(t), []byte(token)) {
				t.Fatalf("the workflow's database holds the wake token %q in clear", token)
			}

			s.restartFlow(t)
			s.answerAsker(t, ctx, askerTask, askerQ)
			waitState(t, ctx, s.flow.Client(t, "flow", a2a.TransportProtocolJSONRPC), task.ID, a2a.TaskStateCompleted)
			chats := s.chatter.tasks()
			if len(chats) != 1 {
				t.Fatalf("the chatter was started %d times, want once", len(chats))
			}
			if got := s.parts.WakePush(t, ctx, a2a.TaskID(chats[0])).Token; got != token {
				t.Errorf("the chatter's wake token %q differs from the asker's %q: one token per run", got, token)
			}
		})
	}
}

// TestAnOlderWorkflowStateWithItsTokenInClearStillWakes: a run suspended
// by an older version, whose state kept the run's wake token in clear (and
// whose participant was given it), is woken by it; the workflow then moves
// the participant onto the task's derived token and forgets the old one,
// and the participant's next notification, with the new token, resumes the
// run.
func TestAnOlderWorkflowStateWithItsTokenInClearStillWakes(t *testing.T) {
	s := startSplit(t, "")
	ctx := testCtx(t)
	task, askerTask, askerQ := s.suspended(t, ctx)
	if err := s.parts.Engine.Idle(ctx); err != nil { // the asker's notifications are delivered
		t.Fatal(err)
	}
	reqID := mustQuestion(t, task.Status).ID

	const old = "older-workflow-wake-token-0123456789abcdef"
	pc := s.parts.WakePush(t, ctx, askerTask)
	derived := pc.Token
	row, err := s.flow.Store.GetTask(ctx, string(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(row.Checkpoint, &st); err != nil {
		t.Fatal(err)
	}
	st["wakeToken"] = old
	st["hop"].(map[string]any)["token"] = old
	if row.Checkpoint, err = json.Marshal(st); err != nil {
		t.Fatal(err)
	}
	var pause map[string]any
	if err := json.Unmarshal(row.Pause, &pause); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(old))
	pause["wakeDigest"] = hex.EncodeToString(sum[:])
	if row.Pause, err = json.Marshal(pause); err != nil {
		t.Fatal(err)
	}
	if _, err := s.flow.Store.UpdateTask(ctx, row, nil); err != nil {
		t.Fatal(err)
	}
	pc.Token = old
	s.parts.SetPushConfig(t, ctx, askerTask, pc)

	if code := apitest.PostNotification(t, ctx, pc.URL, old, apitest.WorkingEvent(t, askerTask)); code != http.StatusNoContent {
		t.Fatalf("a wake with the older state's token: HTTP %d, want 204", code)
	}
	flow := s.flow.Client(t, "flow", a2a.TransportProtocolJSONRPC)
	apitest.Eventually(t, "the workflow to look at the asker's task and suspend again", 5*time.Second, func() bool {
		got, err := s.flow.Store.GetTask(ctx, string(task.ID))
		return err == nil && got.State == a2a.TaskStateInputRequired && got.Version > row.Version+1
	})
	if again := mustQuestion(t, getHistory(t, ctx, flow, task.ID).Status); again.ID != reqID {
		t.Fatalf("after the wake the workflow's request is %s, want the same %s", again.ID, reqID)
	}
	after, err := s.flow.Store.GetTask(ctx, string(task.ID))
	if err != nil {
		t.Fatal(err)
	}
	if raw, _ := json.Marshal(after); bytes.Contains(raw, []byte(old)) {
		t.Fatalf("after the wake the workflow's task still keeps the older state's token in clear: checkpoint %s", after.Checkpoint)
	}
	if got := s.parts.WakePush(t, ctx, askerTask).Token; got != derived {
		t.Fatalf("the asker's push token after the wake = %q, want the task's derived token %q", got, derived)
	}
	s.answerAsker(t, ctx, askerTask, askerQ)
	waitState(t, ctx, flow, task.ID, a2a.TaskStateCompleted)
}
