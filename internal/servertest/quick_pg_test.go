package servertest_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
)

// Quick steps on PostgreSQL (decision 0020): a blocking answer's step runs
// before the answer is written, while the store holds the task's row for
// it, so that what reaches the task through another node waits for that
// write and decides from it.

// heldAgent is the expense agent whose resumes wait for release (or their
// context) after telling resumed which answer they got.
type heldAgent struct {
	askpoint.Agent
	resumed chan string // the cost centre of each resume
	release chan struct{}

	mu      sync.Mutex
	answers []string
}

func newHeldAgent() *heldAgent {
	return &heldAgent{
		Agent:   expense.Agent(expense.DefaultDirectory, newCountingLedger(), nil),
		resumed: make(chan string, 8),
		release: make(chan struct{}),
	}
}

func (a *heldAgent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	var f struct {
		CostCentre string `json:"costCentre"`
	}
	_ = json.Unmarshal(r.Answer.Fields, &f)
	cc := f.CostCentre
	a.mu.Lock()
	a.answers = append(a.answers, cc)
	a.mu.Unlock()
	a.resumed <- cc
	select {
	case <-a.release:
	case <-ctx.Done():
		return askpoint.Outcome{}, ctx.Err()
	}
	return a.Agent.Resume(ctx, call, r)
}

func (a *heldAgent) resumes() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.answers...)
}

// pgNodes starts n nodes on one PostgreSQL schema serving agent as name,
// with quick steps on (the default).
func pgNodes(t *testing.T, n int, name string, agent askpoint.Agent) []*apitest.Env {
	t.Helper()
	url := dbtest.Schema(t)
	var nodes []*apitest.Env
	for range n {
		nodes = append(nodes, apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: url, Agents: []askpoint.AgentSpec{
			{Name: name, Agent: agent, Card: expense.Card()},
		}}))
	}
	return nodes
}

// heldNodes starts n nodes serving a heldAgent as "held".
func heldNodes(t *testing.T, n int) ([]*apitest.Env, *heldAgent) {
	t.Helper()
	agent := newHeldAgent()
	return pgNodes(t, n, "held", agent), agent
}

// askedOnTwoNodes starts two held nodes, asks the receipt's question
// through node A (JSON-RPC) and returns a client of node A, one of node B
// over bBinding, and the paused task.
func askedOnTwoNodes(t *testing.T, ctx context.Context, bBinding a2a.TransportProtocol) (a, b *a2aclient.Client, agent *heldAgent, asked *a2a.Task) {
	t.Helper()
	nodes, agent := heldNodes(t, 2)
	a, b = nodes[0].Client(t, "held", a2a.TransportProtocolJSONRPC), nodes[1].Client(t, "held", bBinding)
	return a, b, agent, sendState(t, ctx, a, userText(receipt), a2a.TaskStateInputRequired)
}

// reply is what a SendMessage sent by sendInBackground got.
type reply struct {
	task *a2a.Task
	err  error
}

// sendInBackground sends req from a goroutine of its own.
func sendInBackground(ctx context.Context, c *a2aclient.Client, req *a2a.SendMessageRequest) chan reply {
	ch := make(chan reply, 1)
	go func() {
		res, err := c.SendMessage(ctx, req)
		task, _ := res.(*a2a.Task)
		ch <- reply{task, err}
	}()
	return ch
}

// answerHeld answers asked with cost centre cc through c and returns once
// agent's step for it runs (and waits for its release).
func answerHeld(ctx context.Context, c *a2aclient.Client, agent *heldAgent, asked *a2a.Task, cc string) chan reply {
	ch := sendInBackground(ctx, c, &a2a.SendMessageRequest{Message: costCentre(asked, cc)})
	select {
	case <-agent.resumed:
	case <-ctx.Done():
	}
	return ch
}

func costCentre(task *a2a.Task, cc string) *a2a.Message {
	q, _, _ := question.FromMessage(task.Status.Message)
	return followUp(task.ID, userData(map[string]any{"questionId": q.ID, "costCentre": cc}))
}

// answersIn counts the caller's answers in a task's history, by cost centre.
func answersIn(task *a2a.Task) map[string]int {
	out := map[string]int{}
	for _, m := range task.History {
		if d, ok := dataPart(m.Parts); ok && m.Role == a2a.MessageRoleUser {
			if cc, _ := d["costCentre"].(string); cc != "" {
				out[cc]++
			}
		}
	}
	return out
}

