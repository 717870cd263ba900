package servertest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/internal/engine"
)

// TestTimersAcrossNodesFireExactlyOnce runs three nodes on one PostgreSQL
// schema, one clock and one agent: every node sweeps, releases and
// delivers, yet each task gets each reminder once, each hold is released
// once, each expiry happens once and the webhook hears every notification
// exactly once, in order.
func TestTimersAcrossNodesFireExactlyOnce(t *testing.T) {
	url := dbtest.Schema(t)
	clock := newFakeClock()
	ta := &timed{now: clock.Now, released: &releases{}, answers: &int64s{}}
	var clients []*a2aclient.Client
	var servers []*engine.Engine
	for i := range 3 {
		env := apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: url,
			Config: func(c *askpoint.Config) {
				c.Now = clock.Now
				c.PollInterval = 10 * time.Millisecond
				c.AllowPrivateWebhooks = true
				c.NodeID = fmt.Sprint("node-", i)
			},
			Agents: []askpoint.AgentSpec{{Name: "timed", Agent: ta.agent(), Card: a2a.AgentCard{Name: "Timed", Description: "Asks with an expiry."}}},
		})
		clients = append(clients, env.Client(t, "timed", apitest.Transports[i%len(apitest.Transports)]))
		servers = append(servers, env.Engine)
	}
	hook := newHookReceiver(t)
	ctx := testCtx(t)
	const tasks = 9
	var ids []a2a.TaskID
	for i := range tasks {
		task := sendTask(t, ctx, clients[i%3], &a2a.SendMessageRequest{
			Message: userText("hold 10"),
			Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL()}},
		})
		ids = append(ids, task.ID)
	}
	perTask := func(id a2a.TaskID) []string {
		var mine []notification
		for _, n := range hook.all() {
			if n.TaskID == id {
				mine = append(mine, n)
			}
		}
		return states(mine)
	}
	step := func(to time.Duration, what string, want string) {
		t.Helper()
		clock.Advance(to)
		hook.waitFor(t, what, func([]notification) bool {
			for _, id := range ids {
				if strings.Join(perTask(id), ",") != want {
					return false
				}
			}
			return true
		})
	}
	step(0, "the questions", "input-required")
	clock.Advance(10 * time.Minute) // the holds' deadline
	eventually(t, "every hold released", func() bool { return len(ta.released.list()) == tasks })
	// And recorded: the clock jumps next, and a release the agent made but
	// the store has not recorded yet would look lapsed to another node.
	for _, srv := range servers {
		if err := srv.Idle(ctx); err != nil {
			t.Fatalf("Idle: %v", err)
		}
	}
	step(20*time.Minute, "the half-way reminders", "input-required,reminder")
	step(24*time.Minute, "the 90% reminders", "input-required,reminder,reminder")
	step(6*time.Minute, "the expiries", "input-required,reminder,reminder,failed")
	// Every node acted on what was due (and would have sent a duplicate).
	for _, srv := range servers {
		if err := srv.Idle(ctx); err != nil {
			t.Fatalf("Idle: %v", err)
		}
	}
	for _, id := range ids {
		if got := strings.Join(perTask(id), ","); got != "input-required,reminder,reminder,failed" {
			t.Errorf("task %s notifications = %s, want each exactly once", id, got)
		}
	}
	rel := ta.released.list()
	seen := map[string]bool{}
	for _, k := range rel {
		if seen[k] {
			t.Errorf("hold %s released twice", k)
		}
		seen[k] = true
	}
	if len(rel) != tasks {
		t.Errorf("releases = %d, want %d", len(rel), tasks)
	}
}
