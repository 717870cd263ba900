package workflow_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/relay"
	"github.com/askpoint/askpoint/workflow"
)

// clerk reads a payment from the request's text and replies with data
// only: an artifact holding the payment, no text, no status message.
type clerk struct{}

func (c *clerk) agent() askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			p, ok := approval.ParsePayment(textOf(call.Request))
			if !ok {
				return askpoint.Reject("no payment in: " + textOf(call.Request)), nil
			}
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "invoice", Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{
				"invoice": p.Invoice, "amount": p.Amount, "currency": p.Currency, "payee": p.Payee,
			})}}), nil
		},
	}
}

type payFlow struct {
	flow, parts *askpointtest.Env
	clock       *fakeClockT
	fake        bool
	clerk       *clerk
}

type fakeClockT struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClockT) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClockT) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const partExpiry = time.Hour

// startPayFlow serves the workflow "pay" (mode, participants in order) on
// one server and the participants "clerk" and "approver" on another. With
// push, the participants' server may push to the workflow's, and the
// workflow waits for their notifications; without, it refuses the
// workflow's webhook and the workflow reads their tasks. With fake, both
// run on pf.clock (see suspend).
func startPayFlow(t *testing.T, mode workflow.Mode, push, fake bool, order ...string) *payFlow {
	t.Helper()
	pf := &payFlow{clock: &fakeClockT{now: time.Now().UTC().Truncate(time.Second)}, clerk: &clerk{}, fake: fake}
	now := time.Now
	if fake {
		now = pf.clock.Now
	}
	pf.flow = askpointtest.ListenWith(t, askpointtest.Options{Config: func(c *askpoint.Config) {
		c.PollInterval, c.Now = 20*time.Millisecond, now
	}})
	u, _ := url.Parse(pf.flow.URL)
	pf.parts = askpointtest.StartWith(t, askpointtest.Options{Config: func(c *askpoint.Config) {
		c.PollInterval, c.Now, c.QuestionExpiry = 20*time.Millisecond, now, partExpiry
		c.PushRetryMin, c.PushRetryMax = 10*time.Millisecond, 50*time.Millisecond
		c.WebhookHosts = []string{} // no other server's, which askpointtest allows when nil
		if push {
			c.WebhookHosts = []string{u.Host}
		}
	}},
		askpoint.AgentSpec{Name: "clerk", Agent: pf.clerk.agent(), Card: card("clerk")},
		askpoint.AgentSpec{Name: "approver", Agent: approval.Agent(), Card: approval.Card()},
	)
	var ps []workflow.Participant
	for _, name := range order {
		ps = append(ps, workflow.Participant{Name: name, URL: pf.parts.AgentURL(name)})
	}
	rc := relay.Config{Now: now}
	if push {
		rc.SettleWithin = time.Nanosecond // wait for the notifications
	}
	agent, err := workflow.Agent(workflow.Config{Mode: mode, Participants: ps, CallbackURL: pf.flow.AgentURL("pay"), Relay: rc})
	if err != nil {
		t.Fatal(err)
	}
	pf.flow.Serve(t, askpoint.AgentSpec{Name: "pay", Agent: agent, Card: card("pay")})
	return pf
}

// approverTask is the approver's one task.
func (pf *payFlow) approverTask(t *testing.T) *a2a.Task {
	t.Helper()
	var tasks []*a2a.Task
	eventually(t, "the approver's task", func() bool {
		res, err := pf.parts.Client(t, "approver").ListTasks(testCtx(t), &a2a.ListTasksRequest{})
		if err != nil {
			t.Fatal(err)
		}
		tasks = res.Tasks
		return len(tasks) == 1
	})
	return tasks[0]
}

func (pf *payFlow) wantApprover(t *testing.T, want a2a.TaskState) {
	t.Helper()
	id := pf.approverTask(t).ID
	waitState(t, testCtx(t), pf.parts.Client(t, "approver"), id, want)
}

// suspend starts a run and waits for the approver's question at the top.
// On the fake clock it moves the clock on in small steps meanwhile: a
// notification that came while a step ran is sent again shortly, on the
// server's clock.
func (pf *payFlow) suspend(t *testing.T, c *a2aclient.Client, request string) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(request)),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	var task *a2a.Task
	eventually(t, "the run suspended", func() bool {
		task = getHistory(t, testCtx(t), c, res.(*a2a.Task).ID)
		if task.Status.State == a2a.TaskStateInputRequired {
			return true
		}
		if pf.fake {
			pf.clock.Advance(20 * time.Millisecond)
		}
		return false
	})
	return task
}

