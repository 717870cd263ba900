package relay_test

// End-to-end tests of the relay (issue 8): real servers on 127.0.0.1, each
// with its own SQLite file; the sub-agent's push notifications reach the
// relay's wake endpoint over HTTP.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
	"github.com/askpoint/askpoint/store"
)

// relaySpec is a relay built from cfg and served as "assistant", the name
// world's clients call.
func relaySpec(t *testing.T, cfg relay.Config) askpoint.AgentSpec {
	t.Helper()
	a, err := relay.Agent(cfg)
	if err != nil {
		t.Fatalf("relay.Agent() = %v", err)
	}
	return askpoint.AgentSpec{Name: "assistant", Agent: a, Card: a2a.AgentCard{Name: "Relay", Description: "Delegates to a sub-agent."}}
}

func TestAssistantAnswersFromItsOwnContext(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	alice := w.alice(t)

	task := send(t, ctx, alice, userText(receipt))
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("alice's task: state %v (status %q), want completed without a question", task.Status.State, statusText(task))
	}
	full := getTask(t, ctx, alice, task.ID)
	for _, m := range full.History {
		if q, ok, _ := question.FromMessage(m); ok {
			t.Fatalf("the assistant asked alice %q (question %s); want no question:%s", q.Text, q.ID, historyText(full))
		}
	}
	// Not even for a moment: no input-required status in the task's log.
	entries, err := w.top.Store.ReadLog(ctx, string(task.ID), 0, 0)
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	for _, e := range entries {
		if e.Kind != store.KindStatus {
			continue
		}
		var ev a2a.TaskStatusUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			t.Fatalf("log entry %d: %v", e.Seq, err)
		}
		if ev.Status.State == a2a.TaskStateInputRequired {
			t.Fatalf("log entry %d: alice's task went input-required (%q)", e.Seq, messageText(ev.Status.Message))
		}
	}
	w.ledger.wantOneFiling(t, "CC-4410")

	said := false
	for _, m := range full.History {
		said = said || m.Role == a2a.MessageRoleAgent && strings.Contains(messageText(m), "answered the expense agent's question")
	}
	if !said {
		t.Fatalf("the assistant's history does not say it answered the expense agent's question itself:%s", historyText(full))
	}

	// Below, the expense agent did ask, and the assistant answered from
	// context.
	sub := onlyTask(t, ctx, w.subClient(t, "expenses"))
	if sub.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("sub-task: state %v, want completed", sub.Status.State)
	}
	var subQ *question.Question
	for _, m := range sub.History {
		if q, ok, _ := question.FromMessage(m); ok {
			subQ = q
		}
	}
	if subQ == nil {
		t.Fatalf("the expense agent never asked (so nothing was answered from context):%s", historyText(sub))
	}
	if got := answerTo(t, sub, subQ.ID); got["costCentre"] != "CC-4410" {
		t.Fatalf("answer sent down = %v, want costCentre CC-4410", got)
	}
	if m := answerMessage(t, sub, subQ.ID); m.Metadata[client.MetaAnsweredBy] != client.ByContext {
		t.Fatalf("the answer sent down has metadata %v, want %s = %s", m.Metadata, client.MetaAnsweredBy, client.ByContext)
	}
}

func TestAssistantRelaysTheCostCentreQuestionInItsOwnTerms(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	bob, subC, task, sub := w.receiptWaiting(t, ctx)
	topQ, subQ := questionOf(t, task), questionOf(t, sub)

	if topQ.ID == subQ.ID {
		t.Fatalf("the assistant's question has the expense agent's ID %s; want its own", topQ.ID)
	}
	if topQ.Text == subQ.Text || !strings.Contains(topQ.Text, "Engineering") || !strings.Contains(topQ.Text, "Research") {
		t.Fatalf("question text %q; want the assistant's own words naming Engineering and Research (the expense agent said %q)", topQ.Text, subQ.Text)
	}
	labels := map[string]string{}
	for _, o := range topQ.Options {
		labels[question.ValueText(o.Value)] = o.Label
	}
	if len(labels) != 2 || labels["CC-4410"] != "Engineering" || labels["CC-4420"] != "Research" {
		t.Fatalf("options %+v; want CC-4410 labelled Engineering and CC-4420 labelled Research", topQ.Options)
	}
	raw, _ := json.Marshal(task.Status.Message)
	for _, leak := range leaks(t, w.sub.URL, sub, subQ) {
		if strings.Contains(string(raw), leak) {
			t.Fatalf("the assistant's question leaks %q of the expense agent: %s", leak, raw)
		}
	}

	done := sendState(t, ctx, bob, answer(task.ID, topQ.ID, map[string]any{"costCentre": "CC-4420"}), a2a.TaskStateCompleted)
	w.ledger.wantOneFiling(t, "CC-4420")
	sub = getTask(t, ctx, subC, sub.ID)
	if sub.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("sub-task: state %v, want completed", sub.Status.State)
	}
	if got := answerTo(t, sub, subQ.ID); got["costCentre"] != "CC-4420" {
		t.Fatalf("answer sent down = %v, want costCentre CC-4420", got)
	}
	// Nothing of the expense agent leaked into anything bob's task says.
	full := getTask(t, ctx, bob, done.ID)
	for _, m := range append(full.History, full.Status.Message) {
		raw, _ := json.Marshal(m)
		for _, leak := range leaks(t, w.sub.URL, sub, subQ) {
			if strings.Contains(string(raw), leak) {
				t.Fatalf("bob's task leaks %q of the expense agent: %s", leak, raw)
			}
		}
	}
}

