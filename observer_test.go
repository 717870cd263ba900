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
