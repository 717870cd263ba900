package relay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

// chain is three servers: the approval agent ("approval") on the leaf
// server, a relay in front of it ("mid") on the middle one, and a relay in
// front of that ("top") on the top one.
type chain struct {
	leaf, mid, top *askpointtest.Env
	clock          *fakeClock
}

const leafExpiry = time.Hour

// startChain starts the chain. With push, each server may push to the one
// above, and each relay waits for its sub-agent's notifications; without,
// each server refuses the webhook of the relay above it (an address it
// does not push to), so each relay reads its sub-task instead. With fake,
// every server and relay runs on ch.clock (see drive); otherwise on the
// real clock.
func startChain(t *testing.T, push, fake bool, leafAgent askpoint.AgentSpec, mid, top func(sub, self string) relay.Config) *chain {
	t.Helper()
	ch := &chain{clock: newFakeClock(time.Now().UTC().Truncate(time.Second))}
	now := time.Now
	if fake {
		now = ch.clock.Now
	}
	cfg := func(pushTo **askpointtest.Env) askpointtest.Options {
		return askpointtest.Options{Config: func(c *askpoint.Config) {
			fast(c)
			c.Now = now
			c.QuestionExpiry = leafExpiry
			c.WebhookHosts = []string{} // no other server's, which askpointtest allows when nil
			if push && *pushTo != nil {
				c.WebhookHosts = []string{hostOf(t, (*pushTo).URL)}
			}
		}}
	}
	// Listen on all three first: each server must know the one above.
	ch.top = askpointtest.ListenWith(t, cfg(new(*askpointtest.Env)))
	ch.mid = askpointtest.ListenWith(t, cfg(&ch.top))
	ch.leaf = askpointtest.ListenWith(t, cfg(&ch.mid))
	ch.leaf.Serve(t, leafAgent)
	mc := relay.Config{SubAgentName: "the approver"}
	if mid != nil {
		mc = mid(ch.leaf.AgentURL(leafAgent.Name), ch.mid.AgentURL("mid"))
	}
	mc.SubAgentURL, mc.CallbackURL, mc.Now = ch.leaf.AgentURL(leafAgent.Name), ch.mid.AgentURL("mid"), now
	if push {
		// Each relay waits for its sub-agent's push notification instead
		// of reading the sub-task: the notifications carry the chain.
		mc.SettleWithin = time.Nanosecond
	}
	ch.mid.Serve(t, chainRelay(t, "mid", mc))
	tc := relay.Config{SubAgentName: "the payments desk"}
	if top != nil {
		tc = top(ch.mid.AgentURL("mid"), ch.top.AgentURL("top"))
	}
	tc.SubAgentURL, tc.CallbackURL, tc.Now = ch.mid.AgentURL("mid"), ch.top.AgentURL("top"), now
	if push {
		tc.SettleWithin = time.Nanosecond
	}
	ch.top.Serve(t, chainRelay(t, "top", tc))
	return ch
}

func chainRelay(t *testing.T, name string, cfg relay.Config) askpoint.AgentSpec {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	a, err := relay.Agent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return askpoint.AgentSpec{Name: name, Agent: a, Card: a2a.AgentCard{Name: name, Description: "Relays to the level below."}}
}

func approvalSpec() askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()}
}

// tasksOf lists every task an anonymous client of agent on env sees.
func tasksOf(t *testing.T, env *askpointtest.Env, agent string) []*a2a.Task {
	t.Helper()
	res, err := env.Client(t, agent).ListTasks(testCtx(t), &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks(%s): %v", agent, err)
	}
	return res.Tasks
}

// below is the one task of each lower level, once each has one.
func (ch *chain) below(t *testing.T) (mid, leaf *a2a.Task) {
	t.Helper()
	var ms, ls []*a2a.Task
	eventually(t, "a task at each level below the top", func() bool {
		ms, ls = tasksOf(t, ch.mid, "mid"), tasksOf(t, ch.leaf, "approval")
		return len(ms) == 1 && len(ls) == 1
	})
	return ms[0], ls[0]
}

// wantBelow waits until the middle and leaf tasks are in the given states.
func (ch *chain) wantBelow(t *testing.T, mid, leaf a2a.TaskState) {
	t.Helper()
	var ms, ls []*a2a.Task
	ok := func() bool {
		ms, ls = tasksOf(t, ch.mid, "mid"), tasksOf(t, ch.leaf, "approval")
		return len(ms) == 1 && len(ls) == 1 && ms[0].Status.State == mid && ls[0].Status.State == leaf
	}
	eventually(t, "the middle task "+string(mid)+" and the leaf task "+string(leaf), ok)
}

// drive moves the fake clock on in small steps until the top task is in
// state want: push retries (a notification that came while a step ran is
// sent again shortly) are due on the servers' clock.
func (ch *chain) drive(t *testing.T, c *a2aclient.Client, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	var got *a2a.Task
	eventually(t, "the top task "+string(want), func() bool {
		got = getTask(t, testCtx(t), c, id)
		if got.Status.State == want {
			return true
		}
		ch.clock.Advance(20 * time.Millisecond)
		return false
	})
	return got
}

