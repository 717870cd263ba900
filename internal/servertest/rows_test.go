package servertest_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/sqlite"
)

// loadCounter counts the LoadTask calls the engine makes of the real
// store it wraps, and keeps the store's SingleNode.
type loadCounter struct {
	store.Store
	loads atomic.Int64
}

func (s *loadCounter) LoadTask(ctx context.Context, id string, p store.LoadParams) (*store.Loaded, error) {
	s.loads.Add(1)
	return s.Store.LoadTask(ctx, id, p)
}

// Unwrap is the wrapped store (where the engine finds its task locks).
func (s *loadCounter) Unwrap() store.Store { return s.Store }

func (s *loadCounter) SingleNode() bool {
	sn, ok := s.Store.(interface{ SingleNode() bool })
	return ok && sn.SingleNode()
}

func countedEnv(t *testing.T, dbPath string) (*apitest.Env, *loadCounter) {
	counter := &loadCounter{}
	env := apitest.Start(t, apitest.Options{Quiet: true, DBPath: dbPath, Config: func(c *askpoint.Config) {
		counter.Store = c.Store
		c.Store = counter
	}})
	return env, counter
}

func costCentreAnswer(t *testing.T, asked *a2a.Task) *a2a.Message {
	t.Helper()
	q, ok, _ := question.FromMessage(asked.Status.Message)
	if asked.Status.State != a2a.TaskStateInputRequired || !ok {
		t.Fatalf("ask: state %v, want input-required with a question", asked.Status.State)
	}
	return followUp(asked.ID, userData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
}

// TestAnswerToAQuestionThisNodeJustAskedReadsNoRow: on SQLite the node
// keeps the rows it wrote last, so the answer to the question it just
// asked decides from that row: no LoadTask. After a restart (nothing kept)
// the answer reads the row once, and both end the same way.
func TestAnswerToAQuestionThisNodeJustAskedReadsNoRow(t *testing.T) {
	env, counter := countedEnv(t, "")
	ctx := testCtx(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	asked := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
	before := counter.loads.Load()
	done := sendState(t, ctx, c, costCentreAnswer(t, asked), a2a.TaskStateCompleted)
	if n := counter.loads.Load() - before; n != 0 {
		t.Errorf("the answer to the question this node just asked read the task %d times, want 0", n)
	}
	if len(done.Artifacts) != 1 || !strings.Contains(messageText(done.Status.Message), "CC-4410") {
		t.Errorf("the answered task: %d artifacts, message %q; want the filed expense charged to CC-4410", len(done.Artifacts), messageText(done.Status.Message))
	}

	// Another task asked, the server restarted: nothing is kept.
	pending := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
	path := env.DBPath
	env.Close()
	env2, counter2 := countedEnv(t, path)
	c2 := env2.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	done2 := sendState(t, ctx, c2, costCentreAnswer(t, pending), a2a.TaskStateCompleted)
	if n := counter2.loads.Load(); n != 1 {
		t.Errorf("the answer after a restart read the task %d times, want 1", n)
	}
	if len(done2.Artifacts) != 1 {
		t.Errorf("the task answered after the restart has %d artifacts, want the filed expense", len(done2.Artifacts))
	}
}

// TestAStaleKeptRowCostsARetryNeverAWrongWrite: a write the node did not
// make (here another handle on the same file cancels the task) leaves the
// row the node kept stale. The answer decided from it loses its
// compare-and-set, reads the store, and is what an answer to a question no
// longer open always is: the caller gets the task as it stands (canceled),
// and the store keeps the cancel and never the answer.
func TestAStaleKeptRowCostsARetryNeverAWrongWrite(t *testing.T) {
	env, counter := countedEnv(t, "")
	ctx := testCtx(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	asked := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)

	other, err := sqlite.Open(ctx, env.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	row, err := other.GetTask(ctx, string(asked.ID))
	if err != nil {
		t.Fatal(err)
	}
	canceled := *row
	canceled.State = a2a.TaskStateCanceled
	canceled.Status = json.RawMessage(`{"state":"TASK_STATE_CANCELED"}`)
	canceled.Question, canceled.Pause, canceled.WakeAt, canceled.HoldAt = nil, nil, time.Time{}, time.Time{}
	if _, err := other.UpdateTask(ctx, &canceled, nil); err != nil {
		t.Fatal(err)
	}

	before := counter.loads.Load()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: costCentreAnswer(t, asked)})
	if task, _ := res.(*a2a.Task); err != nil || task == nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("the answer to a task canceled elsewhere = %v, %v; want the canceled task", res, err)
	}
	if n := counter.loads.Load() - before; n != 1 {
		t.Errorf("the answer read the task %d times, want 1 (after its write from the kept row lost)", n)
	}
	got, err := other.GetTask(ctx, string(asked.ID))
	if err != nil || got.State != a2a.TaskStateCanceled || got.Version != row.Version+1 {
		t.Fatalf("the stored task = %+v, %v; want canceled at version %d, nothing written after", got, err, row.Version+1)
	}
	log, err := other.ReadLog(ctx, string(asked.ID), row.LastSeq, 0)
	if err != nil || len(log) != 0 {
		t.Errorf("log entries after the cancel: %d, %v; want none (the answer never stored)", len(log), err)
	}
}

