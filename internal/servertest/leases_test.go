package servertest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

// Leases and step backoff at the engine level, in a synctest bubble (see
// bubble_test.go): leases of tens of seconds and backoffs of seconds run
// in no time, and the times the bubble's clock reads are exact.

// tries is an agent whose first step runs step, once per try, and records
// when each try began and under which key.
type tries struct {
	step func(ctx context.Context, n int) (askpoint.Outcome, error) // n counts from 1

	mu   sync.Mutex
	at   []time.Time
	keys []string
}

func (a *tries) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	a.mu.Lock()
	a.at = append(a.at, time.Now())
	a.keys = append(a.keys, call.Key)
	n := len(a.at)
	a.mu.Unlock()
	return a.step(ctx, n)
}

func (a *tries) Resume(context.Context, *askpoint.Call, *askpoint.Resumption) (askpoint.Outcome, error) {
	return askpoint.Fail("nothing to resume"), nil
}

func (a *tries) snapshot() ([]time.Time, []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.at...), append([]string(nil), a.keys...)
}

func triesSpec(a *tries) askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "tries", Agent: a, Card: a2a.AgentCard{Name: "Tries", Description: "Counts its tries."}}
}

// sendAsyncTo sends m with returnImmediately and requires a Task back.
func sendAsyncTo(t *testing.T, ctx context.Context, c apitest.Caller, m *a2a.Message) *a2a.Task {
	t.Helper()
	return sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
}

// TestALongStepKeepsItsLeaseAndRunsOnce: a step that runs five leases long
// keeps its task. The heartbeat renews the lease while the step runs, so
// the poller, which claims every runnable task whose lease lapsed (this
// node's too), never takes it over: the step runs once.
func TestALongStepKeepsItsLeaseAndRunsOnce(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		const lease = 30 * time.Second
		agent := &tries{step: func(ctx context.Context, _ int) (askpoint.Outcome, error) {
			select {
			case <-time.After(5 * lease):
				return askpoint.Complete(), nil
			case <-ctx.Done():
				return askpoint.Outcome{}, ctx.Err()
			}
		}}
		b := startBubble(t, func(c *askpoint.Config) { c.LeaseDuration, c.PollInterval = lease, time.Second }, triesSpec(agent))
		c := b.handler(t, "tries")
		ctx := t.Context()
		task := sendAsyncTo(t, ctx, c, userText("work"))

		time.Sleep(2 * lease)
		synctest.Wait()
		row, err := b.st.GetTask(ctx, string(task.ID))
		if err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); !row.LeaseUntil.After(now) {
			t.Fatalf("two leases into the step: the lease ends %v, at or before now (%v); want it renewed", row.LeaseUntil, now)
		}
		time.Sleep(3*lease + time.Second)
		synctest.Wait()
		if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("after the step: state %v (%s), want completed", got.Status.State, statusText(got))
		}
		if at, _ := agent.snapshot(); len(at) != 1 {
			t.Fatalf("the step ran %d times, want once (its lease was taken over)", len(at))
		}
	})
}

// TestAStepRetryRunsOnceItsBackoffHasPassed: a step that fails is tried
// again under the same key once its backoff has passed, and not before.
// No goroutine waits for the retry: the task's lease is set to the
// retry's due time with no owner, and the poller claims it at its first
// round past that time.
func TestAStepRetryRunsOnceItsBackoffHasPassed(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		const poll, retryMin = time.Second, 10 * time.Second
		agent := &tries{step: func(_ context.Context, n int) (askpoint.Outcome, error) {
			if n <= 2 {
				return askpoint.Outcome{}, errors.New("ledger: connection reset by peer")
			}
			return askpoint.Complete(), nil
		}}
		b := startBubble(t, func(c *askpoint.Config) {
			c.PollInterval, c.StepRetryMin, c.StepRetryMax = poll, retryMin, time.Hour
		}, triesSpec(agent))
		c := b.handler(t, "tries")
		ctx := t.Context()
		task := sendAsyncTo(t, ctx, c, userText("file it"))

		time.Sleep(time.Minute)
		synctest.Wait()
		if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("a minute on: state %v (%s), want completed after two retries", got.Status.State, statusText(got))
		}
		at, keys := agent.snapshot()
		if len(at) != 3 || keys[0] != keys[1] || keys[1] != keys[2] {
			t.Fatalf("tries under keys %q, want 3 under one key", keys)
		}
		// Retry n waits a random point in the upper half of retryMin
		// doubled n-1 times, and then up to a poll interval for the claim.
		for i, backoff := range []time.Duration{retryMin, 2 * retryMin} {
			if gap := at[i+1].Sub(at[i]); gap < backoff/2 || gap > backoff+poll {
				t.Errorf("retry %d came %v after the try before it, want %v to %v (its backoff, then a poll)", i+1, gap, backoff/2, backoff+poll)
			}
		}
	})
}

// TestAStepCutShortByStopIsTakenOverAtOnceAtTheNextStart: a node that
// stops while a step runs cuts the step short and gives its lease up, so
// that the next node to start on the store (here, the same one started
// again) runs the step at once, under the same key, instead of after the
// lease would have lapsed.
func TestAStepCutShortByStopIsTakenOverAtOnceAtTheNextStart(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		const lease = time.Minute
		agent := &tries{step: func(ctx context.Context, n int) (askpoint.Outcome, error) {
			if n == 1 {
				<-ctx.Done() // runs until its node stops
				return askpoint.Outcome{}, ctx.Err()
			}
			return askpoint.Complete(), nil
		}}
		adjust := func(c *askpoint.Config) { c.LeaseDuration, c.PollInterval = lease, time.Second }
		first := startBubble(t, adjust, triesSpec(agent))
		ctx := t.Context()
		task := sendAsyncTo(t, ctx, first.handler(t, "tries"), userText("work"))
		synctest.Wait() // the step runs
		first.stop(t)
		stopped := time.Now()

		again := startBubbleOn(t, first.path, adjust, triesSpec(agent))
		synctest.Wait()
		if got := getTask(t, ctx, again.handler(t, "tries"), task.ID); got.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("right after the next start: state %v (%s), want completed by the step run again", got.Status.State, statusText(got))
		}
		at, keys := agent.snapshot()
		if len(at) != 2 || keys[0] != keys[1] {
			t.Fatalf("tries under keys %q, want 2 under one key", keys)
		}
		if wait := at[1].Sub(stopped); wait >= lease {
			t.Fatalf("the step ran again %v after the stop, want at once (before its %v lease lapsed)", wait, lease)
		}
	})
}