// Answers that reach node B while node A's quick step for another answer
// runs wait for A's write and decide from it: B gets the task as A left
// it, B's answers are not taken, and the step ran for A's answer only.
// Without the store's lock B's compare-and-set would win against A's
// unwritten answer, and the agent would resume twice. One of B's answers
// returns at once (its write waits for A's), the other blocks (its load
// under the lock waits for A's write, then for the task to settle).
func TestAnAnswerOnAnotherNodeWaitsForAQuickStepAndDecidesFromItsWrite(t *testing.T) {
	ctx := testCtx(t)
	a, b, agent, asked := askedOnTwoNodes(t, ctx, a2a.TransportProtocolHTTPJSON)

	fromA := answerHeld(ctx, a, agent, asked, "CC-4410")
	// A's step is running; its answer is written with its outcome, or at
	// the end of the quick window. B's answers come now.
	blockingB := sendInBackground(ctx, b, &a2a.SendMessageRequest{Message: costCentre(asked, "CC-4420")})
	res, err := b.SendMessage(ctx, &a2a.SendMessageRequest{Message: costCentre(asked, "CC-4420"),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatalf("node B's answer while node A's step ran: %v; want the task back", err)
	}
	if got, _ := res.(*a2a.Task); got == nil || got.Status.State != a2a.TaskStateWorking {
		t.Errorf("node B's answer got %v, want the task working on node A's answer (decided from A's write, not from the question B saw)", res)
	}
	close(agent.release)
	for who, ch := range map[string]chan reply{"node A's answer": fromA, "node B's blocking answer": blockingB} {
		if r := <-ch; r.err != nil || r.task == nil || r.task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("%s: %v, %v; want the completed task", who, r.task, r.err)
		}
	}
	if got := agent.resumes(); len(got) != 1 {
		t.Errorf("the agent resumed with %v, want once, with node A's answer", got)
	}
	final := getTaskHistory(t, ctx, b, asked.ID)
	if got := answersIn(final); got["CC-4410"] != 1 || got["CC-4420"] != 0 {
		t.Errorf("history holds answers %v, want node A's CC-4410 once and none of node B's", got)
	}
}

// A cancel that reaches node B while node A's quick step for an answer
// runs waits for A's write and cancels the task A left: A's answer is in
// the history, before the cancel. Without the store's lock the cancel
// would have ended the task as B read it, and A's step would have run for
// an answer that was never taken.
func TestACancelOnAnotherNodeWaitsForAQuickStepAndDecidesFromItsWrite(t *testing.T) {
	ctx := testCtx(t)
	a, b, agent, asked := askedOnTwoNodes(t, ctx, a2a.TransportProtocolJSONRPC)
	fromA := answerHeld(ctx, a, agent, asked, "CC-4410")
	canceled, err := b.CancelTask(ctx, &a2a.CancelTaskRequest{ID: asked.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask on node B while node A's step ran = %v, %v; want the canceled task", canceled, err)
	}
	close(agent.release)
	if r := <-fromA; r.err != nil {
		t.Errorf("node A's answer: %v; want the task back", r.err)
	}
	final := getTaskHistory(t, ctx, b, asked.ID)
	if final.Status.State != a2a.TaskStateCanceled {
		t.Errorf("the task ended %v, want canceled", final.Status.State)
	}
	if got := answersIn(final); got["CC-4410"] != 1 {
		t.Errorf("history holds answers %v, want node A's, taken before the cancel", got)
	}
}

// A quick step on PostgreSQL still running at the end of its window writes
// its answer then, so the answer is taken (every node sees the task
// working with it) before the step ends.
func TestAQuickStepOnPostgresThatOutlivesItsWindowWritesItsAnswer(t *testing.T) {
	ctx := testCtx(t)
	a, b, agent, asked := askedOnTwoNodes(t, ctx, a2a.TransportProtocolJSONRPC)
	done := answerHeld(ctx, a, agent, asked, "CC-4410")
	working := waitState(t, ctx, b, asked.ID, a2a.TaskStateWorking)
	if got := answersIn(getTaskHistory(t, ctx, b, working.ID)); got["CC-4410"] != 1 {
		t.Errorf("while the step runs, node B reads answers %v, want the answer taken", got)
	}
	close(agent.release)
	if r := <-done; r.err != nil || r.task == nil || r.task.Status.State != a2a.TaskStateCompleted {
		t.Errorf("the answer got %v, %v; want the completed task", r.task, r.err)
	}
	if got := agent.resumes(); len(got) != 1 {
		t.Errorf("the agent resumed with %v, want once", got)
	}
}

// tokenAgent is the expense agent whose first step takes its wake token and
// then waits for release.
type tokenAgent struct {
	askpoint.Agent
	took    chan string // the task ID, once the step has its token
	release chan struct{}
}

func (a *tokenAgent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	_ = call.WakeToken()
	a.took <- call.TaskID
	select {
	case <-a.release:
	case <-ctx.Done():
		return askpoint.Outcome{}, ctx.Err()
	}
	return a.Agent.Start(ctx, call)
}

// A quick first step on PostgreSQL that hands out its wake token has its
// task written first: a notification the token brings to another node
// finds the task (busy, so sent again) instead of no task.
func TestAQuickFirstStepOnPostgresIsWrittenBeforeItHandsOutItsWakeToken(t *testing.T) {
	agent := &tokenAgent{Agent: expense.Agent(expense.DefaultDirectory, newCountingLedger(), nil), took: make(chan string, 1), release: make(chan struct{})}
	nodes := pgNodes(t, 2, "token", agent)
	ctx := testCtx(t)
	a, b := nodes[0].Client(t, "token", a2a.TransportProtocolJSONRPC), nodes[1].Client(t, "token", a2a.TransportProtocolJSONRPC)
	done := make(chan error, 1)
	go func() {
		_, err := a.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText(receipt)})
		done <- err
	}()
	id := <-agent.took
	task, err := b.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
	if err != nil || task.Status.State != a2a.TaskStateWorking {
		t.Errorf("GetTask on the other node once the step has its token = %v, %v; want the task, working", task, err)
	}
	close(agent.release)
	if err := <-done; err != nil {
		t.Errorf("the first message: %v", err)
	}
}