// leaks are the sub-agent's internals that must not reach the caller.
func leaks(t *testing.T, subBase string, sub *a2a.Task, subQ *question.Question) []string {
	return []string{subBase, hostOf(t, subBase), string(sub.ID), sub.ContextID, subQ.ID, "/expenses"}
}

func TestWrongAnswerAtTheTopIsReAskedAtTheTopWithoutReachingTheExpenseAgent(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	bob, subC, task, before := w.receiptWaiting(t, ctx)
	topQ, subQ := questionOf(t, task), questionOf(t, before)
	beforeRow := storedTask(t, ctx, w.sub, before.ID)

	again := sendState(t, ctx, bob, answer(task.ID, topQ.ID, map[string]any{"costCentre": "CC-9999"}), a2a.TaskStateInputRequired)
	q2 := questionOf(t, again)
	if q2.ID == topQ.ID || len(q2.Errors) == 0 || q2.Attempt != 2 {
		t.Fatalf("re-ask: question %s attempt %d errors %v; want a new ID (not %s), attempt 2 and errors", q2.ID, q2.Attempt, q2.Errors, topQ.ID)
	}

	w.settle(t) // anything sent down has landed, and anything it caused
	after := getTask(t, ctx, subC, before.ID)
	afterRow := storedTask(t, ctx, w.sub, before.ID)
	if len(after.History) != len(before.History) || afterRow.LastSeq != beforeRow.LastSeq {
		t.Fatalf("the expense agent's task changed: history %d -> %d messages, log seq %d -> %d:%s",
			len(before.History), len(after.History), beforeRow.LastSeq, afterRow.LastSeq, historyText(after))
	}
	if q := questionOf(t, after); q.ID != subQ.ID {
		t.Fatalf("the expense agent's open question is %s, want still %s", q.ID, subQ.ID)
	}
	if n := len(w.ledger.filed()); n != 0 {
		t.Fatalf("ledger filed %d expenses after a wrong answer, want 0", n)
	}

	sendState(t, ctx, bob, answer(task.ID, q2.ID, map[string]any{"costCentre": "CC-4410"}), a2a.TaskStateCompleted)
	w.ledger.wantOneFiling(t, "CC-4410")
}

// picky is a sub-agent that refuses the first answer to its question with a
// re-ask carrying errors of its own, and takes the second.
type picky struct {
	mu      sync.Mutex
	answers []string
}

type pickyCP struct {
	Round int `json:"round"`
}

var projectSchema = json.RawMessage(`{"type":"object","required":["project"],"properties":{"project":{"type":"string","pattern":"^P-[0-9]+$"}}}`)

const projectText = "Which project should the ticket be booked to?"

func (p *picky) got() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.answers...)
}

func (p *picky) agent() askpoint.Agent {
	return askpoint.Steps[pickyCP, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{Text: projectText, Schema: projectSchema}, pickyCP{Round: 1}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp pickyCP, a map[string]any) (askpoint.Outcome, error) {
			p.mu.Lock()
			p.answers = append(p.answers, fmt.Sprint(a["project"]))
			p.mu.Unlock()
			if cp.Round == 1 {
				return askpoint.Ask(question.Question{
					Text: projectText, Schema: projectSchema, Attempt: 2, MaxAttempts: 3,
					Errors: []question.FieldError{{Pointer: "/project", Message: fmt.Sprintf("project %v is closed to new bookings", a["project"])}},
				}, pickyCP{Round: 2}), nil
			}
			text := fmt.Sprintf("Booked to %v.", a["project"])
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "booking", Parts: a2a.ContentParts{a2a.NewTextPart(text)}}).WithMessage(text), nil
		},
	}
}

