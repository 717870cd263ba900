package servertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/pgcluster"
	"github.com/askpoint/askpoint/question"
)

// The fault harness: askpoint nodes on a PostgreSQL cluster of the test's
// own (internal/pgcluster), callers running ask -> answer -> complete
// against them, and the database restarted and stopped under the load.
// Its figures are in docs/BENCHMARKS.md ("Faults").

// fileAgent asks whether to file an expense and, on the answer, files it
// into the same PostgreSQL (an effects table keyed by call.Key): its side
// effect fails while the database is away, as the expense agent's
// did, and the step is retried.
type fileAgent struct{ pool *pgxpool.Pool }

func (a *fileAgent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	return askpoint.Ask(question.Question{Text: "File the taxi receipt of 42 euros?",
		Schema: json.RawMessage(`{"type":"object","required":["file"],"properties":{"file":{"type":"boolean"}}}`)}, struct{}{}), nil
}

func (a *fileAgent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := a.pool.Exec(ctx, `INSERT INTO effects (key) VALUES ($1) ON CONFLICT DO NOTHING`, call.Key); err != nil {
		return askpoint.Outcome{}, fmt.Errorf("file the expense: %w", err)
	}
	return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("filed")}}), nil
}

// faultEvent is what the harness does to the database at an offset.
type faultEvent struct {
	at   time.Duration
	what string // restart | stop | start
}

type faultPlan struct {
	nodes, callers int
	load           time.Duration
	events         []faultEvent
}

// faultReport is what a run measured.
type faultReport struct {
	acknowledged, tasks, unavailable, otherErrors int
	stepRetries, requestRetries                   int64
	recovery                                      [][]time.Duration // per database return, per node
	maxRecovery                                   time.Duration
}

