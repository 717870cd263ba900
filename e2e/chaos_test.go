//go:build unix

package e2e

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read the ledger

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
)

// chaosCycles is how many ask/answer cycles the random-kill tests run
// (ASKPOINT_CHAOS_CYCLES, default 200).
func chaosCycles(t *testing.T) int {
	if v := os.Getenv("ASKPOINT_CHAOS_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ASKPOINT_CHAOS_CYCLES=%q: %v", v, err)
		}
		return n
	}
	return 200
}

// chaos is a caller that keeps going while askpoint nodes are killed under
// it: it sends each call to a node picked at random, retries every message
// with the same messageId until it gets an answer, as a careful client
// does, and restarts a node whenever a call to it fails.
type chaos struct {
	t       *testing.T
	bin     string
	db      string // SQLite file or postgres:// URL, shared by every node
	nodes   []*crashServer
	clients []*a2aclient.Client
	kills   int
	rng     *rand.Rand
}

func newChaos(ctx context.Context, t *testing.T, db string, nodes int) *chaos {
	c := &chaos{t: t, bin: buildAskpoint(t), db: db, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}
	c.nodes = make([]*crashServer, nodes)
	c.clients = make([]*a2aclient.Client, nodes)
	for i := range nodes {
		c.restart(ctx, i)
	}
	return c
}

func (c *chaos) restart(ctx context.Context, i int) {
	c.nodes[i] = startCrashServer(c.t, c.bin, c.db)
	c.clients[i] = crashClient(ctx, c.t, c.nodes[i].url)
}

// kill SIGKILLs node i (if it still runs), waits for it to die, and starts
// it again.
func (c *chaos) kill(ctx context.Context, i int) {
	c.nodes[i].sigkillQuiet()
	<-c.nodes[i].done
	c.restart(ctx, i)
}

// maybeKill SIGKILLs node i at a random point, in the middle of a call
// (after a random delay) as often as between calls.
func (c *chaos) maybeKill(i int) {
	if c.rng.IntN(8) != 0 {
		return
	}
	srv := c.nodes[i]
	delay := time.Duration(c.rng.IntN(15)) * time.Millisecond
	c.kills++
	go func() {
		time.Sleep(delay)
		srv.sigkillQuiet()
	}()
}

// send delivers m through a random node until a call succeeds, restarting
// a node after each failure. A protocol error (a node answered) is
// returned as is.
func (c *chaos) send(ctx context.Context, m *a2a.Message, immediately bool) (*a2a.Task, error) {
	for range 50 {
		i := c.rng.IntN(len(c.nodes))
		c.maybeKill(i)
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		task, err := crashSend(callCtx, c.clients[i], m, immediately)
		cancel()
		if err == nil {
			return task, nil
		}
		var ae *a2a.Error
		if errors.As(err, &ae) {
			return nil, err
		}
		// Transport failure: the node died (or is dying). Make sure it is
		// dead, start it again, and redeliver the same message.
		c.kill(ctx, i)
	}
	c.t.Fatalf("message %s never got through", m.ID)
	return nil, nil
}

