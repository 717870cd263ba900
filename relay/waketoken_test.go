package relay_test

// The relay's wake token is the secret that resumes its task: whoever holds
// it can push the task along. The sub-agent is given it (its push
// configuration's token) and the relay's server checks it; the relay's
// database must keep only its digest (issue 23, finding 7).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
)

// wantNotStored fails unless env's database holds token nowhere.
func wantNotStored(t *testing.T, env *apitest.Env, what, token string) {
	t.Helper()
	if bytes.Contains(env.StoredBytes(t), []byte(token)) {
		t.Fatalf("the relay's database holds %s %q in clear", what, token)
	}
}

// TestTheRelaysWakeTokenIsStoredNowhereAndStillWakesAfterARestart: the
// relay's task, paused on the sub-agent's question, keeps no wake token in
// its database (the SQLite file and its WAL, or every PostgreSQL table); a
// restarted server (another process, as another node would) knows the token
// the sub-agent was given, and the sub-agent's notification with it resumes
// the task.
func TestTheRelaysWakeTokenIsStoredNowhereAndStillWakesAfterARestart(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			pg := ""
			if db == "postgres" {
				pg = dbtest.Schema(t)
			}
			w := startWorldOn(t, pg, nil, nil, nil)
			ctx := testCtx(t)
			bob, subC, task, sub := w.receiptWaiting(t, ctx)
			subQ := questionOf(t, sub)
			token := w.sub.WakePush(t, ctx, sub.ID).Token
			wantNotStored(t, w.top, "the wake token", token)

			w.restartTop(t, []askpoint.AgentSpec{assistantSpec(t, "http://"+w.topAddr, w.sub.URL+"/expenses")})
			bob = w.bob(t)
			// Answered at the sub-agent, not through the relay: only its
			// notification, with the token it was given, can wake the relay.
			sendState(t, ctx, subC, answer(sub.ID, subQ.ID, map[string]any{"costCentre": "CC-4410"}), a2a.TaskStateCompleted)
			waitState(t, ctx, bob, task.ID, a2a.TaskStateCompleted)
			w.ledger.wantOneFiling(t, "CC-4410")
		})
	}
}

// failFirstStart runs the relay's Start and then fails the first time, as a
// step that crashed after its side effects would: the engine runs it again
// with the same key.
type failFirstStart struct {
	askpoint.Agent
	failed atomic.Bool
}

func (f *failFirstStart) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	o, err := f.Agent.Start(ctx, call)
	if f.failed.CompareAndSwap(false, true) {
		return askpoint.Outcome{}, errors.New("the step died after sending to the sub-agent")
	}
	return o, err
}

func (f *failFirstStart) Release(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
	return f.Agent.(askpoint.Releaser).Release(ctx, call, h)
}

func (f *failFirstStart) Wakes(cp, ev json.RawMessage) bool {
	return f.Agent.(askpoint.Waker).Wakes(cp, ev)
}

// TestARerunOfTheRelaysFirstStepWaitsOnTheTokenTheSubAgentWasGiven: the
// first run of the relay's first step sends the request, with its push
// configuration, and dies; the rerun finds the sub-task and sends nothing,
// so the token the sub-agent holds is the first run's. The rerun must wait
// on that same token, or the sub-agent's notification is refused as for an
// unknown task.
func TestARerunOfTheRelaysFirstStepWaitsOnTheTokenTheSubAgentWasGiven(t *testing.T) {
	w := startWorld(t, nil, func(c *askpoint.Config) { c.StepRetryMin, c.StepRetryMax = 10*time.Millisecond, 20*time.Millisecond },
		func(topBase, subBase string) []askpoint.AgentSpec {
			spec := assistantSpec(t, topBase, subBase+"/expenses")
			spec.Agent = &failFirstStart{Agent: spec.Agent}
			return []askpoint.AgentSpec{spec}
		})
	ctx := testCtx(t)
	bob, subC, task, sub := w.receiptWaiting(t, ctx)
	subQ := questionOf(t, sub)
	sendState(t, ctx, subC, answer(sub.ID, subQ.ID, map[string]any{"costCentre": "CC-4420"}), a2a.TaskStateCompleted)
	waitState(t, ctx, bob, task.ID, a2a.TaskStateCompleted)
	w.ledger.wantOneFiling(t, "CC-4420")
}