func runFaultHarness(t *testing.T, plan faultPlan) faultReport {
	cluster := pgcluster.Start(t)
	url := cluster.URL()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE effects (key text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	agent := &fileAgent{pool: pool}
	var nodes []*apitest.Env
	for range plan.nodes {
		nodes = append(nodes, apitest.Start(t, apitest.Options{Quiet: os.Getenv("ASKPOINT_FAULT_LOGS") == "", PostgresURL: url,
			Config: func(c *askpoint.Config) {
				c.LeaseDuration = 3 * time.Second
				c.PollInterval = 100 * time.Millisecond
				c.StepRetries, c.StepRetryMin, c.StepRetryMax = 30, 100*time.Millisecond, time.Second
			},
			Agents: []askpoint.AgentSpec{{Name: "file", Agent: agent, Card: a2a.AgentCard{Name: "File", Description: "files expenses"}}}}))
	}
	clients := make([][]*a2aclient.Client, plan.nodes) // per node, per transport
	for i, n := range nodes {
		for _, tr := range apitest.Transports {
			clients[i] = append(clients[i], n.Client(t, "file", tr))
		}
	}

	// One probe task per node: GetTask on it says whether the node serves.
	probes := make([]a2a.TaskID, plan.nodes)
	for i := range nodes {
		probes[i] = send(t, testCtx(t), clients[i][0], userText("probe")).ID
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var (
		mu         sync.Mutex
		acked      []a2a.TaskID
		started    []a2a.TaskID
		errTexts   = map[string]int{}
		leaks      []string
		okAt       = make([][]time.Time, plan.nodes) // probe successes per node
		unavail    atomic.Int64
		otherErrs  atomic.Int64
		loadStart  = time.Now()
		loadEnd    = loadStart.Add(plan.load)
		giveUp     = loadEnd.Add(60 * time.Second)
		wg, probeW sync.WaitGroup
	)
	noteErr := func(err error) {
		msg := err.Error()
		mu.Lock()
		defer mu.Unlock()
		if w := carriesDriverText(msg); w != "" {
			leaks = append(leaks, msg)
		}
		if strings.Contains(msg, "send the request again") {
			unavail.Add(1)
		} else {
			otherErrs.Add(1)
		}
		if len(errTexts) < 20 {
			errTexts[msg]++
		}
	}
	pause := func() bool {
		tm := time.NewTimer(50 * time.Millisecond)
		defer tm.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-tm.C:
			return time.Now().Before(giveUp)
		}
	}
	// call sends m until the node takes it (the same messageId each time).
	call := func(c *a2aclient.Client, m *a2a.Message) *a2a.Task {
		for {
			cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
			res, err := c.SendMessage(cctx, &a2a.SendMessageRequest{Message: m})
			ccancel()
			if err == nil {
				if task, ok := res.(*a2a.Task); ok {
					return task
				}
				err = fmt.Errorf("SendMessage returned %T", res)
			}
			noteErr(err)
			if !pause() {
				return nil
			}
		}
	}
	for i := range plan.callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[i%plan.nodes][(i/plan.nodes)%len(apitest.Transports)]
			for time.Now().Before(loadEnd) && ctx.Err() == nil {
				asked := call(c, userText("taxi, 42 euros"))
				if asked == nil {
					return
				}
				mu.Lock()
				started = append(started, asked.ID)
				mu.Unlock()
				q, ok, err := question.FromMessage(asked.Status.Message)
				if asked.Status.State != a2a.TaskStateInputRequired || err != nil || !ok {
					noteErr(fmt.Errorf("start of %s: state %s, want input-required with a question", asked.ID, asked.Status.State))
					continue
				}
				done := call(c, followUp(asked.ID, userData(map[string]any{"questionId": q.ID, "file": true})))
				if done == nil {
					return
				}
				mu.Lock()
				acked = append(acked, asked.ID)
				mu.Unlock()
			}
		}()
	}
	for i := range nodes {
		probeW.Add(1)
		go func() {
			defer probeW.Done()
			c := clients[i][0]
			for ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
				_, err := c.GetTask(pctx, &a2a.GetTaskRequest{ID: probes[i]})
				pcancel()
				if err == nil {
					mu.Lock()
					okAt[i] = append(okAt[i], time.Now())
					mu.Unlock()
				} else if ctx.Err() == nil {
					noteErr(err)
				}
				tm := time.NewTimer(10 * time.Millisecond)
				select {
				case <-ctx.Done():
				case <-tm.C:
				}
				tm.Stop()
			}
		}()
	}

	// The faults, from the test's goroutine (pgcluster fails the test).
	var returns []time.Time
	for _, ev := range plan.events {
		tm := time.NewTimer(time.Until(loadStart.Add(ev.at)))
		<-tm.C
		switch ev.what {
		case "restart":
			cluster.Restart()
			returns = append(returns, time.Now())
		case "stop":
			cluster.Stop()
		case "start":
			cluster.StartServer()
			returns = append(returns, time.Now())
		}
		t.Logf("%6.2fs: database %s done", time.Since(loadStart).Seconds(), ev.what)
	}
	wg.Wait()
	cancel()
	probeW.Wait()

	rep := faultReport{acknowledged: len(acked), tasks: len(started), unavailable: int(unavail.Load()), otherErrors: int(otherErrs.Load())}
	for _, n := range nodes {
		rep.stepRetries += n.Engine.StepRetries()
		rep.requestRetries += n.Engine.TransientRetries()
	}
	for _, r := range returns {
		var row []time.Duration
		for i := range nodes {
			j := sort.Search(len(okAt[i]), func(k int) bool { return !okAt[i][k].Before(r) })
			d := time.Duration(-1)
			if j < len(okAt[i]) {
				d = okAt[i][j].Sub(r)
			}
			row = append(row, d)
			if d > rep.maxRecovery || d < 0 {
				rep.maxRecovery = max(rep.maxRecovery, d)
			}
			if d < 0 || d > time.Second {
				t.Errorf("node %d served again %v after the database's return at %v, want within 1s", i, d, r.Sub(loadStart).Round(time.Millisecond))
			}
		}
		rep.recovery = append(rep.recovery, row)
	}
	for msg, n := range errTexts {
		t.Logf("caller saw %d× %q", n, msg)
	}
	if len(leaks) > 0 {
		t.Errorf("%d responses carried SQL or driver text, e.g. %q", len(leaks), leaks[0])
	}

	// Every acknowledged answer completes; no task ends failed.
	c := clients[0][0]
	vctx, vcancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer vcancel()
	for _, id := range started {
		for {
			task, err := c.GetTask(vctx, &a2a.GetTaskRequest{ID: id})
			if err != nil {
				t.Fatalf("GetTask(%s) after the faults: %v", id, err)
			}
			st := task.Status.State
			if st == a2a.TaskStateFailed || st == a2a.TaskStateRejected || st == a2a.TaskStateCanceled {
				t.Fatalf("task %s ended %s: %s", id, st, messageText(task.Status.Message))
			}
			if st == a2a.TaskStateCompleted || (st == a2a.TaskStateInputRequired && !contains(acked, id)) {
				break
			}
			tm := time.NewTimer(50 * time.Millisecond)
			select {
			case <-vctx.Done():
				t.Fatalf("task %s is still %s 60s after the load (acknowledged: %v)", id, st, contains(acked, id))
			case <-tm.C:
			}
		}
	}
	var effects int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM effects`).Scan(&effects); err != nil {
		t.Fatal(err)
	}
	if effects != len(acked) {
		t.Errorf("%d effects for %d acknowledged answers, want one each", effects, len(acked))
	}
	if len(acked) == 0 {
		t.Fatal("no answer was acknowledged under the load")
	}
	t.Logf("FAULTS nodes=%d callers=%d load=%v: %d tasks, %d answers acknowledged, 0 lost, 0 failed; %d step retries, %d request retries, %d retryable answers, %d other errors; recovery after each return (per node) %v, max %v",
		plan.nodes, plan.callers, plan.load, rep.tasks, rep.acknowledged, rep.stepRetries, rep.requestRetries, rep.unavailable, rep.otherErrors, rep.recovery, rep.maxRecovery)
	return rep
}

func contains(ids []a2a.TaskID, id a2a.TaskID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// TestFaultsPostgresOneNode: one node, 8 callers, PostgreSQL restarted
// twice and stopped for 10 s.
func TestFaultsPostgresOneNode(t *testing.T) {
	runFaultHarness(t, faultPlan{nodes: 1, callers: 8, load: 18 * time.Second, events: []faultEvent{
		{2 * time.Second, "restart"}, {4 * time.Second, "restart"}, {6 * time.Second, "stop"}, {16 * time.Second, "start"},
	}})
}

// TestFaultsPostgresTwoNodes is the bar: two nodes, 8 callers for
// 30 s, PostgreSQL restarted twice and stopped once for 10 s.
func TestFaultsPostgresTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("the 30 s fault run is skipped with -short")
	}
	runFaultHarness(t, faultPlan{nodes: 2, callers: 8, load: 30 * time.Second, events: []faultEvent{
		{4 * time.Second, "restart"}, {9 * time.Second, "restart"}, {14 * time.Second, "stop"}, {24 * time.Second, "start"},
	}})
}

// slowAgent's start runs until its context ends (first run) or completes
// at once (any later run).
type slowAgent struct {
	runs     *atomic.Int64
	running  chan struct{} // closed by the first run once it runs
	canceled chan struct{} // closed when the first run's context ends
	ranHere  atomic.Int64
}

func (a *slowAgent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	a.ranHere.Add(1)
	if a.runs.Add(1) == 1 {
		close(a.running)
		<-ctx.Done()
		close(a.canceled)
		return askpoint.Outcome{}, ctx.Err()
	}
	return askpoint.Complete(), nil
}

func (a *slowAgent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	return askpoint.Fail("not asked"), nil
}

// TestFaultsLeaseLapsesWhileUnreachable: a node that cannot reach the
// store past its lease stops the step it can no longer fence (the step's
// context is canceled), and once the store is back a node takes the task
// over and completes it.
func TestFaultsLeaseLapsesWhileUnreachable(t *testing.T) {
	cluster := pgcluster.Start(t)
	runs := &atomic.Int64{}
	running, canceled := make(chan struct{}), make(chan struct{})
	var agents []*slowAgent
	var nodes []*apitest.Env
	for range 2 {
		a := &slowAgent{runs: runs, running: running, canceled: canceled}
		agents = append(agents, a)
		nodes = append(nodes, apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: cluster.URL(),
			Config: func(c *askpoint.Config) {
				c.LeaseDuration = 1500 * time.Millisecond
				c.PollInterval = 100 * time.Millisecond
			},
			Agents: []askpoint.AgentSpec{{Name: "slow", Agent: a, Card: a2a.AgentCard{Name: "Slow", Description: "runs until stopped"}}}}))
	}
	c := nodes[0].Client(t, "slow", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("work"), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	<-running
	cluster.Stop()
	stopped := time.Now()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the step kept running 10 s after its node lost the store, past its 1.5 s lease")
	}
	stoppedAfter := time.Since(stopped)
	if stoppedAfter < time.Second {
		t.Fatalf("the step was stopped %v after the store went away, before its lease could lapse", stoppedAfter)
	}
	cluster.StartServer()
	for {
		task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err == nil && task.Status.State == a2a.TaskStateCompleted {
			break
		}
		if err == nil && task.Status.State.Terminal() {
			t.Fatalf("task ended %s: %s", task.Status.State, messageText(task.Status.Message))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the task was not taken over and completed: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("first run on node 0 stopped %v after the store went away; the task was completed by node 0 %d×, node 1 %d× (runs in all %d)",
		stoppedAfter.Round(time.Millisecond), agents[0].ranHere.Load()-1, agents[1].ranHere.Load(), runs.Load())
}
