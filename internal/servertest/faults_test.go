package servertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// flakyAgent asks one question; its answer's step files an effect that
// fails transiently (failFirst times) before it succeeds. Effects are
// keyed by call.Key, as an agent's side effects must be.
type flakyAgent struct {
	failFirst int   // answer steps that fail before one succeeds
	startErr  error // when set, every start fails with it

	mu      sync.Mutex
	tries   map[string]int // step tries per key
	effects map[string]int // effects done per key
	keys    []string       // the key of every answer try, in order
}

// startTries counts the tries of first steps (keys ending in /start:
// the engine keys a first step by its request, not its task ID).
func startTries(tries map[string]int) int {
	n := 0
	for k, v := range tries {
		if strings.HasSuffix(k, "/start") {
			n += v
		}
	}
	return n
}

func newFlaky(failFirst int, startErr error) *flakyAgent {
	return &flakyAgent{failFirst: failFirst, startErr: startErr, tries: map[string]int{}, effects: map[string]int{}}
}

func (a *flakyAgent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	if a.startErr != nil {
		a.mu.Lock()
		a.tries[call.Key]++
		a.mu.Unlock()
		return askpoint.Outcome{}, a.startErr
	}
	return askpoint.Ask(question.Question{Text: "File it?",
		Schema: json.RawMessage(`{"type":"object","required":["file"],"properties":{"file":{"type":"boolean"}}}`)}, struct{}{}), nil
}

func (a *flakyAgent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tries[call.Key]++
	a.keys = append(a.keys, call.Key)
	if a.tries[call.Key] <= a.failFirst {
		return askpoint.Outcome{}, fmt.Errorf("ledger: write expense: connection reset by peer (try %d)", a.tries[call.Key])
	}
	a.effects[call.Key]++
	return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("filed")}}), nil
}

func (a *flakyAgent) snapshot() (tries, effects map[string]int, keys []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	tries, effects = map[string]int{}, map[string]int{}
	for k, v := range a.tries {
		tries[k] = v
	}
	for k, v := range a.effects {
		effects[k] = v
	}
	return tries, effects, append([]string(nil), a.keys...)
}

// retryStores runs f on SQLite and on PostgreSQL (TEST_DATABASE_URL).
func retryStores(t *testing.T, f func(t *testing.T, pgURL string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "") })
	t.Run("postgres", func(t *testing.T) { f(t, dbtest.Schema(t)) })
}

func retryEnv(t *testing.T, pgURL string, agent askpoint.Agent, retries int) *apitest.Env {
	return apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: pgURL,
		Config: func(c *askpoint.Config) {
			c.PollInterval = 20 * time.Millisecond
			c.StepRetryMin, c.StepRetryMax = 20*time.Millisecond, 80*time.Millisecond
			c.StepRetries = retries
		},
		Agents: []askpoint.AgentSpec{{Name: "flaky", Agent: agent, Card: a2a.AgentCard{Name: "Flaky", Description: "fails before it files"}}}})
}

// statusTexts are the texts of every status message in the task's log.
func statusTexts(t *testing.T, st store.Store, id a2a.TaskID) []string {
	t.Helper()
	entries, err := st.ReadLog(context.Background(), string(id), 0, 1000)
	if err != nil {
		t.Fatalf("ReadLog(%s) = %v", id, err)
	}
	var out []string
	for _, e := range entries {
		if e.Kind != store.KindStatus {
			continue
		}
		var ev a2a.TaskStatusUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			t.Fatalf("decode a status entry: %v", err)
		}
		if ev.Status.Message != nil {
			out = append(out, messageText(ev.Status.Message))
		}
	}
	return out
}

