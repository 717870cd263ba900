package apitest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Caller is what a test calls an agent through: an a2aclient.Client over
// a binding, or the agent's request handler itself (a2asrv.RequestHandler,
// for tests at the engine level).
type Caller interface {
	SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error)
	GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error)
	CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error)
}

// Send sends req on c and returns the Task it answers with; an answer of
// another kind is an error.
func Send(ctx context.Context, c Caller, req *a2a.SendMessageRequest) (*a2a.Task, error) {
	res, err := c.SendMessage(ctx, req)
	if err != nil {
		return nil, err
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("SendMessage returned %T, want a task", res)
	}
	return task, nil
}

// SendTask is Send that fails the test on an error; what names the request
// in failure messages.
func SendTask(t testing.TB, ctx context.Context, c Caller, req *a2a.SendMessageRequest, what string) *a2a.Task {
	t.Helper()
	task, err := Send(ctx, c, req)
	if err != nil {
		t.Fatalf("SendMessage(%s): %v", what, err)
	}
	return task
}

// WaitState reads the task with req every 10 ms until it is in state want,
// and returns it. When ctx ends first it fails the test with the last task
// it read, as describe tells it, or else the last error.
func WaitState(t testing.TB, ctx context.Context, c Caller, req *a2a.GetTaskRequest, want a2a.TaskState, describe func(*a2a.Task) string) *a2a.Task {
	t.Helper()
	var last *a2a.Task
	for {
		task, err := c.GetTask(ctx, req)
		if err == nil && task.Status.State == want {
			return task
		}
		if err == nil {
			last = task
		}
		select {
		case <-ctx.Done():
			if last != nil {
				t.Fatalf("task %s: state %v (%s), want %v before the deadline", req.ID, last.Status.State, describe(last), want)
			}
			t.Fatalf("task %s: want %v before the deadline (last error %v)", req.ID, want, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// GetTask reads a task with req and fails the test on an error.
func GetTask(t testing.TB, ctx context.Context, c Caller, req *a2a.GetTaskRequest) *a2a.Task {
	t.Helper()
	task, err := c.GetTask(ctx, req)
	if err != nil {
		t.Fatalf("GetTask(%s) error = %v", req.ID, err)
	}
	return task
}

// Text joins the text parts of m, one a line ("" for nil).
func Text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var out []string
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if s, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(s))
		}
	}
	return strings.Join(out, "\n")
}

// EachPush runs f as two subtests, "with push" (push true) and "without
// push", for tests whose servers run both ways.
func EachPush(t *testing.T, f func(t *testing.T, push bool)) {
	t.Helper()
	for _, push := range []bool{true, false} {
		name := "with push"
		if !push {
			name = "without push"
		}
		t.Run(name, func(t *testing.T) { f(t, push) })
	}
}
