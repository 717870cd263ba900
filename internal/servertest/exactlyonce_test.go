package servertest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// countingLedger files expenses idempotently by key, like a real ledger
// must, and counts what it was asked to do.
type countingLedger struct {
	mu    sync.Mutex
	filed map[string]string // key -> expense ID
	calls map[string]int    // task ID -> File calls
}

func newCountingLedger() *countingLedger {
	return &countingLedger{filed: map[string]string{}, calls: map[string]int{}}
}

func (l *countingLedger) File(ctx context.Context, key string, e expense.Expense) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	task := key[:36]
	l.calls[task]++
	if id, ok := l.filed[key]; ok {
		return id, nil
	}
	id := fmt.Sprintf("EXP-%d", len(l.filed)+1)
	l.filed[key] = id
	return id, nil
}

// filings counts distinct expenses filed for a task.
func (l *countingLedger) filings(task string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for key := range l.filed {
		if key[:36] == task {
			n++
		}
	}
	return n
}

// countingAgent counts how often each task is resumed.
type countingAgent struct {
	askpoint.Agent
	mu      sync.Mutex
	resumes map[string]int
}

func (a *countingAgent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	a.mu.Lock()
	a.resumes[call.TaskID]++
	a.mu.Unlock()
	return a.Agent.Resume(ctx, call, r)
}

func (a *countingAgent) count(task string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.resumes[task]
}

func startLedgerEnv(t *testing.T) (*apitest.Env, *countingLedger, *countingAgent) {
	t.Helper()
	ledger := newCountingLedger()
	agent := &countingAgent{Agent: expense.Agent(expense.DefaultDirectory, ledger, nil), resumes: map[string]int{}}
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{
		{Name: "ledger", Agent: agent, Card: expense.Card()},
	}})
	return env, ledger, agent
}

const receipt = "File my taxi receipt from Tuesday, 42 euros"

func raceTrials(t *testing.T) int {
	if v := os.Getenv("ASKPOINT_RACE_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ASKPOINT_RACE_TRIALS=%q: %v", v, err)
		}
		return n
	}
	return 1000
}

// TestConcurrentValidAnswersResumeExactlyOnce runs trials of 2 to 8
// simultaneous valid answers to one question (ASKPOINT_RACE_TRIALS,
// default 1000): exactly one resumes the task and files the expense; every
// loser gets the task back or UnsupportedOperation, never another error.
func TestConcurrentValidAnswersResumeExactlyOnce(t *testing.T) {
	env, ledger, agent := startLedgerEnv(t)
	trials := raceTrials(t)
	clients := []*a2aclient.Client{
		env.Client(t, "ledger", a2a.TransportProtocolJSONRPC),
		env.Client(t, "ledger", a2a.TransportProtocolHTTPJSON),
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()

	runTrials(t, trials, func(i int) error {
		return raceTrial(ctx, clients, ledger, agent, 2+i%7)
	})
}

// runTrials runs trial(0..n-1), four at a time, and fails the test with
// the first errors when any trial goes wrong.
func runTrials(t *testing.T, n int, trial func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := trial(i); err != nil {
					errs <- fmt.Errorf("trial %d: %w", i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed < 10 {
			t.Error(err)
		}
		failed++
	}
	if failed > 0 {
		t.Fatalf("%d of %d trials went wrong", failed, n)
	}
}

func raceTrial(ctx context.Context, clients []*a2aclient.Client, ledger *countingLedger, agent *countingAgent, answers int) error {
	res, err := clients[0].SendMessage(ctx, &a2a.SendMessageRequest{Message: userText(receipt)})
	if err != nil {
		return fmt.Errorf("ask: %w", err)
	}
	task := res.(*a2a.Task)
	q, ok, _ := question.FromMessage(task.Status.Message)
	if task.Status.State != a2a.TaskStateInputRequired || !ok {
		return fmt.Errorf("ask: state %v, want input-required with a question", task.Status.State)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]error, answers)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := followUp(task.ID, userData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
			<-start
			_, results[i] = clients[i%len(clients)].SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range results {
		if err != nil && !errors.Is(err, a2a.ErrUnsupportedOperation) {
			return fmt.Errorf("answer %d of %d: %v (want the task or UnsupportedOperation)", i+1, answers, err)
		}
	}
	final, err := clients[0].GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		return err
	}
	// The winner's blocking call returned only once the task completed.
	if final.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("task is %v, want completed", final.Status.State)
	}
	if r := agent.count(string(task.ID)); r != 1 {
		return fmt.Errorf("%d answers resumed the agent %d times, want 1", answers, r)
	}
	if f := ledger.filings(string(task.ID)); f != 1 {
		return fmt.Errorf("%d expenses filed, want 1", f)
	}
	return nil
}