// pickyWorld is a plain relay ("assistant", in front of "the booking
// agent") over the picky sub-agent.
func pickyWorld(t *testing.T) (*world, *picky) {
	t.Helper()
	p := &picky{}
	w := startWorld(t, nil, nil, func(topBase, subBase string) []askpoint.AgentSpec {
		return []askpoint.AgentSpec{relaySpec(t, relay.Config{SubAgentURL: subBase + "/picky", SubAgentName: "the booking agent", CallbackURL: topBase + "/assistant"})}
	}, askpoint.AgentSpec{Name: "picky", Agent: p.agent(), Card: a2a.AgentCard{Name: "Picky", Description: "Refuses the first answer."}})
	return w, p
}

// bookP2 answers question qid of bob's task with project P-2, the one the
// picky agent takes, and requires the task to complete with the picky agent
// having got P-1 and then P-2.
func (p *picky) bookP2(t *testing.T, ctx context.Context, bob *a2aclient.Client, task a2a.TaskID, qid string) *a2a.Task {
	t.Helper()
	done := sendState(t, ctx, bob, answer(task, qid, map[string]any{"project": "P-2"}), a2a.TaskStateCompleted)
	if got := p.got(); !slices.Equal(got, []string{"P-1", "P-2"}) {
		t.Fatalf("the sub-agent got answers %v, want [P-1 P-2]", got)
	}
	return done
}

func TestSubAgentReAskIsRelayedUpWithItsErrors(t *testing.T) {
	w, p := pickyWorld(t)
	ctx := testCtx(t)
	bob, subC := w.bob(t), w.subClient(t, "picky")
	task := sendState(t, ctx, bob, userText("Book my train ticket"), a2a.TaskStateInputRequired)
	q1 := questionOf(t, task)
	if len(q1.Errors) != 0 {
		t.Fatalf("first question has errors %v, want none", q1.Errors)
	}
	sub := onlyTask(t, ctx, subC)
	// Let the sub-agent's notification of its first question land first:
	// a late one is another test's matter (TestLateNotification...).
	pushSettled(t, w.sub, sub.ID)
	again := sendState(t, ctx, bob, answer(task.ID, q1.ID, map[string]any{"project": "P-1"}), a2a.TaskStateInputRequired)
	q2 := questionOf(t, again)
	subQ2 := questionOf(t, getTask(t, ctx, subC, sub.ID))
	if q2.ID == q1.ID || q2.ID == subQ2.ID {
		t.Fatalf("relayed re-ask has ID %s; want a new one of the relay's own (first %s, the sub-agent's %s)", q2.ID, q1.ID, subQ2.ID)
	}
	data := questionData(t, again.Status.Message)
	errs, _ := json.Marshal(data["errors"])
	if !strings.Contains(string(errs), "project P-1 is closed to new bookings") || !strings.Contains(string(errs), `"/project"`) {
		t.Fatalf("relayed re-ask's data part errors = %s; want the sub-agent's error at /project restated", errs)
	}
	if data["attempt"] != float64(2) {
		t.Fatalf("relayed re-ask's attempt = %v, want 2", data["attempt"])
	}
	if !strings.Contains(statusText(again), "closed to new bookings") {
		t.Fatalf("relayed re-ask's text %q does not tell the caller why", statusText(again))
	}

	pushSettled(t, w.sub, sub.ID)
	done := p.bookP2(t, ctx, bob, task.ID, q2.ID)
	if len(done.Artifacts) != 1 || !strings.Contains(messageText(&a2a.Message{Parts: done.Artifacts[0].Parts}), "Booked to P-2") {
		t.Fatalf("artifacts %+v, want the booking", done.Artifacts)
	}
}

