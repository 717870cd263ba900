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
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
)

// BenchmarkCrossNodeResume measures, on PostgreSQL with two nodes in one
// process, how soon an answer accepted by node B shows on node A: the
// question is asked through A, a caller on A subscribes to the task, and
// the answer goes to B with returnImmediately. Per answer it reports
//
//	ack-to-run:     B's acknowledgement -> the agent's step running (on B,
//	                the node that accepted the answer and holds its lease)
//	ack-to-event-A: B's acknowledgement -> the completed event reaching
//	                the subscriber on A (LISTEN/NOTIFY wake-up, then a read
//	                of the log)
//
//	TEST_DATABASE_URL=... go test -run '^$' -bench CrossNodeResume -benchtime 300x .
func BenchmarkCrossNodeResume(b *testing.B) {
	url := dbtest.Schema(b)
	running := make(chan time.Time, 1)
	probe := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{Text: "Go?", Schema: json.RawMessage(`{"type":"object","required":["go"],"properties":{"go":{"type":"boolean"}}}`)}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, _ map[string]any) (askpoint.Outcome, error) {
			running <- time.Now()
			return askpoint.Complete(), nil
		},
	}
	spec := []askpoint.AgentSpec{{Name: "probe", Agent: probe, Card: a2a.AgentCard{Name: "Probe", Description: "Asks, then completes."}}}
	nodeA := apitest.Start(b, apitest.Options{Quiet: true, PostgresURL: url, Agents: spec})
	nodeB := apitest.Start(b, apitest.Options{Quiet: true, PostgresURL: url, Agents: spec})
	a := nodeA.Client(b, "probe", a2a.TransportProtocolJSONRPC)
	bc := nodeB.Client(b, "probe", a2a.TransportProtocolJSONRPC)
	ctx := b.Context()

	var toRun, toEvent []time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		res, err := a.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("go")})
		if err != nil {
			b.Fatal(err)
		}
		task := res.(*a2a.Task)
		events := make(chan time.Time, 1)
		subscribed := make(chan struct{})
		go func() {
			first := true
			for ev, err := range a.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
				if err != nil {
					close(events)
					return
				}
				if first {
					close(subscribed)
					first = false
				}
				if su, ok := ev.(*a2a.TaskStatusUpdateEvent); ok && su.Status.State == a2a.TaskStateCompleted {
					events <- time.Now()
					return
				}
			}
		}()
		<-subscribed
		b.StartTimer()
		m := followUp(task.ID, userData(map[string]any{"go": true}))
		if _, err := bc.SendMessage(ctx, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
			b.Fatal(err)
		}
		acked := time.Now()
		ran := <-running
		seen, ok := <-events
		if !ok {
			b.Fatal("subscription on node A ended without the completed event")
		}
		b.StopTimer()
		toRun = append(toRun, max(ran.Sub(acked), 0))
		toEvent = append(toEvent, seen.Sub(acked))
	}
	report := func(name string, ds []time.Duration) {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
	report("ack-to-run", toRun)
	report("ack-to-event-A", toEvent)
}