func dataAnswer(id a2a.TaskID, fields map[string]any) *a2a.Message {
	p := a2a.NewDataPart(fields)
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = id
	return m
}

func textAnswer(id a2a.TaskID, text string) *a2a.Message {
	m := userText(text)
	m.TaskID = id
	return m
}

func settleTop(t *testing.T, c *a2aclient.Client, task *a2a.Task, want a2a.TaskState) *a2a.Task {
	t.Helper()
	if task.Status.State == want {
		return task
	}
	return waitState(t, testCtx(t), c, task.ID, want)
}

// A three-level chain on three servers carries the leaf's question up
// (labelled boolean options, the field they are for, the subject), the
// top's text answer down, and the leaf's artifact up.
func TestThreeServerChainCarriesTheQuestionUpTheAnswerDownAndTheArtifactUp(t *testing.T) {
	apitest.EachPush(t, func(t *testing.T, push bool) {
		ch := startChain(t, push, false, approvalSpec(), nil, nil)
		c := ch.top.Client(t, "top")
		task := sendState(t, testCtx(t), c, userText("Pay invoice INV-7: 80 EUR to ACME"), a2a.TaskStateInputRequired)
		q := questionOf(t, task)
		if len(q.Options) != 2 || q.Options[0].Value != true || q.Options[0].Label != "Yes, pay" || q.OptionsFor != "approve" {
			t.Fatalf("the top asks with options %+v for %q, want the leaf's true \"Yes, pay\" / false \"No\" for approve", q.Options, q.OptionsFor)
		}
		if q.Subject["amount"] != float64(80) || q.Subject["currency"] != "EUR" {
			t.Fatalf("the top's question is about %v, want the leaf's subject (80 EUR)", q.Subject)
		}
		mid, leaf := ch.below(t)
		if !q.Expires.Before(questionOf(t, mid).Expires) || !questionOf(t, mid).Expires.Before(questionOf(t, leaf).Expires) {
			t.Fatalf("expiries top %s, middle %s, leaf %s: want each earlier than the one below", q.Expires, questionOf(t, mid).Expires, questionOf(t, leaf).Expires)
		}
		got := settleTop(t, c, send(t, testCtx(t), c, textAnswer(task.ID, "yes")), a2a.TaskStateCompleted)
		var payment map[string]any
		for _, a := range got.Artifacts {
			if a.Name == "payment" {
				for _, p := range a.Parts {
					if d, ok := p.Content.(a2a.Data); ok {
						payment, _ = d.Value.(map[string]any)
					}
				}
			}
		}
		if payment["paid"] != true || payment["invoice"] != "INV-7" {
			t.Fatalf("the top's artifacts %+v, want the leaf's payment for INV-7", got.Artifacts)
		}
		ch.wantBelow(t, a2a.TaskStateCompleted, a2a.TaskStateCompleted)
	})
}

// A decline, a cancel and an expiry at the top mean the same at every
// level, and no task below is left paused.
func TestThreeServerChainEndsWithOneMeaningAtEveryLevel(t *testing.T) {
	apitest.EachPush(t, func(t *testing.T, push bool) {
		t.Run("decline", func(t *testing.T) {
			ch := startChain(t, push, false, approvalSpec(), nil, nil)
			c := ch.top.Client(t, "top")
			task := sendState(t, testCtx(t), c, userText("Pay invoice INV-7: 80 EUR to ACME"), a2a.TaskStateInputRequired)
			got := send(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"action": "decline", "reason": "not ours"}))
			got = settleTop(t, c, got, a2a.TaskStateRejected)
			if !strings.Contains(statusText(got), "not ours") {
				t.Errorf("the top's status %q does not carry the caller's reason", statusText(got))
			}
			ch.wantBelow(t, a2a.TaskStateRejected, a2a.TaskStateRejected)
		})
		t.Run("cancel", func(t *testing.T) {
			ch := startChain(t, push, false, approvalSpec(), nil, nil)
			c := ch.top.Client(t, "top")
			task := sendState(t, testCtx(t), c, userText("Pay invoice INV-7: 80 EUR to ACME"), a2a.TaskStateInputRequired)
			ch.below(t)
			sendState(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"action": "cancel"}), a2a.TaskStateCanceled)
			ch.wantBelow(t, a2a.TaskStateCanceled, a2a.TaskStateCanceled)
		})
		t.Run("expiry", func(t *testing.T) {
			ch := startChain(t, push, true, approvalSpec(), nil, nil)
			c := ch.top.Client(t, "top")
			res, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: userText("Pay invoice INV-7: 80 EUR to ACME"),
				Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
			if err != nil {
				t.Fatal(err)
			}
			task := ch.drive(t, c, res.(*a2a.Task).ID, a2a.TaskStateInputRequired)
			ch.below(t)
			ch.clock.Advance(questionOf(t, task).Expires.Sub(ch.clock.Now()) + time.Second) // past the top's expiry, before the middle's
			got := waitState(t, testCtx(t), c, task.ID, a2a.TaskStateFailed)
			if !strings.Contains(strings.ToLower(statusText(got)), "expire") {
				t.Errorf("the top's status %q does not say its question expired", statusText(got))
			}
			// Below, the caller is gone: the tasks are canceled, not left
			// paused until their own expiry.
			ch.wantBelow(t, a2a.TaskStateCanceled, a2a.TaskStateCanceled)
		})
		t.Run("attempts run out at the top", func(t *testing.T) {
			ch := startChain(t, push, false, approvalSpec(), nil, nil)
			c := ch.top.Client(t, "top")
			task := sendState(t, testCtx(t), c, userText("Pay invoice INV-7: 80 EUR to ACME"), a2a.TaskStateInputRequired)
			ch.below(t)
			for range question.DefaultMaxAttempts {
				task = send(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"approve": "perhaps"}))
			}
			settleTop(t, c, task, a2a.TaskStateFailed)
			ch.wantBelow(t, a2a.TaskStateCanceled, a2a.TaskStateCanceled)
		})
	})
}