// A sub-agent's push notifications come in order but may come late: the
// outbox retries one that met the relay's task mid-step (503). The
// notification of a sub-question the relay has already answered is old
// news and must leave the caller's open question alone.
func TestLateNotificationOfAnAnsweredSubQuestionLeavesTheCallersQuestionOpen(t *testing.T) {
	w, p := pickyWorld(t)
	ctx := testCtx(t)
	bob, subC := w.bob(t), w.subClient(t, "picky")
	task := sendState(t, ctx, bob, userText("Book my train ticket"), a2a.TaskStateInputRequired)
	q1 := questionOf(t, task)
	sub := onlyTask(t, ctx, subC)
	subQ1 := questionOf(t, sub)
	pushSettled(t, w.sub, sub.ID)
	again := sendState(t, ctx, bob, answer(task.ID, q1.ID, map[string]any{"project": "P-1"}), a2a.TaskStateInputRequired)
	q2 := questionOf(t, again)
	pushSettled(t, w.sub, sub.ID)

	before := storedTask(t, ctx, w.top, task.ID)

	// The sub-agent's outbox delivers its notification of the first
	// question once more, late, exactly as it would on a retry.
	redeliver(t, ctx, w.sub, sub.ID, subQ1.ID)
	w.settle(t) // whatever the late notification caused has been done
	now := getTask(t, ctx, bob, task.ID)
	// Old news is dropped without a write (askpoint.Waker): had it woken
	// the task, an answer bob sent meanwhile would meet a busy task and
	// not be taken.
	after := storedTask(t, ctx, w.top, task.ID)
	if after.LastSeq != before.LastSeq {
		entries, _ := w.top.Store.ReadLog(ctx, string(task.ID), before.LastSeq, 0)
		var kinds []string
		for _, e := range entries {
			kinds = append(kinds, fmt.Sprintf("%s %s", e.Kind, e.Body))
		}
		t.Fatalf("a late notification of the answered sub-question %s woke bob's task: %d log entries written:\n%s", subQ1.ID, len(entries), strings.Join(kinds, "\n"))
	}
	if now.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("after a late notification of the answered sub-question %s: state %v (%q); want bob's question %s still open", subQ1.ID, now.Status.State, statusText(now), q2.ID)
	}
	if open := questionOf(t, now); open.ID != q2.ID {
		t.Fatalf("after a late notification of the answered sub-question %s the relay withdrew bob's question %s and asked %s instead; an answer bob sends to %s now is refused:%s",
			subQ1.ID, q2.ID, open.ID, q2.ID, historyText(now))
	}
	p.bookP2(t, ctx, bob, task.ID, q2.ID)
}

// redeliver posts again, to each push configuration of the sub-task, the
// logged input-required notification that asked question qid: the URL,
// token and body the sub-server's outbox sends.
func redeliver(t *testing.T, ctx context.Context, sub *apitest.Env, id a2a.TaskID, qid string) {
	t.Helper()
	entries, err := sub.Store.ReadLog(ctx, string(id), 0, 0)
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	var ev *a2a.TaskStatusUpdateEvent
	for _, e := range entries {
		var st a2a.TaskStatusUpdateEvent
		if e.Kind != store.KindStatus || !e.Notify || json.Unmarshal(e.Body, &st) != nil {
			continue
		}
		if q, ok, _ := question.FromMessage(st.Status.Message); ok && q.ID == qid {
			ev = &st
		}
	}
	if ev == nil {
		t.Fatalf("the sub-task's log has no notification asking %s", qid)
	}
	body, err := json.Marshal(a2a.StreamResponse{Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := sub.Store.ListPushConfigs(ctx, string(id))
	if err != nil || len(cfgs) == 0 {
		t.Fatalf("ListPushConfigs = %d configs, %v; want the relay's", len(cfgs), err)
	}
	for _, c := range cfgs {
		var pc a2a.PushConfig
		if err := json.Unmarshal(c.Config, &pc); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, pc.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Notification-Token", pc.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("redeliver to %s: %v", pc.URL, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("redeliver to %s: HTTP %d, want 2xx", pc.URL, resp.StatusCode)
		}
	}
}

func TestSubQuestionExpiresFirstAndTheAssistantsTaskFailsSayingSo(t *testing.T) {
	subClock := newFakeClock(time.Now().UTC())
	w := startWorld(t, subClock, nil, nil)
	ctx := testCtx(t)
	bob, subC, task, sub := w.receiptWaiting(t, ctx)
	topQ, subQ := questionOf(t, task), questionOf(t, sub)

	subClock.Advance(subQ.Expires.Sub(subClock.Now()) + time.Second)
	ended := waitState(t, ctx, subC, sub.ID, a2a.TaskStateFailed)
	if !strings.Contains(statusText(ended), "expired") {
		t.Fatalf("sub-task failed with %q, want an expiry", statusText(ended))
	}
	got := waitState(t, ctx, bob, task.ID, a2a.TaskStateFailed)
	if text := statusText(got); !strings.Contains(text, "expense agent's question expired") {
		t.Fatalf("bob's task failed with %q; want it to say the expense agent's question expired", text)
	}
	if !topQ.Expires.After(time.Now()) {
		t.Fatalf("the assistant's own question expired (%s): the test meant only the sub-agent's clock to move", topQ.Expires)
	}
	if n := len(w.ledger.filed()); n != 0 {
		t.Fatalf("ledger filed %d expenses, want 0", n)
	}
}

// hasty asks a question that expires soon (by its server's clock).
func hasty(clock *fakeClock, within time.Duration) askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{Text: projectText, Schema: projectSchema, Expires: clock.Now().Add(within)}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, a map[string]any) (askpoint.Outcome, error) {
			return askpoint.Complete(), nil
		},
	}
}