// TestStepTransientErrorsAreRetriedWithTheSameKey: an answer's step that
// fails twice with an error and then succeeds completes the task, with
// the effect done once, every try under the same key, and the task's
// status saying it is being retried. On SQLite the answer's step runs
// before its message is written (a quick step): the message is kept.
func TestStepTransientErrorsAreRetriedWithTheSameKey(t *testing.T) {
	retryStores(t, func(t *testing.T, pgURL string) {
		agent := newFlaky(2, nil)
		env := retryEnv(t, pgURL, agent, 0)
		c := env.Client(t, "flaky", a2a.TransportProtocolJSONRPC)
		ctx := testCtx(t)
		asked := send(t, ctx, c, userText("taxi, 42 euros"))
		if asked.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("start: state %s, want input-required", asked.Status.State)
		}
		q, ok, err := question.FromMessage(asked.Status.Message)
		if err != nil || !ok {
			t.Fatalf("the question does not parse: %v", err)
		}
		done := send(t, ctx, c, followUp(asked.ID, userData(map[string]any{"questionId": q.ID, "file": true})))
		if done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("answer: state %s (%s), want completed after the retries", done.Status.State, messageText(done.Status.Message))
		}
		tries, effects, keys := agent.snapshot()
		if len(keys) != 3 {
			t.Fatalf("answer step tried %d times (%v), want 3", len(keys), keys)
		}
		for _, k := range keys {
			if k != keys[0] {
				t.Fatalf("keys across tries = %v, want one key", keys)
			}
		}
		if tries[keys[0]] != 3 || effects[keys[0]] != 1 || len(effects) != 1 {
			t.Fatalf("tries %v, effects %v: want 3 tries and the effect once", tries, effects)
		}
		texts := statusTexts(t, env.Store, asked.ID)
		retrying := 0
		for _, s := range texts {
			if strings.Contains(s, "retrying in") && strings.Contains(s, "resume with the answer") {
				retrying++
			}
			if strings.Contains(s, "connection reset") {
				t.Fatalf("a status message carries the step's error text: %q", s)
			}
		}
		if retrying != 2 {
			t.Fatalf("status messages %q: want 2 saying the step is retried", texts)
		}
		full, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: asked.ID})
		if err != nil {
			t.Fatal(err)
		}
		// The answer's message was kept (also when its step ran before it
		// was written), and the retry notes follow it, as progress does.
		if len(full.History) != 5 || full.History[2].Role != a2a.MessageRoleUser || !strings.Contains(messageText(full.History[3]), "retrying") {
			t.Fatalf("history holds %d messages, want request, question, answer and 2 retry notes", len(full.History))
		}
		if got := env.Engine.StepRetries(); got != 2 {
			t.Fatalf("StepRetries() = %d, want 2", got)
		}

		// A caller streaming the answer hears that the step is retried.
		asked2 := send(t, ctx, c, userText("train, 60 euros"))
		q2, _, _ := question.FromMessage(asked2.Status.Message)
		var notes []string
		final := a2a.TaskStateUnspecified
		for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: followUp(asked2.ID, userData(map[string]any{"questionId": q2.ID, "file": true}))}) {
			if err != nil {
				t.Fatalf("stream the answer: %v", err)
			}
			switch e := ev.(type) {
			case *a2a.TaskStatusUpdateEvent:
				final = e.Status.State
				if e.Status.Message != nil && strings.Contains(messageText(e.Status.Message), "retrying in") {
					notes = append(notes, messageText(e.Status.Message))
				}
			case *a2a.Task:
				final = e.Status.State
			}
		}
		if final != a2a.TaskStateCompleted || len(notes) != 2 {
			t.Fatalf("streamed answer: final state %s, retry notes %q; want completed after 2 notes", final, notes)
		}
	})
}

// TestStepPermanentErrorFailsAtOnce: an error marked permanent fails the
// task on its first try, with a reason that names the step and the try and
// none of the error's text.
func TestStepPermanentErrorFailsAtOnce(t *testing.T) {
	retryStores(t, func(t *testing.T, pgURL string) {
		agent := newFlaky(0, askpoint.Permanent(errors.New("ledger: ERROR: duplicate key (SQLSTATE 23505) secret-row-42")))
		env := retryEnv(t, pgURL, agent, 0)
		c := env.Client(t, "flaky", a2a.TransportProtocolHTTPJSON)
		task := send(t, testCtx(t), c, userText("taxi"))
		if task.Status.State != a2a.TaskStateFailed {
			t.Fatalf("state %s, want failed at once", task.Status.State)
		}
		reason := messageText(task.Status.Message)
		for _, want := range []string{"start", "permanent", "attempt 1"} {
			if !strings.Contains(reason, want) {
				t.Fatalf("reason %q does not name %q", reason, want)
			}
		}
		for _, leak := range []string{"SQLSTATE", "secret", "ledger"} {
			if strings.Contains(reason, leak) {
				t.Fatalf("reason %q carries the error's text %q", reason, leak)
			}
		}
		if tries, _, _ := agent.snapshot(); len(tries) != 1 || startTries(tries) != 1 {
			t.Fatalf("tries = %v, want one try of the start", tries)
		}
	})
}