// settle waits until the task is no longer submitted or working (a run
// lost to a kill is taken over when its lease lapses).
func (c *chaos) settle(ctx context.Context, id a2a.TaskID) *a2a.Task {
	deadline := time.Now().Add(30 * time.Second)
	for {
		i := c.rng.IntN(len(c.nodes))
		task, err := c.clients[i].GetTask(ctx, &a2a.GetTaskRequest{ID: id})
		if err == nil && task.Status.State != a2a.TaskStateSubmitted && task.Status.State != a2a.TaskStateWorking {
			return task
		}
		if err != nil {
			var ae *a2a.Error
			if errors.As(err, &ae) {
				c.t.Fatalf("GetTask(%s): %v", id, err)
			}
			c.kill(ctx, i)
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("task %s stuck in %v for 30s", id, task.Status.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run drives the ask/answer cycles, then checks every task against what
// the caller was told. ledger reads the shared database (tasks and the
// expense ledger); arg is its placeholder style.
func (c *chaos) run(ctx context.Context, cycles int, ledger *sql.DB, ph func(int) string) {
	t := c.t
	accepted := map[a2a.TaskID]bool{} // a valid answer was acknowledged
	var all []a2a.TaskID
	firsts := map[string]a2a.TaskID{} // first messageId -> task
	for i := range cycles {
		first := crashText("", crashReceipt)
		task, err := c.send(ctx, first, c.rng.IntN(2) == 0)
		if err != nil {
			t.Fatalf("cycle %d: ask: %v", i, err)
		}
		if prev, ok := firsts[first.ID]; ok && prev != task.ID {
			t.Fatalf("cycle %d: redelivering message %s created a second task", i, first.ID)
		}
		firsts[first.ID] = task.ID
		all = append(all, task.ID)
		task = c.settle(ctx, task.ID)
		q, ok, _ := question.FromMessage(task.Status.Message)
		if task.Status.State != a2a.TaskStateInputRequired || !ok {
			t.Fatalf("cycle %d: task %s is %v, want a question", i, task.ID, task.Status.State)
		}
		if i%3 == 0 {
			// An answer that gets re-asked first.
			if _, err := c.send(ctx, crashText(task.ID, "engineering"), false); err != nil {
				t.Fatalf("cycle %d: text answer: %v", i, err)
			}
			task = c.settle(ctx, task.ID)
			if q, ok, _ = question.FromMessage(task.Status.Message); !ok {
				t.Fatalf("cycle %d: no re-ask after the text answer (state %v)", i, task.Status.State)
			}
		}
		if i%5 == 4 {
			continue // leave this one waiting on its question
		}
		if _, err := c.send(ctx, crashAnswer(string(task.ID), q.ID), c.rng.IntN(2) == 0); err != nil {
			t.Fatalf("cycle %d: answer: %v", i, err)
		}
		accepted[task.ID] = true
	}
	t.Logf("%d cycles on %d nodes, %d SIGKILLs", cycles, len(c.nodes), c.kills)

	// Let the last kills land, restart every node, and check every task.
	time.Sleep(50 * time.Millisecond)
	for i := range c.nodes {
		c.kill(ctx, i)
	}
	var tasks int
	if err := ledger.QueryRowContext(ctx, `SELECT count(*) FROM tasks`).Scan(&tasks); err != nil {
		t.Fatalf("count tasks: %v", err)
	}
	if tasks != len(firsts) {
		t.Errorf("the store holds %d tasks for %d first messages: a redelivery created a task", tasks, len(firsts))
	}
	for _, id := range all {
		task := c.settle(ctx, id)
		var filed int
		if err := ledger.QueryRowContext(ctx, `SELECT count(*) FROM expenses WHERE idempotency_key LIKE `+ph(1), string(id)+"/%").Scan(&filed); err != nil {
			t.Fatalf("count expenses: %v", err)
		}
		switch {
		case accepted[id]:
			if task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("task %s: an answer was accepted but the task is %v", id, task.Status.State)
			}
			if filed != 1 {
				t.Errorf("task %s: %d expenses filed, want exactly 1", id, filed)
			}
		default:
			if _, ok, _ := question.FromMessage(task.Status.Message); task.Status.State != a2a.TaskStateInputRequired || !ok {
				t.Errorf("task %s: never answered, but it is %v without a question", id, task.Status.State)
			}
			if filed != 0 {
				t.Errorf("task %s: never answered, but %d expenses were filed", id, filed)
			}
		}
	}
}

// TestRandomSIGKILLsLoseNothing SIGKILLs the real server at random points
// across ask/answer cycles (ASKPOINT_CHAOS_CYCLES, default 200) on SQLite,
// restarting it each time, while a caller redelivers whatever did not get
// through. Afterwards every task is completed or waiting on its open
// question, no accepted answer is lost, no expense is filed twice and
// nothing is stuck in working.
func TestRandomSIGKILLsLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the askpoint binary")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	db := filepath.Join(t.TempDir(), "askpoint.db")
	c := newChaos(ctx, t, db, 1)
	ledger, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	c.run(ctx, chaosCycles(t), ledger, func(int) string { return "?" })
}

// TestRandomSIGKILLsAcrossNodesLoseNothing is the same on PostgreSQL with
// two nodes: every call goes to a node picked at random, and either node
// may be killed at any point.
func TestRandomSIGKILLsAcrossNodesLoseNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the askpoint binary")
	}
	url := dbtest.Schema(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	c := newChaos(ctx, t, url, 2)
	ledger, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	c.run(ctx, chaosCycles(t), ledger, func(n int) string { return "$" + strconv.Itoa(n) })
}

// sigkillQuiet SIGKILLs the server if it is still running.
func (s *crashServer) sigkillQuiet() {
	select {
	case <-s.done:
	default:
		_ = s.cmd.Process.Signal(os.Kill)
	}
}
