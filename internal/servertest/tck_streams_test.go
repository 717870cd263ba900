package servertest_test

// Streams and contexts as the conformance suite checks them: several live
// subscribers to one task each get the same events in the same order, and
// one closing disturbs none of the others; a contextId the caller chooses
// for a new task is accepted and echoed.

import (
	"context"
	"iter"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/examples/conformance"
)

func TestTCKEverySubscriberGetsTheSameEventsInOrder(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		env := startTCK(t)
		c := env.Client(t, conformance.Name, tr)
		ctx := testCtx(t)
		paused := sendState(t, ctx, c, conformanceMessage(tckID("tck-input-required"), "start"), a2a.TaskStateInputRequired)

		subs := make([]*stream, 3)
		for i := range subs {
			sub := env.Client(t, conformance.Name, tr)
			subs[i] = openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
				return sub.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: paused.ID})
			})
			if snap := firstTask(t, ctx, subs[i]); snap.ID != paused.ID || snap.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("subscriber %d: snapshot %s %v, want %s in input-required", i, snap.ID, snap.Status.State, paused.ID)
			}
		}
		// One subscriber leaves before anything happens.
		subs[1].cancel()

		// The follow-up's own messageId decides: stream an artifact, complete.
		sendState(t, ctx, c, followUp(paused.ID, conformanceMessage(tckID("tck-stream-001"), "go on")), a2a.TaskStateCompleted)
		var seqs [][]string
		for _, i := range []int{0, 2} {
			var seq []string
			for {
				it, ok := subs[i].next(t, ctx)
				if !ok {
					break
				}
				if it.err != nil {
					t.Fatalf("subscriber %d: error %v", i, it.err)
				}
				seq = append(seq, describe(it.ev))
			}
			seqs = append(seqs, seq)
		}
		want := []string{"status TASK_STATE_WORKING", "artifact output", "status TASK_STATE_COMPLETED"}
		for n, seq := range seqs {
			if len(seq) != len(want) {
				t.Fatalf("subscriber %d got %q, want %q", n, seq, want)
			}
			for i := range want {
				if seq[i] != want[i] {
					t.Fatalf("subscriber %d got %q, want %q", n, seq, want)
				}
			}
		}
	})
}

func TestTCKClientChosenContextIDIsAcceptedAndEchoed(t *testing.T) {
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		env := startTCK(t)
		c := env.Client(t, conformance.Name, tr)
		ctx := testCtx(t)

		m := conformanceMessage(tckID("tck-complete-task"), "blocking")
		m.ContextID = "ctx-" + tckID("client")
		task := sendState(t, ctx, c, m, a2a.TaskStateCompleted)
		if task.ContextID != m.ContextID || task.Status.Message.ContextID != m.ContextID {
			t.Errorf("task context %q, status message context %q; want the caller's %q", task.ContextID, task.Status.Message.ContextID, m.ContextID)
		}

		sm := conformanceMessage(tckID("tck-stream-001"), "streaming")
		sm.ContextID = "ctx-" + tckID("client")
		s := openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
			return c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: sm})
		})
		for {
			it, ok := s.next(t, ctx)
			if !ok {
				break
			}
			if it.err != nil {
				t.Fatalf("stream error %v", it.err)
			}
			if got := it.ev.TaskInfo().ContextID; got != sm.ContextID {
				t.Errorf("%s carries context %q, want the caller's %q", describe(it.ev), got, sm.ContextID)
			}
		}

		list, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: m.ContextID})
		if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
			t.Errorf("ListTasks(contextId %q) = %v, %v; want task %s", m.ContextID, list, err, task.ID)
		}
	})
}