// TestStepRetriesSpentFailTheTask: a step that keeps failing is tried
// StepRetries+1 times and then fails the task, saying how often.
func TestStepRetriesSpentFailTheTask(t *testing.T) {
	retryStores(t, func(t *testing.T, pgURL string) {
		agent := newFlaky(0, errors.New("ledger: dial tcp 10.0.0.7:5432: i/o timeout"))
		env := retryEnv(t, pgURL, agent, 2)
		c := env.Client(t, "flaky", a2a.TransportProtocolJSONRPC)
		task := send(t, testCtx(t), c, userText("taxi"))
		if task.Status.State != a2a.TaskStateFailed {
			t.Fatalf("state %s, want failed once the retries are spent", task.Status.State)
		}
		reason := messageText(task.Status.Message)
		if !strings.Contains(reason, "start") || !strings.Contains(reason, "3 times") || strings.Contains(reason, "dial tcp") {
			t.Fatalf("reason %q: want the step and its 3 tries, without the error's text", reason)
		}
		if tries, _, _ := agent.snapshot(); startTries(tries) != 3 {
			t.Fatalf("tries = %v, want 3 of the start", tries)
		}
	})
}

// TestReleaseErrorsAreRetriedWithBackoff: a hold's release that fails
// twice is tried again (on the step backoff, under the same key) and the
// third try releases it; a release whose error is permanent is tried once.
func TestReleaseErrorsAreRetriedWithBackoff(t *testing.T) {
	var mu sync.Mutex
	keys := map[string][]string{} // hold name -> the key of every try
	var at []time.Time            // when the flaky hold's release was tried
	agent := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{Text: "Keep the seats?",
				Schema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`)}, struct{}{}).
				Hold(askpoint.Hold{Name: "flaky", Until: time.Now().Add(time.Hour)}).
				Hold(askpoint.Hold{Name: "broken", Until: time.Now().Add(time.Hour)}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, _ map[string]any) (askpoint.Outcome, error) {
			return askpoint.Complete(), nil
		},
		OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
			mu.Lock()
			defer mu.Unlock()
			keys[h.Name] = append(keys[h.Name], call.Key)
			if h.Name == "flaky" {
				at = append(at, time.Now())
			}
			switch {
			case h.Name == "broken":
				return askpoint.Permanent(errors.New("seat service: no such booking"))
			case len(keys[h.Name]) <= 2:
				return errors.New("seat service: 503")
			}
			return nil
		},
	}
	inBubble(t, func(t *testing.T) {
		b := startBubble(t, nil, askpoint.AgentSpec{Name: "flaky", Agent: agent, Card: a2a.AgentCard{Name: "Flaky", Description: "fails before it files"}})
		c := b.handler(t, "flaky")
		ctx := t.Context()
		task := send(t, ctx, c, userText("two seats"))
		if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil { // releases at once
			t.Fatal(err)
		}
		tries := func(name string) []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), keys[name]...)
		}
		// Two backoffs (StepRetryMin, 500 ms, then twice that, each at
		// most) pass well within a minute of the bubble's clock.
		time.Sleep(time.Minute)
		synctest.Wait()
		// Its release is recorded once it succeeds: the task keeps no pause.
		st, err := b.st.GetTask(ctx, string(task.ID))
		if err != nil || !(len(st.Pause) == 0 || !strings.Contains(string(st.Pause), `"releasing"`) && st.HoldAt.IsZero()) {
			t.Fatalf("after the releases: row %+v (err %v), want the released holds recorded", st, err)
		}
		flaky := tries("flaky")
		if len(flaky) != 3 || flaky[0] != flaky[1] || flaky[1] != flaky[2] {
			t.Fatalf("flaky release tries %v, want 3 under one key", flaky)
		}
		if b := tries("broken"); len(b) != 1 {
			t.Fatalf("broken release tried %d times, want once (its error is permanent)", len(b))
		}
		mu.Lock()
		defer mu.Unlock()
		// In the bubble the tries' times are exact: each retry waited its
		// backoff, a random point in the upper half of 500 ms, then 1 s.
		if gap := at[1].Sub(at[0]); gap < 250*time.Millisecond || gap > 500*time.Millisecond {
			t.Errorf("the first retry came %v after the first try, want 250 ms to 500 ms (its backoff)", gap)
		}
		if gap := at[2].Sub(at[1]); gap < 500*time.Millisecond || gap > time.Second {
			t.Errorf("the second retry came %v after the first, want 500 ms to 1 s (its backoff)", gap)
		}
	})
}