// TestAnOlderRelayCheckpointWithItsTokenInClearStillWakes: a task paused
// by an older version, whose checkpoint kept its own wake token in clear
// (and whose sub-agent was given that token), is woken by it; the relay then
// moves the sub-agent onto the task's derived token and forgets the old
// one, and the next notification, with the new token, wakes it again.
func TestAnOlderRelayCheckpointWithItsTokenInClearStillWakes(t *testing.T) {
	w := startWorld(t, nil, nil, nil)
	ctx := testCtx(t)
	bob, subC, task, sub := w.receiptWaiting(t, ctx)
	topQ, subQ := questionOf(t, task), questionOf(t, sub)
	pushSettled(t, w.sub, sub.ID)

	// Make it what an older version wrote: the token in the checkpoint,
	// its digest in the pause, the sub-agent's configuration carrying it.
	const old = "older-relay-wake-token-0123456789abcdef"
	derived := w.sub.WakePush(t, ctx, sub.ID).Token
	row := storedTask(t, ctx, w.top, task.ID)
	row.Checkpoint = withField(t, row.Checkpoint, "token", old)
	sum := sha256.Sum256([]byte(old))
	row.Pause = withField(t, row.Pause, "wakeDigest", hex.EncodeToString(sum[:]))
	if _, err := w.top.Store.UpdateTask(ctx, row, nil); err != nil {
		t.Fatal(err)
	}
	pc := w.sub.WakePush(t, ctx, sub.ID)
	pc.Token = old
	w.sub.SetPushConfig(t, ctx, sub.ID, pc)

	// The derived token no longer wakes it; the old one does.
	event := apitest.WorkingEvent(t, sub.ID)
	if code := apitest.PostNotification(t, ctx, pc.URL, derived, event); code != http.StatusNotFound {
		t.Fatalf("a wake with the derived token of a task paused on an older token: HTTP %d, want 404", code)
	}
	if code := apitest.PostNotification(t, ctx, pc.URL, old, event); code != http.StatusNoContent {
		t.Fatalf("a wake with the older checkpoint's token: HTTP %d, want 204", code)
	}
	eventually(t, "the relay to look at the sub-task and pause again on its own token", func() bool {
		got, err := w.top.Store.GetTask(ctx, string(task.ID))
		return err == nil && got.State == a2a.TaskStateInputRequired && got.Version > row.Version+1
	})
	if again := questionOf(t, getTask(t, ctx, bob, task.ID)); again.ID != topQ.ID {
		t.Fatalf("after the wake bob's question is %s, want the same %s", again.ID, topQ.ID)
	}
	// The file still has the row this test wrote in older pages; the
	// task as it stands must not.
	now := storedTask(t, ctx, w.top, task.ID)
	if raw, _ := json.Marshal(now); bytes.Contains(raw, []byte(old)) {
		t.Fatalf("after the wake the relay's task still keeps the older checkpoint's token in clear: checkpoint %s", now.Checkpoint)
	}
	if got := w.sub.WakePush(t, ctx, sub.ID).Token; got != derived {
		t.Fatalf("the sub-agent's push token after the wake = %q, want the task's derived token %q", got, derived)
	}
	sendState(t, ctx, subC, answer(sub.ID, subQ.ID, map[string]any{"costCentre": "CC-4410"}), a2a.TaskStateCompleted)
	waitState(t, ctx, bob, task.ID, a2a.TaskStateCompleted)
	w.ledger.wantOneFiling(t, "CC-4410")
}

// withField is the JSON object raw with key set to v.
func withField(t *testing.T, raw json.RawMessage, key string, v any) json.RawMessage {
	t.Helper()
	obj := map[string]any{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	obj[key] = v
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