// unchangedCounter counts the LoadTask calls the engine makes of the real
// store it wraps, and those the store answered Unchanged: the task still
// at the version of the row the engine kept, read no further.
type unchangedCounter struct {
	store.Store
	loads, unchanged atomic.Int64
}

func (s *unchangedCounter) LoadTask(ctx context.Context, id string, p store.LoadParams) (*store.Loaded, error) {
	s.loads.Add(1)
	l, err := s.Store.LoadTask(ctx, id, p)
	if err == nil && l.Unchanged {
		s.unchanged.Add(1)
	}
	return l, err
}

// Unwrap is the wrapped store (where the engine finds its task locks).
func (s *unchangedCounter) Unwrap() store.Store { return s.Store }

// TestAnAnswerOnPostgresToItsNodesQuestionReadsNoRow: on PostgreSQL a node
// keeps the rows it wrote too, and its answer's read under the task lock
// asks only whether the task is still at the kept version: the answer to
// the question this node just asked reads no row. When another node wrote
// the task meanwhile (here it cancels it), the lock finds another version
// and reads the task, and the answer gets the task as it stands.
func TestAnAnswerOnPostgresToItsNodesQuestionReadsNoRow(t *testing.T) {
	url := dbtest.Schema(t)
	counter := &unchangedCounter{}
	env := apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: url, Config: func(c *askpoint.Config) {
		counter.Store = c.Store
		c.Store = counter
	}})
	other := apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: url})
	ctx := testCtx(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	asked := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
	loads, unchanged := counter.loads.Load(), counter.unchanged.Load()
	done := sendState(t, ctx, c, costCentreAnswer(t, asked), a2a.TaskStateCompleted)
	if n, u := counter.loads.Load()-loads, counter.unchanged.Load()-unchanged; n != 1 || u != 1 {
		t.Errorf("the answer to the question this node just asked: %d reads, %d of them unchanged; want 1, 1", n, u)
	}
	if len(done.Artifacts) != 1 || !strings.Contains(messageText(done.Status.Message), "CC-4410") {
		t.Errorf("the answered task: %d artifacts, message %q; want the filed expense charged to CC-4410", len(done.Artifacts), messageText(done.Status.Message))
	}

	pending := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
	oc := other.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	if _, err := oc.CancelTask(ctx, &a2a.CancelTaskRequest{ID: pending.ID}); err != nil {
		t.Fatalf("CancelTask on the other node = %v", err)
	}
	unchanged = counter.unchanged.Load()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: costCentreAnswer(t, pending)})
	if task, _ := res.(*a2a.Task); err != nil || task == nil || task.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("the answer to a task canceled on the other node = %v, %v; want the canceled task", res, err)
	}
	if u := counter.unchanged.Load() - unchanged; u != 0 {
		t.Errorf("the answer to a task another node changed was answered from the kept row %d times, want 0", u)
	}
}