// noteLeaf asks for a comment of at most 10 characters.
func noteLeaf() askpoint.AgentSpec {
	schema := json.RawMessage(`{"type":"object","required":["comment"],"properties":{"comment":{"type":"string","maxLength":10}}}`)
	return askpoint.AgentSpec{Name: "approval", Card: a2a.AgentCard{Name: "Notes", Description: "Asks for a comment."},
		Agent: askpoint.Steps[struct{}, map[string]any]{
			OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Any comment?", Schema: schema}, struct{}{}), nil
			},
			OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, a map[string]any) (askpoint.Outcome, error) {
				return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("noted")}}), nil
			},
		}}
}

// The top calls the field "note" and translates it to the leaf's
// "comment": an answer too long for the leaf is re-asked at the top about
// "note", never "comment"; a hook may say it otherwise.
func TestARelaysReAskIsInItsOwnTerms(t *testing.T) {
	topCfg := func(hook bool) func(sub, self string) relay.Config {
		return func(sub, self string) relay.Config {
			cfg := relay.Config{
				SubAgentName: "the notes desk",
				Restate: func(_ context.Context, _ *askpoint.Call, q *question.Question) (question.Question, error) {
					return question.Question{Text: "A note for the payment?", Schema: json.RawMessage(`{"type":"object","required":["note"],"properties":{"note":{"type":"string"}}}`)}, nil
				},
				Translate: func(_ context.Context, _ *askpoint.Call, _ *question.Question, a map[string]any) (map[string]any, error) {
					return map[string]any{"comment": a["note"]}, nil
				},
			}
			if hook {
				cfg.Errors = func(_ context.Context, _ *askpoint.Call, _ *question.Question, errs []question.FieldError) []question.FieldError {
					return []question.FieldError{{Pointer: "/note", Message: "keep the note short"}}
				}
			}
			return cfg
		}
	}
	for _, hook := range []bool{false, true} {
		ch := startChain(t, true, false, noteLeaf(), nil, topCfg(hook))
		c := ch.top.Client(t, "top")
		task := sendState(t, testCtx(t), c, userText("note it"), a2a.TaskStateInputRequired)
		got := send(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"note": "far too long for the leaf"}))
		re := questionOf(t, got)
		if len(re.Errors) != 1 || re.Errors[0].Pointer != "/note" {
			t.Fatalf("hook %v: the top re-asks with %+v, want one error at /note", hook, re.Errors)
		}
		text := re.Errors[0].Message + " " + statusText(got)
		if strings.Contains(text, "comment") {
			t.Fatalf("hook %v: the top's re-ask names the leaf's field: %q", hook, text)
		}
		if hook && re.Errors[0].Message != "keep the note short" {
			t.Fatalf("the hook's words were not used: %q", re.Errors[0].Message)
		}
		got = settleTop(t, c, send(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"note": "short"})), a2a.TaskStateCompleted)
	}
}

// A sub-agent that refuses the relay's webhook (here: an askpoint server
// that pushes to no private address) was reached: the relay reads its task
// instead of telling the caller it could not reach it.
func TestARelayWhoseWebhookIsRefusedReadsTheSubTask(t *testing.T) {
	leaf := askpointtest.Start(t, approvalSpec())
	top := askpointtest.Listen(t)
	top.Serve(t, chainRelay(t, "top", relay.Config{SubAgentName: "finance", SubAgentURL: leaf.AgentURL("approval"), CallbackURL: top.AgentURL("top")}))
	c := top.Client(t, "top")
	task := send(t, testCtx(t), c, userText("Pay invoice INV-7: 80 EUR to ACME"))
	if strings.Contains(statusText(task), "could not reach") || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the relay's task is %s (%q); want finance's question relayed", task.Status.State, statusText(task))
	}
	settleTop(t, c, send(t, testCtx(t), c, textAnswer(task.ID, "Yes, pay")), a2a.TaskStateCompleted)
}