func TestUpwardQuestionExpiresEarlierThanTheSubAgentsByTheMargin(t *testing.T) {
	upward := func(t *testing.T, w *world, agent string) (top, sub *question.Question) {
		t.Helper()
		ctx := testCtx(t)
		task := sendState(t, ctx, w.bob(t), userText(receipt), a2a.TaskStateInputRequired)
		return questionOf(t, task), questionOf(t, onlyTask(t, ctx, w.subClient(t, agent)))
	}

	t.Run("assistant, default margin", func(t *testing.T) {
		w := startWorld(t, nil, nil, nil)
		top, sub := upward(t, w, "expenses")
		if want := sub.Expires.Add(-5 * time.Minute); !top.Expires.Equal(want) {
			t.Fatalf("the assistant's question expires at %s, the expense agent's at %s; want %s (5m earlier)", top.Expires, sub.Expires, want)
		}
	})

	t.Run("configured margin", func(t *testing.T) {
		w := startWorld(t, nil, nil, func(topBase, subBase string) []askpoint.AgentSpec {
			return []askpoint.AgentSpec{relaySpec(t, relay.Config{SubAgentURL: subBase + "/expenses", CallbackURL: topBase + "/assistant", Margin: 17 * time.Minute})}
		})
		top, sub := upward(t, w, "expenses")
		if want := sub.Expires.Add(-17 * time.Minute); !top.Expires.Equal(want) {
			t.Fatalf("the relay's question expires at %s, the sub-agent's at %s; want %s (17m earlier)", top.Expires, sub.Expires, want)
		}
	})

	t.Run("sub-question sooner than twice the margin: half the time left", func(t *testing.T) {
		start := time.Now().UTC().Truncate(time.Second)
		topClock, subClock := newFakeClock(start), newFakeClock(start)
		w := startWorld(t, subClock, func(c *askpoint.Config) { c.Now = topClock.Now }, func(topBase, subBase string) []askpoint.AgentSpec {
			return []askpoint.AgentSpec{relaySpec(t, relay.Config{SubAgentURL: subBase + "/hasty", CallbackURL: topBase + "/assistant", Now: topClock.Now})}
		}, askpoint.AgentSpec{Name: "hasty", Agent: hasty(subClock, 6*time.Minute), Card: a2a.AgentCard{Name: "Hasty", Description: "Asks with a short expiry."}})
		top, sub := upward(t, w, "hasty")
		if !sub.Expires.Equal(start.Add(6 * time.Minute)) {
			t.Fatalf("sub-question expires at %s, want %s", sub.Expires, start.Add(6*time.Minute))
		}
		if want := start.Add(3 * time.Minute); !top.Expires.Equal(want) {
			t.Fatalf("the relay's question expires at %s; want %s (half of the 6m left)", top.Expires, want)
		}
	})
}

