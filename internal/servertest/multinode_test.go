package servertest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
)

// startNodes starts n askpoint servers on one fresh PostgreSQL schema, all
// serving one expense agent ("ledger") that files into one ledger.
func startNodes(t *testing.T, n int) ([]*apitest.Env, *countingLedger, *countingAgent) {
	t.Helper()
	url := dbtest.Schema(t)
	ledger := newCountingLedger()
	agent := &countingAgent{Agent: expense.Agent(expense.DefaultDirectory, ledger, nil), resumes: map[string]int{}}
	var nodes []*apitest.Env
	for range n {
		nodes = append(nodes, apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: url, Agents: []askpoint.AgentSpec{
			{Name: "ledger", Agent: agent, Card: expense.Card()},
		}}))
	}
	return nodes, ledger, agent
}

func nodeClients(t *testing.T, nodes []*apitest.Env) []*a2aclient.Client {
	var cs []*a2aclient.Client
	for i, n := range nodes {
		cs = append(cs, n.Client(t, "ledger", apitest.Transports[i%len(apitest.Transports)]))
	}
	return cs
}

// TestConcurrentAnswersAcrossNodesResumeExactlyOnce is the race trial of
// TestConcurrentValidAnswersResumeExactlyOnce on PostgreSQL, with the
// question asked through one node and the racing answers spread over two.
func TestConcurrentAnswersAcrossNodesResumeExactlyOnce(t *testing.T) {
	nodes, ledger, agent := startNodes(t, 2)
	clients := nodeClients(t, nodes)
	trials := raceTrials(t) / 5 // each trial costs more on PostgreSQL; ASKPOINT_RACE_TRIALS scales it
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	runTrials(t, trials, func(i int) error {
		// Rotate which node asks, so answers land on the asking node and
		// on the other one.
		cs := []*a2aclient.Client{clients[i%2], clients[(i+1)%2]}
		return raceTrial(ctx, cs, ledger, agent, 2+i%7)
	})
}

// TestEveryMessageDeliveredThriceAcrossNodesActsOnce delivers each message
// of the worked example three times at once, through two nodes.
func TestEveryMessageDeliveredThriceAcrossNodesActsOnce(t *testing.T) {
	nodes, ledger, agent := startNodes(t, 2)
	clients := nodeClients(t, nodes)
	ctx := testCtx(t)
	thrice := func(m *a2a.Message) []*a2a.Task {
		t.Helper()
		var wg sync.WaitGroup
		out := make([]*a2a.Task, 3)
		errs := make([]error, 3)
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := clients[i%2].SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
				if err != nil {
					errs[i] = err
					return
				}
				out[i] = res.(*a2a.Task)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("delivery of %s: %v", m.ID, err)
			}
		}
		return out
	}
	asked := thrice(userText(receipt))
	id := asked[0].ID
	for _, task := range asked {
		if task.ID != id {
			t.Fatalf("the first message delivered through two nodes made tasks %s and %s", id, task.ID)
		}
	}
	reasked := thrice(followUp(id, userText("engineering")))
	q2, ok, _ := question.FromMessage(reasked[0].Status.Message)
	if !ok || q2.Attempt != 2 {
		t.Fatalf("text answer x3: want one re-ask at attempt 2, got %+v", q2)
	}
	for _, task := range reasked {
		if q, _, _ := question.FromMessage(task.Status.Message); q == nil || q.ID != q2.ID {
			t.Fatalf("text answer x3 through two nodes gave different re-asks")
		}
	}
	done := thrice(followUp(id, userData(map[string]any{"questionId": q2.ID, "costCentre": "CC-4410"})))
	for _, task := range done {
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("data answer x3: a delivery returned %v, want completed", task.Status.State)
		}
	}
	final := getTask(t, ctx, clients[1], id)
	if len(final.History) != 6 {
		t.Errorf("history has %d messages, want 6 as for one delivery", len(final.History))
	}
	if r, f := agent.count(string(id)), ledger.filings(string(id)); r != 1 || f != 1 {
		t.Errorf("agent resumed %d times and %d expenses filed, want 1 and 1", r, f)
	}
}