// A sequence of a participant that replies with data only and one that
// asks: the second gets the first's data, its question goes up with its
// options, the answer comes down, and both participants' artifacts come up.
func TestWorkflowCarriesDataQuestionsAnswersAndArtifacts(t *testing.T) {
	apitest.EachPush(t, func(t *testing.T, push bool) {
		pf := startPayFlow(t, workflow.Sequential, push, false, "clerk", "approver")
		c := pf.flow.Client(t, "pay")
		task := pf.suspend(t, c, "Pay invoice INV-7: 80 EUR to ACME")
		q := mustQuestion(t, task.Status)
		if q.About[workflow.AboutParticipant] != "approver" || len(q.Options) != 2 || q.Options[0].Label != "Yes, pay" || q.Subject["amount"] != float64(80) {
			t.Fatalf("the workflow asks %+v; want the approver's question with its labelled options and subject", q)
		}
		got := send(t, testCtx(t), c, textAnswerTo(task.ID, "yes"))
		if got.Status.State != a2a.TaskStateCompleted {
			got = waitState(t, testCtx(t), c, task.ID, a2a.TaskStateCompleted)
		}
		names := map[string]string{}
		for _, a := range got.Artifacts {
			p, _ := a.Metadata["participant"].(string)
			names[a.Name] = p
		}
		if names["invoice"] != "clerk" || names["payment"] != "approver" {
			t.Fatalf("the workflow's artifacts by participant %v; want the transcript, the clerk's invoice and the approver's payment", names)
		}
		tr := transcriptText(t, got)
		if !strings.Contains(tr, "clerk:") || !strings.Contains(tr, `"invoice":"INV-7"`) {
			t.Fatalf("the transcript leaves out the clerk's data-only reply:\n%s", tr)
		}
	})
}

// In a group chat, a reply with data only is in what the next speaker
// gets.
func TestGroupChatKeepsADataOnlyReply(t *testing.T) {
	pf := startPayFlow(t, workflow.GroupChat, true, false, "clerk", "approver")
	c := pf.flow.Client(t, "pay")
	pf.suspend(t, c, "Pay invoice INV-7: 80 EUR to ACME")
	// The approver was given the conversation: the request and the clerk's
	// data; its question is about the amount it read from there.
	task := pf.approverTask(t)
	full := getHistory(t, testCtx(t), pf.parts.Client(t, "approver"), task.ID)
	if len(full.History) == 0 || !strings.Contains(textOf(full.History[0]), `clerk: "" {"amount":80`) {
		t.Fatalf("the approver was given %q; want the clerk's data in the conversation", textOf(full.History[0]))
	}
}

// A decline, a cancel and an expiry at the workflow mean the same for the
// waiting participant, and no participant's task is left paused.
func TestWorkflowEndsWithOneMeaningAtEveryLevel(t *testing.T) {
	apitest.EachPush(t, func(t *testing.T, push bool) {
		t.Run("decline", func(t *testing.T) {
			pf := startPayFlow(t, workflow.Sequential, push, false, "clerk", "approver")
			c := pf.flow.Client(t, "pay")
			task := pf.suspend(t, c, "Pay invoice INV-7: 80 EUR to ACME")
			send(t, testCtx(t), c, answer(task.ID, map[string]any{"action": "decline", "reason": "not ours"}))
			waitState(t, testCtx(t), c, task.ID, a2a.TaskStateRejected)
			pf.wantApprover(t, a2a.TaskStateRejected)
		})
		t.Run("cancel", func(t *testing.T) {
			pf := startPayFlow(t, workflow.Sequential, push, false, "clerk", "approver")
			c := pf.flow.Client(t, "pay")
			task := pf.suspend(t, c, "Pay invoice INV-7: 80 EUR to ACME")
			send(t, testCtx(t), c, answer(task.ID, map[string]any{"action": "cancel"}))
			waitState(t, testCtx(t), c, task.ID, a2a.TaskStateCanceled)
			pf.wantApprover(t, a2a.TaskStateCanceled)
		})
		t.Run("expiry", func(t *testing.T) {
			pf := startPayFlow(t, workflow.Sequential, push, true, "clerk", "approver")
			c := pf.flow.Client(t, "pay")
			task := pf.suspend(t, c, "Pay invoice INV-7: 80 EUR to ACME")
			pf.clock.Advance(mustQuestion(t, task.Status).Expires.Sub(pf.clock.Now()) + time.Second) // past the workflow's question, before the approver's
			got := waitState(t, testCtx(t), c, task.ID, a2a.TaskStateFailed)
			if !strings.Contains(strings.ToLower(textOf(got.Status.Message)), "expire") {
				t.Errorf("the workflow's status %q does not say its question expired", textOf(got.Status.Message))
			}
			pf.wantApprover(t, a2a.TaskStateCanceled)
		})
	})
}

func textAnswerTo(id a2a.TaskID, text string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.TaskID = id
	return m
}

// transcriptText is the text of the workflow's transcript artifact.
func transcriptText(t *testing.T, task *a2a.Task) string {
	t.Helper()
	for _, a := range task.Artifacts {
		if a.Name == "transcript" {
			for _, p := range a.Parts {
				if s, ok := p.Content.(a2a.Text); ok {
					return string(s)
				}
			}
		}
	}
	t.Fatalf("no transcript artifact in %+v", task.Artifacts)
	return ""
}