func TestThreeLevelChainCarriesTheAnswerToTheLeafSchemaValidAtEveryHop(t *testing.T) {
	// caller -> assistant (top) -> router (mid) -> expense agent (sub)
	lnTop, topURL := apitest.Listen(t, "")
	lnMid, midURL := apitest.Listen(t, "")
	l := newLedger()
	sub := startSub(t, l, nil, []string{hostOf(t, midURL)})
	router, err := relay.Agent(relay.Config{SubAgentURL: sub.URL + "/expenses", SubAgentName: "the expense agent", CallbackURL: midURL + "/router"})
	if err != nil {
		t.Fatal(err)
	}
	mid := apitest.Start(t, apitest.Options{
		Quiet: true, Listener: lnMid,
		Config: func(c *askpoint.Config) { fast(c); c.WebhookHosts = []string{hostOf(t, topURL)} },
		Agents: []askpoint.AgentSpec{{Name: "router", Agent: router, Card: a2a.AgentCard{Name: "Router", Description: "Routes expenses."}}},
	})
	top := apitest.Start(t, apitest.Options{
		Quiet: true, Listener: lnTop,
		Config: func(c *askpoint.Config) { fast(c); c.Tokens = callers },
		Agents: []askpoint.AgentSpec{assistantSpec(t, topURL, mid.URL+"/router")},
	})
	ctx := testCtx(t)
	bob := top.ClientAs(t, "assistant", a2a.TransportProtocolHTTPJSON, bobToken)
	midC := mid.Client(t, "router", a2a.TransportProtocolJSONRPC)
	subC := sub.Client(t, "expenses", a2a.TransportProtocolJSONRPC)

	task := sendState(t, ctx, bob, userText(receipt), a2a.TaskStateInputRequired)
	topQ := questionOf(t, task)
	midTask := onlyTask(t, ctx, midC)
	midQ := questionOf(t, midTask)
	subTask := onlyTask(t, ctx, subC)
	subQ := questionOf(t, subTask)
	if topQ.ID == midQ.ID || midQ.ID == subQ.ID || topQ.ID == subQ.ID {
		t.Fatalf("question IDs top %s, router %s, expense agent %s; want each hop's own", topQ.ID, midQ.ID, subQ.ID)
	}
	if !(topQ.Expires.Before(midQ.Expires) && midQ.Expires.Before(subQ.Expires)) {
		t.Fatalf("expiries top %s, router %s, expense agent %s; want each earlier than the one below", topQ.Expires, midQ.Expires, subQ.Expires)
	}
	if labels := topQ.Options; len(labels) != 2 || labels[0].Label == "" {
		t.Fatalf("top question options %+v; want the assistant's labels", labels)
	}

	sendState(t, ctx, bob, answer(task.ID, topQ.ID, map[string]any{"costCentre": "CC-4420"}), a2a.TaskStateCompleted)
	l.wantOneFiling(t, "CC-4420")
	for _, hop := range []struct {
		name string
		task *a2a.Task
		q    *question.Question
	}{
		{"router", getTask(t, ctx, midC, midTask.ID), midQ},
		{"expense agent", getTask(t, ctx, subC, subTask.ID), subQ},
	} {
		if hop.task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("%s's task: state %v (%q), want completed", hop.name, hop.task.Status.State, statusText(hop.task))
		}
		fields := answerTo(t, hop.task, hop.q.ID)
		raw, _ := json.Marshal(fields)
		if errs := hop.q.Validate(raw); len(errs) > 0 {
			t.Fatalf("the answer that reached the %s, %s, does not fit its question: %v", hop.name, raw, errs)
		}
		if fields["costCentre"] != "CC-4420" {
			t.Fatalf("the answer that reached the %s is %s, want costCentre CC-4420", hop.name, raw)
		}
	}
}

func TestRestartingTheTopServerWhileItsTaskWaitsOnTheCallerLosesNothing(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	task := sendState(t, ctx, w.bob(t), userText(receipt), a2a.TaskStateInputRequired)
	topQ := questionOf(t, task)

	w.restartTop(t, []askpoint.AgentSpec{assistantSpec(t, "http://"+w.topAddr, w.sub.URL+"/expenses")})
	bob := w.bob(t)
	if q := questionOf(t, getTask(t, ctx, bob, task.ID)); q.ID != topQ.ID {
		t.Fatalf("after the restart the open question is %s, want still %s", q.ID, topQ.ID)
	}
	sendState(t, ctx, bob, answer(task.ID, topQ.ID, map[string]any{"costCentre": "CC-4420"}), a2a.TaskStateCompleted)
	w.ledger.wantOneFiling(t, "CC-4420")
	sub := onlyTask(t, ctx, w.subClient(t, "expenses"))
	if sub.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("sub-task: state %v, want completed", sub.Status.State)
	}
}

func TestUpwardQuestionIsWithdrawnWhenTheSubQuestionIsAnsweredAnotherWay(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	bob, subC, task, sub := w.receiptWaiting(t, ctx)
	topQ, subQ := questionOf(t, task), questionOf(t, sub)

	sendState(t, ctx, subC, answer(sub.ID, subQ.ID, map[string]any{"costCentre": "CC-4410"}), a2a.TaskStateCompleted)
	got := waitState(t, ctx, bob, task.ID, a2a.TaskStateCompleted)
	for _, m := range got.History {
		if m.Role == a2a.MessageRoleUser && len(m.Parts) > 0 {
			if _, ok := m.Parts[0].Content.(a2a.Data); ok {
				t.Fatalf("bob's task holds an answer although bob never answered:%s", historyText(got))
			}
		}
	}
	w.ledger.wantOneFiling(t, "CC-4410")
	// The withdrawn question takes no answer.
	if _, err := bob.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer(task.ID, topQ.ID, map[string]any{"costCentre": "CC-4420"})}); err == nil {
		t.Fatalf("an answer to the withdrawn question %s was accepted", topQ.ID)
	}
	w.ledger.wantOneFiling(t, "CC-4410")
}

