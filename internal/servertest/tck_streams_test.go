package servertest_test

// Streams and contexts as the conformance suite checks them: several live
// subscribers to one task each get the same events in the same order, and
// one closing disturbs none of the others; a contextId the caller chooses
// for a new task is accepted and echoed.

import (
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/examples/conformance"
)

func TestTCKEverySubscriberGetsTheSameEventsInOrder(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		paused := sendState(t, on.ctx, on.c, conformanceMessage(tckID("tck-input-required"), "start"), a2a.TaskStateInputRequired)

		subs := make([]*stream, 3)
		for i := range subs {
			sub := on.env.Client(t, conformance.Name, on.tr)
			subs[i] = subscribeStream(t, on.ctx, sub, paused.ID)
			if snap := firstTask(t, on.ctx, subs[i]); snap.ID != paused.ID || snap.Status.State != a2a.TaskStateInputRequired {
				t.Fatalf("subscriber %d: snapshot %s %v, want %s in input-required", i, snap.ID, snap.Status.State, paused.ID)
			}
		}
		// One subscriber leaves before anything happens.
		subs[1].cancel()

		// The follow-up's own messageId decides: stream an artifact, complete.
		sendState(t, on.ctx, on.c, followUp(paused.ID, conformanceMessage(tckID("tck-stream-001"), "go on")), a2a.TaskStateCompleted)
		want := []string{evWorking, "artifact output", evCompleted}
		for _, i := range []int{0, 2} {
			if got := describeAll(subs[i].rest(t, on.ctx)); !slices.Equal(got, want) {
				t.Fatalf("subscriber %d got %q, want %q", i, got, want)
			}
		}
	})
}

func TestTCKClientChosenContextIDIsAcceptedAndEchoed(t *testing.T) {
	eachTCK(t, func(t *testing.T, on served) {
		m := conformanceMessage(tckID("tck-complete-task"), "blocking")
		m.ContextID = "ctx-" + tckID("client")
		task := sendState(t, on.ctx, on.c, m, a2a.TaskStateCompleted)
		if task.ContextID != m.ContextID || task.Status.Message.ContextID != m.ContextID {
			t.Errorf("task context %q, status message context %q; want the caller's %q", task.ContextID, task.Status.Message.ContextID, m.ContextID)
		}

		sm := conformanceMessage(tckID("tck-stream-001"), "streaming")
		sm.ContextID = "ctx-" + tckID("client")
		s := sendStream(t, on.ctx, on.c, sm)
		for _, ev := range s.rest(t, on.ctx) {
			if got := ev.TaskInfo().ContextID; got != sm.ContextID {
				t.Errorf("%s carries context %q, want the caller's %q", describe(ev), got, sm.ContextID)
			}
		}

		list, err := on.c.ListTasks(on.ctx, &a2a.ListTasksRequest{ContextID: m.ContextID})
		if err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID != task.ID {
			t.Errorf("ListTasks(contextId %q) = %v, %v; want task %s", m.ContextID, list, err, task.ID)
		}
	})
}
