package apitest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/askpoint/askpoint/store"
)

// Settle waits until the servers of envs have nothing left to do, for
// themselves or for one another, so that a test may then check that
// something did not happen. It repeats passes over all of them: each
// server is Idle in turn (its timer loops have gone round, no step runs,
// no push delivery is under way), then their stores are read. It ends at
// the second pass in a row that finds no task owed a run, no push
// notification owed a delivery and nothing changed since the pass before:
// work one server hands another (a message sent down, a notification sent
// up, a delivery to retry after a failure) shows in one of the stores until
// it is done, and keeps the passes going. It fails the test when ctx ends
// first, saying what was still owed.
func Settle(t testing.TB, ctx context.Context, envs ...*Env) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var last []stateMark
	clean := 0
	for {
		for _, e := range envs {
			if err := e.Engine.Idle(ctx); err != nil {
				t.Fatalf("Settle: %s is not idle: %v (last seen owed: %s)", e.URL, err, describeOwed(last))
			}
		}
		marks := make([]stateMark, len(envs))
		for i, e := range envs {
			m, err := markOf(ctx, e.Store)
			if err != nil {
				t.Fatalf("Settle: read the store of %s: %v", e.URL, err)
			}
			marks[i] = m
		}
		still := last != nil
		for i, m := range marks {
			still = still && len(m.owed) == 0 && m.sum == last[i].sum
		}
		if still {
			clean++
		} else {
			clean = 0
		}
		if clean == 2 {
			return
		}
		last = marks
		if describeOwed(marks) != "" {
			// A retry not due yet: look again shortly.
			select {
			case <-tick.C:
			case <-ctx.Done():
				t.Fatalf("Settle: still owed when the test's time ran out: %s", describeOwed(marks))
			}
		}
	}
}

// stateMark is what one pass of Settle saw in one store: the work owed,
// and a sum that moves whenever a task or a push configuration is written.
type stateMark struct {
	owed []string
	sum  int64
}

func describeOwed(marks []stateMark) string {
	s := ""
	for _, m := range marks {
		for _, o := range m.owed {
			if s != "" {
				s += "; "
			}
			s += o
		}
	}
	return s
}

// markOf reads every task of st (across tenants and owners) and its push
// configurations.
func markOf(ctx context.Context, st store.Store) (stateMark, error) {
	var ids []string
	seen := map[string]bool{}
	var m stateMark
	err := st.ScanLogs(ctx, nil, func(taskID, _ string, _ store.LogEntry) error {
		m.sum++
		if !seen[taskID] {
			seen[taskID] = true
			ids = append(ids, taskID)
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	for _, id := range ids {
		task, err := st.GetTask(ctx, id)
		if err != nil {
			return m, fmt.Errorf("task %s: %w", id, err)
		}
		m.sum += task.Version
		if task.Runnable {
			m.owed = append(m.owed, fmt.Sprintf("task %s (%s, %s) is owed a run", id, task.Agent, task.State))
		}
		cfgs, err := st.ListPushConfigs(ctx, id)
		if err != nil {
			return m, fmt.Errorf("push configurations of task %s: %w", id, err)
		}
		for _, c := range cfgs {
			m.sum += c.Version
			if c.SentSeq < c.TargetSeq {
				m.owed = append(m.owed, fmt.Sprintf("push configuration %s of task %s owes entries %d..%d (%d failed attempts)", c.ID, id, c.SentSeq+1, c.TargetSeq, c.Attempts))
			}
		}
	}
	return m, nil
}