// A relay whose own question is looser than the sub-agent's: answers pass
// the runtime's check at the top and fail the relay's second check, against
// the sub-agent's schema. Those re-asks are the caller's attempts like any
// other, and run out.
func TestAnswersTheSubAgentWouldRefuseRunOutOfAttemptsAtTheTop(t *testing.T) {
	loose := func(_ context.Context, _ *askpoint.Call, _ *question.Question) (question.Question, error) {
		return question.Question{Text: "Which budget code?", Schema: json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string"}}}`)}, nil
	}
	w := startWorld(t, nil, nil, func(topBase, subBase string) []askpoint.AgentSpec {
		return []askpoint.AgentSpec{relaySpec(t, relay.Config{SubAgentURL: subBase + "/expenses", CallbackURL: topBase + "/assistant", Restate: loose})}
	})
	ctx := testCtx(t)
	bob := w.bob(t)
	task := sendState(t, ctx, bob, userText(receipt), a2a.TaskStateInputRequired)
	q := questionOf(t, task)
	const maxAttempts = question.DefaultMaxAttempts // the top server's default cap
	for wrong := 1; ; wrong++ {
		got := send(t, ctx, bob, answer(task.ID, q.ID, map[string]any{"costCentre": "CC-9999"}))
		if got.Status.State == a2a.TaskStateFailed {
			if wrong != maxAttempts {
				t.Fatalf("the task failed after %d wrong answers, want %d", wrong, maxAttempts)
			}
			break
		}
		if wrong >= maxAttempts {
			t.Fatalf("after %d wrong answers: state %v (%q); want failed, the attempts used up", wrong, got.Status.State, statusText(got))
		}
		q = questionOf(t, got)
		if q.Attempt != wrong+1 || len(q.Errors) == 0 {
			t.Fatalf("after %d wrong answers the re-ask is attempt %d of %d (errors %v), want attempt %d with errors: %q", wrong, q.Attempt, q.MaxAttempts, q.Errors, wrong+1, statusText(got))
		}
	}
	sub := onlyTask(t, ctx, w.subClient(t, "expenses"))
	for _, m := range sub.History[1:] { // after the request
		if m.Role == a2a.MessageRoleUser {
			t.Fatalf("a refused answer reached the expense agent:%s", historyText(sub))
		}
	}
}

// The sub-task is what the relay holds while its caller thinks: when the
// caller cancels instead of answering, the sub-task is canceled too, not
// left waiting for its own expiry.
func TestCancelingAtTheTopCancelsTheSubTask(t *testing.T) {
	for _, how := range []string{"CancelTask", "cancel action"} {
		t.Run(how, func(t *testing.T) {
			w := startWorld(t, nil, nil, nil)
			ctx := testCtx(t)
			bob, subC, task, sub := w.receiptWaiting(t, ctx)
			if how == "CancelTask" {
				if _, err := bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
					t.Fatalf("CancelTask: %v", err)
				}
			} else {
				q := questionOf(t, task)
				sendState(t, ctx, bob, answer(task.ID, q.ID, map[string]any{"action": "cancel", "reason": "changed my mind"}), a2a.TaskStateCanceled)
			}
			waitState(t, ctx, subC, sub.ID, a2a.TaskStateCanceled)
			if n := len(w.ledger.filed()); n != 0 {
				t.Fatalf("%d expenses filed after the cancel, want none", n)
			}
		})
	}
}

// While the sub-agent works, the relay's task waits without a run and
// holds the sub-task: canceling the relay's task cancels the sub-task.
func TestCancelingWhileTheSubAgentWorksCancelsTheSubTask(t *testing.T) {
	slow := askpoint.Steps[struct{}, struct{}]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			<-ctx.Done() // works until canceled
			return askpoint.Outcome{}, ctx.Err()
		},
	}
	w := startWorld(t, nil, nil, func(topBase, subBase string) []askpoint.AgentSpec {
		return []askpoint.AgentSpec{relaySpec(t, relay.Config{SubAgentURL: subBase + "/slow", CallbackURL: topBase + "/assistant", SettleWithin: 100 * time.Millisecond})}
	}, askpoint.AgentSpec{Name: "slow", Agent: slow, Card: a2a.AgentCard{Name: "Slow", Description: "Works until canceled."}})
	ctx := testCtx(t)
	bob := w.bob(t)
	res, err := bob.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("take your time"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task := res.(*a2a.Task)
	eventually(t, "the relay's task waiting for the sub-agent", func() bool {
		got := getTask(t, ctx, bob, task.ID)
		return got.Status.State == a2a.TaskStateWorking && strings.Contains(statusText(got), "Waiting for")
	})
	subC := w.subClient(t, "slow")
	sub := onlyTask(t, ctx, subC)
	if _, err := bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	waitState(t, ctx, subC, sub.ID, a2a.TaskStateCanceled)
}