// deliverThrice sends m three times at once and returns the results.
func deliverThrice(ctx context.Context, c *a2aclient.Client, m *a2a.Message) ([]*a2a.Task, error) {
	var wg sync.WaitGroup
	out := make([]*a2a.Task, 3)
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
			if err != nil {
				errs[i] = err
				return
			}
			out[i] = res.(*a2a.Task)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func TestEveryMessageDeliveredThriceActsOnce(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		env, ledger, agent := startLedgerEnv(t)
		c := env.Client(t, "ledger", tr)
		ctx := testCtx(t)

		first := userText(receipt)
		asked, err := deliverThrice(ctx, c, first)
		if err != nil {
			t.Fatalf("first message x3: %v", err)
		}
		id := asked[0].ID
		for _, task := range asked {
			if task.ID != id || task.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("first message x3 gave task %s (%v), want one task %s in input-required", task.ID, task.Status.State, id)
			}
		}
		q1, _, _ := question.FromMessage(asked[0].Status.Message)

		text := followUp(id, userText("engineering"))
		reasked, err := deliverThrice(ctx, c, text)
		if err != nil {
			t.Fatalf("text answer x3: %v", err)
		}
		q2, _, _ := question.FromMessage(reasked[0].Status.Message)
		for _, task := range reasked {
			q, _, _ := question.FromMessage(task.Status.Message)
			if q.ID != q2.ID || q.Attempt != 2 {
				t.Fatalf("text answer x3: questions %q (attempt %d) and %q; want one re-ask, attempt 2", q.ID, q.Attempt, q2.ID)
			}
		}
		if q2.ID == q1.ID {
			t.Fatalf("re-ask kept question ID %q", q1.ID)
		}

		data := followUp(id, userData(map[string]any{"questionId": q2.ID, "costCentre": "CC-4410"}))
		done, err := deliverThrice(ctx, c, data)
		if err != nil {
			t.Fatalf("data answer x3: %v", err)
		}
		for _, task := range done {
			if task.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("data answer x3: a delivery returned %v, want the completed task", task.Status.State)
			}
		}
		// A retry after the task finished still gets the task back.
		late, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: data})
		if err != nil || late.(*a2a.Task).Status.State != a2a.TaskStateCompleted {
			t.Fatalf("retry after completion: %v, %v; want the completed task", late, err)
		}

		final := getTask(t, ctx, c, id)
		wantRoles := []a2a.MessageRole{a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent}
		if got := roles(final.History); fmt.Sprint(got) != fmt.Sprint(wantRoles) {
			t.Errorf("history roles = %v, want %v (as for one delivery)", got, wantRoles)
		}
		if r, f := agent.count(string(id)), ledger.filings(string(id)); r != 1 || f != 1 {
			t.Errorf("agent resumed %d times and %d expenses filed, want 1 and 1", r, f)
		}
	})
}

func TestReusedMessageIDWithOtherContentIsANewMessage(t *testing.T) {
	env, _, _ := startLedgerEnv(t)
	c := env.Client(t, "ledger", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	a := userText(receipt)
	b := userText("File my hotel bill from Monday, 120 euros")
	b.ID = a.ID
	ta := sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: a})
	tb := sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: b})
	if ta.ID == tb.ID {
		t.Fatalf("two messages with one messageId and different text share task %s, want two tasks", ta.ID)
	}
	if tb.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("second task state = %v, want input-required", tb.Status.State)
	}
	// Each is deduplicated on its own.
	again := sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: b})
	if again.ID != tb.ID {
		t.Errorf("redelivering the second message gave task %s, want %s", again.ID, tb.ID)
	}
}

func TestRedeliveryByAnotherCallerIsNotADuplicate(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	h, _ := env.Server.RequestHandler("script")
	m := userText("ask")
	alice, err := h.SendMessage(askpoint.WithPrincipal(t.Context(), "alice"), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	bob, err := h.SendMessage(askpoint.WithPrincipal(t.Context(), "bob"), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if alice.(*a2a.Task).ID == bob.(*a2a.Task).ID {
		t.Fatalf("alice and bob sending the same messageId got the same task")
	}
}

// TestSameFirstMessageAfterAFollowUpIsANewRequest: once the caller has
// answered on a task it knew of it, so the same first message again (the
// A2A conformance suite does this) starts a new task; a redelivery of that
// one finds it again.
func TestSameFirstMessageAfterAFollowUpIsANewRequest(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	first := userText("ask")
	a := sendState(t, ctx, c, first, a2a.TaskStateInputRequired)
	sendState(t, ctx, c, followUp(a.ID, userData(map[string]any{"name": "Ada"})), a2a.TaskStateCompleted)

	b := sendState(t, ctx, c, first, a2a.TaskStateInputRequired)
	if b.ID == a.ID {
		t.Fatalf("the first message sent again after a follow-up returned the finished task %s, want a new task", a.ID)
	}
	again := sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: first})
	if again.ID != b.ID {
		t.Errorf("redelivering it once more gave task %s, want %s", again.ID, b.ID)
	}
}
