package servertest_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// BenchmarkExpiryLateness measures how late, on the real clock and the
// default poll interval (1s), the sweeper acts on a question's expiry: from
// the question's expires time to the timestamp of the status that fails the
// task. The loop sleeps until the earliest due timer (NextDue), so the
// lateness should be a few milliseconds, not a poll interval.
//
//	go test -run '^$' -bench ExpiryLateness -benchtime 20x .
func BenchmarkExpiryLateness(b *testing.B) {
	quick := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			q := question.Question{Text: "Quick?", Schema: json.RawMessage(`{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`),
				Expires: time.Now().Add(1500 * time.Millisecond)}
			return askpoint.Ask(q, struct{}{}), nil
		},
	}
	env := apitest.Start(b, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.PollInterval = time.Second },
		Agents: []askpoint.AgentSpec{{Name: "quick", Agent: quick, Card: a2a.AgentCard{Name: "Quick", Description: "Asks with a short expiry."}}}})
	c := env.Client(b, "quick", a2a.TransportProtocolJSONRPC)
	ctx := b.Context()
	var late []time.Duration
	for range b.N {
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("go")})
		if err != nil {
			b.Fatal(err)
		}
		task := res.(*a2a.Task)
		q, _, _ := question.FromMessage(task.Status.Message)
		for {
			got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
			if err != nil {
				b.Fatal(err)
			}
			if got.Status.State == a2a.TaskStateFailed {
				late = append(late, got.Status.Timestamp.Sub(q.Expires))
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)/2].Microseconds())/1000, "late-p50-ms")
	b.ReportMetric(float64(late[len(late)-1].Microseconds())/1000, "late-max-ms")
}
