package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
)

// noteRecord is a Record that remembers what it was told.
type noteRecord struct {
	mu       sync.Mutex
	answered []string
	closed   []string
}

func (r *noteRecord) Answered(_ context.Context, by string, answer json.RawMessage) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered = append(r.answered, by+" "+string(answer))
	return nil
}

func (r *noteRecord) Closed(_ context.Context, note string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = append(r.closed, note)
	return nil
}

// pausedScript runs request on the script agent until its question is
// deferred, and returns it as a Paused with a noteRecord.
func pausedScript(t *testing.T, env *apitest.Env, request string) (*client.Paused, *noteRecord) {
	t.Helper()
	url := env.AgentURL("script")
	deferred := fmt.Errorf("%w: later", client.ErrDeferred)
	res, err := client.Run(ctx(t), dial(t, url, nil), textMessage(request), client.WithAgentURL(url),
		client.WithResolvers(client.ResolverFunc(func(context.Context, *client.Query) (*client.Answer, error) { return nil, deferred })))
	if !errors.Is(err, client.ErrDeferred) || res.Waiting == nil {
		t.Fatalf("Run = %v (waiting %v); want the question deferred", err, res.Waiting)
	}
	rec := &noteRecord{}
	return &client.Paused{Query: res.Waiting, Key: client.QuestionKey(res.Task.Status.Message), Record: rec}, rec
}

// TestDeliverReturnsOnceTheAgentTookTheAnswer: Deliver comes back while
// the agent is still working on the answer (its run waits on a gate that
// is opened only afterwards), with the task as acknowledged and the
// record marked answered; the task then completes with that answer.
func TestDeliverReturnsOnceTheAgentTookTheAnswer(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	key := apitest.UniqueKey(t)
	t.Cleanup(func() { apitest.Release(key) })
	p, rec := pausedScript(t, env, "ask-block "+key)

	res, err := client.Deliver(ctx(t), p, client.Answer{Fields: map[string]any{"name": "Ada"}, Person: "alice"})
	if err != nil {
		t.Fatalf("Deliver = %v", err)
	}
	if st := res.State(); st != a2a.TaskStateWorking && st != a2a.TaskStateSubmitted {
		t.Fatalf("Deliver's task is %s; want it acknowledged and not yet done (the agent waits on its gate)", st)
	}
	if len(res.Answers) != 1 || res.Answers[0].MessageID == "" {
		t.Errorf("Deliver's answers %+v; want the one sent", res.Answers)
	}
	rec.mu.Lock()
	answered, closed := rec.answered, rec.closed
	rec.mu.Unlock()
	if len(answered) != 1 || answered[0] != `person (alice) {"name":"Ada"}` || len(closed) != 0 {
		t.Errorf("record answered %q, closed %q; want answered once by person (alice)", answered, closed)
	}

	apitest.Release(key)
	done, err := client.Follow(ctx(t), dial(t, env.AgentURL("script"), nil), res.Task.ID)
	if err != nil || done.State() != a2a.TaskStateCompleted {
		t.Fatalf("Follow = %v, %v; want the task completed", done, err)
	}
	if got := artifactText(done, "result"); got != "hello Ada" {
		t.Errorf("result %q, want hello Ada", got)
	}
}

// TestDeliverChecksAsContinueDoes: an answer that does not fit the
// question is refused before anything is sent, and a question the task
// no longer asks closes the record with ErrStale.
func TestDeliverChecksAsContinueDoes(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	p, rec := pausedScript(t, env, "ask")

	_, err := client.Deliver(ctx(t), p, client.Answer{Fields: map[string]any{"name": 7}})
	var invalid *client.InvalidAnswerError
	if !errors.As(err, &invalid) || len(invalid.Errors) == 0 {
		t.Fatalf("Deliver of a number for a string = %v; want an InvalidAnswerError", err)
	}
	task, err := dial(t, env.AgentURL("script"), nil).GetTask(ctx(t), &a2a.GetTaskRequest{ID: p.Query.TaskID})
	if err != nil || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task after a refused Deliver: %v, %v; want it still asking", task, err)
	}

	if _, err := client.Continue(ctx(t), p, client.Answer{Fields: map[string]any{"name": "Ada"}}); err != nil {
		t.Fatalf("Continue = %v", err)
	}
	if _, err := client.Deliver(ctx(t), p, client.Answer{Fields: map[string]any{"name": "Bob"}}); !errors.Is(err, client.ErrStale) {
		t.Errorf("Deliver of an answered question = %v; want ErrStale", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.answered) != 1 || len(rec.closed) != 1 {
		t.Errorf("record answered %q, closed %q; want answered by Continue, then closed by the stale Deliver", rec.answered, rec.closed)
	}
}