// A rerun of the relay's first step (a crash or a stop after its side
// effects, before its outcome is written) finds the sub-task it started,
// even after answering the sub-agent's question itself: one sub-task, one
// expense.
func TestRerunOfTheFirstStepAfterAnsweringFromContextFilesOnce(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	a, err := expense.Assistant(expense.AssistantConfig{
		ExpenseURL: w.sub.URL + "/expenses", SelfURL: "http://" + w.topAddr + "/assistant",
		Defaults: map[string]string{"alice": "CC-4410"},
	})
	if err != nil {
		t.Fatal(err)
	}
	call := &askpoint.Call{TaskID: "top-task-1", ContextID: "ctx-1", Principal: "alice", Key: "top-task-1/start", Request: userText(receipt)}
	call.Message = call.Request
	for run := 1; run <= 2; run++ {
		o, err := a.Start(ctx, call)
		if err != nil || o.Kind() != askpoint.OutcomeComplete {
			t.Fatalf("run %d: outcome %v (%q), %v; want complete", run, o.Kind(), o.Text(), err)
		}
	}
	subs, err := w.subClient(t, "expenses").ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs.Tasks) != 1 {
		t.Fatalf("sub-tasks after two runs of one step = %d, want 1", len(subs.Tasks))
	}
	w.ledger.wantOneFiling(t, "CC-4410")
}

// When the sub-agent cannot be reached, the caller is told so in words that
// name it, never by its address.
func TestUnreachableSubAgentIsNamedNotLocated(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	bob := w.bob(t)
	addr := strings.TrimPrefix(w.sub.URL, "http://")
	w.sub.Close()
	task := send(t, ctx, bob, userText(receipt))
	if task.Status.State != a2a.TaskStateFailed {
		task = waitState(t, ctx, bob, task.ID, a2a.TaskStateFailed)
	}
	if text := statusText(task); strings.Contains(text, addr) || !strings.Contains(text, "could not reach the expense agent") {
		t.Fatalf("status %q: want it to name the expense agent and not show its address %s", text, addr)
	}
}

// When the relay cannot carry the caller's answer down (the sub-agent is
// unreachable at that moment), its task fails saying so in the relay's own
// words, and nothing is filed. (The cancel of the sub-task is best effort:
// with the sub-agent unreachable it is not retried.)
func TestFailingToCarryTheAnswerDownFailsTheTaskInTheRelaysWords(t *testing.T) {
	var down atomic.Bool
	w := startWorld(t, nil, nil, func(topBase, subBase string) []askpoint.AgentSpec {
		a, err := expense.Assistant(expense.AssistantConfig{
			ExpenseURL: subBase + "/expenses", SelfURL: topBase + "/assistant",
			Dial: func(ctx context.Context, u string) (*a2aclient.Client, error) {
				if down.Load() {
					return nil, errors.New("connection refused (simulated)")
				}
				return client.Dial(ctx, u, nil)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return []askpoint.AgentSpec{{Name: "assistant", Agent: a, Card: expense.AssistantCard()}}
	})
	ctx := testCtx(t)
	bob := w.bob(t)
	task := sendState(t, ctx, bob, userText(receipt), a2a.TaskStateInputRequired)
	q := questionOf(t, task)
	down.Store(true)
	got := send(t, ctx, bob, answer(task.ID, q.ID, map[string]any{"costCentre": "CC-4420"}))
	if got.Status.State != a2a.TaskStateFailed {
		got = waitState(t, ctx, bob, task.ID, a2a.TaskStateFailed)
	}
	if text := statusText(got); !strings.Contains(text, "lost touch with the expense agent") {
		t.Fatalf("status %q, want it to say the relay lost touch with the expense agent", text)
	}
	if n := len(w.ledger.filed()); n != 0 {
		t.Fatalf("%d expenses filed, want none", n)
	}
}
