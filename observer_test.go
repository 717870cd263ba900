package askpoint_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/store"
)

// panicky is an Observer of a library user's whose every engine-side
// method panics, as a metrics library does on a label it refuses.
type panicky struct{}

func (panicky) Transition(context.Context, askpoint.Transition) { panic("refused label") }
func (panicky) Event(context.Context, string, askpoint.Event)   { panic("refused label") }
func (panicky) StartStep(context.Context, askpoint.StepInfo) (context.Context, func(error)) {
	panic("refused label")
}
func (panicky) StartPush(context.Context, string) (context.Context, func(error)) {
	panic("refused label")
}
func (panicky) TraceParent(context.Context) string         { panic("refused label") }
func (panicky) OpenQuestions(map[string]int)               { panic("refused label") }
func (panicky) ObserveHTTP(next http.Handler) http.Handler { return next }
func (panicky) ObserveStore(s store.Store) store.Store     { return s }

// An observer that panics loses what it observed, never a task: the round
// trip completes, and the server logs each kind of panic once.
func TestAnObserverThatPanicsNeitherStopsAStepNorTheServer(t *testing.T) {
	var logs apitest.SyncBuffer
	srv := newServer(t, false, func(c *askpoint.Config) {
		c.Observer = panicky{}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	base := serve(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for range 2 {
		c, err := client.Dial(ctx, base+"/greeter", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Run(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
			client.WithResolvers(client.Facts(map[string]any{"name": "Ada"})))
		_ = c.Destroy()
		if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("Run with a panicking observer = %v, %v; want the task completed", res, err)
		}
	}
	if n := strings.Count(logs.String(), `method=Transition`); n != 1 {
		t.Errorf("the Transition panic was logged %d times over two round trips, want once:\n%s", n, logs.String())
	}
}

// stepsSeen is an Observer of a library user's that hears of every step
// and marks the context of every request it observes, whose traceparent
// it gives as traceparentOfMark.
type stepsSeen struct{ steps chan stepSeen }

type stepSeen struct {
	parent string
	// request: StepInfo.Request is set; marked: it is a request's context
	// this observer marked.
	request, marked bool
}

type requestMark struct{}

const traceparentOfMark = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func (*stepsSeen) Transition(context.Context, askpoint.Transition) {}
func (*stepsSeen) Event(context.Context, string, askpoint.Event)   {}
func (o *stepsSeen) StartStep(ctx context.Context, s askpoint.StepInfo) (context.Context, func(error)) {
	o.steps <- stepSeen{parent: s.Parent, request: s.Request != nil, marked: s.Request != nil && s.Request.Value(requestMark{}) != nil}
	return ctx, func(error) {}
}
func (*stepsSeen) StartPush(ctx context.Context, _ string) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (*stepsSeen) TraceParent(ctx context.Context) string {
	if ctx.Value(requestMark{}) != nil {
		return traceparentOfMark
	}
	return ""
}
func (*stepsSeen) OpenQuestions(map[string]int) {}
func (*stepsSeen) ObserveHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestMark{}, true)))
	})
}
func (*stepsSeen) ObserveStore(s store.Store) store.Store { return s }

// What an Observer is told of a step's origin (decision 0230): a step run
// within its request (a blocking call's quick step, asking and answering)
// gets that request's context in StepInfo.Request and no traceparent; a
// step a worker runs after its request replied (returnImmediately) gets
// the request's traceparent in StepInfo.Parent and no Request.
func TestAnObserverHearsWhereAStepRuns(t *testing.T) {
	obs := &stepsSeen{steps: make(chan stepSeen, 16)}
	srv := newServer(t, false, func(c *askpoint.Config) { c.Observer = obs })
	base := serve(t, srv)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, base+"/greeter", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	res, err := client.Run(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
		client.WithResolvers(client.Facts(map[string]any{"name": "Ada"})))
	if err != nil || res.Task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("Run = %v, %v; want the task completed", res, err)
	}
	for i, what := range []string{"the ask", "the answer"} {
		select {
		case s := <-obs.steps:
			if !s.request || !s.marked || s.parent != "" {
				t.Errorf("%s's quick step (%d) was told %+v, want its request's context and no traceparent", what, i+1, s)
			}
		default:
			t.Fatalf("%s's step was not told", what)
		}
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
		Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-obs.steps:
		if s.request || s.parent != traceparentOfMark {
			t.Errorf("a worker's step was told %+v, want the request's traceparent and no request", s)
		}
	case <-ctx.Done():
		t.Fatal("the worker's step was not told")
	}
}
