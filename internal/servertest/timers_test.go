package servertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// fakeClock is the server's clock in timer tests.
type fakeClock = apitest.FakeClock

func newFakeClock() *fakeClock {
	return apitest.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
}

// releases records the holds the timed agent's release ran for.
type releases struct {
	mu   sync.Mutex
	keys []string
	at   []time.Time
}

func (r *releases) add(key string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, key)
	r.at = append(r.at, at)
}

func (r *releases) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// timed is an agent for timer tests. Its question expires one hour after
// it is asked (by its clock: the server's fake clock, or the bubble's).
// Commands:
//
//	ask [fail|cancel|default]   ask for a name with that expiry action
//	hold MINUTES                ask, holding "seat" until MINUTES from now
//	hold-late                   ask, holding "seat" past the question's expiry
//
// An answer completes the task with "hello NAME", the holds it got back and
// whether the answer was the default.
type timed struct {
	now      func() time.Time
	released *releases
	answers  *int64s
}

type int64s struct {
	mu sync.Mutex
	n  int
}

func (c *int64s) inc() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *int64s) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

const expiryAfter = time.Hour

func (a *timed) agent() askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			words := strings.Fields(messageText(call.Request))
			now := a.now()
			q := question.Question{
				Text:    "What is your name?",
				Schema:  json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string","minLength":1}}}`),
				Expires: now.Add(expiryAfter),
			}
			o := askpoint.Ask(q, struct{}{})
			switch {
			case len(words) == 2 && words[0] == "ask" && words[1] == "cancel":
				o = o.OnExpiry(askpoint.ExpireCancel)
			case len(words) == 2 && words[0] == "ask" && words[1] == "default":
				o = o.DefaultAnswer(map[string]any{"name": "nobody"})
			case len(words) == 2 && words[0] == "hold":
				var min int
				fmt.Sscan(words[1], &min)
				o = o.Hold(askpoint.Hold{Name: "seat", Until: now.Add(time.Duration(min) * time.Minute), Data: map[string]string{"seat": "14C"}})
			case len(words) == 1 && words[0] == "hold-late":
				o = o.Hold(askpoint.Hold{Name: "seat", Until: now.Add(2 * expiryAfter)})
			}
			return o, nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, ans map[string]any) (askpoint.Outcome, error) {
			a.answers.inc()
			var holds []string
			for _, h := range call.Holds {
				holds = append(holds, fmt.Sprintf("%s lapsed=%v released=%v", h.Name, h.Lapsed, h.Released))
			}
			text := fmt.Sprintf("hello %v; holds [%s]; expired=%v", ans["name"], strings.Join(holds, ", "), call.Expired)
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart(text)}}), nil
		},
		OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
			var data map[string]string
			_ = json.Unmarshal(h.Data, &data)
			a.released.add(call.Key+" "+data["seat"], a.now())
			return nil
		},
	}
}

// timerEnv is a server with the timed agent on a fake clock.
type timerEnv struct {
	env   *apitest.Env
	clock *fakeClock
	agent *timed
	c     *a2aclient.Client
}

func startTimed(t *testing.T, adjust func(*askpoint.Config)) *timerEnv {
	t.Helper()
	clock := newFakeClock()
	ta := &timed{now: clock.Now, released: &releases{}, answers: &int64s{}}
	env := apitest.Start(t, apitest.Options{
		Quiet: true,
		Config: func(c *askpoint.Config) {
			c.Now = clock.Now
			c.PollInterval = 10 * time.Millisecond
			c.AllowPrivateWebhooks = true
			c.PushRetryMin = 10 * time.Millisecond
			c.PushRetryMax = 50 * time.Millisecond
			if adjust != nil {
				adjust(c)
			}
		},
		Agents: []askpoint.AgentSpec{{Name: "timed", Agent: ta.agent(), Card: a2a.AgentCard{Name: "Timed", Description: "Asks with an expiry."}}},
	})
	return &timerEnv{env: env, clock: clock, agent: ta, c: env.Client(t, "timed", a2a.TransportProtocolJSONRPC)}
}

// timedBubble is a server with the timed agent at the engine level, in a
// synctest bubble (see bubble_test.go): its clock is the bubble's.
type timedBubble struct {
	srv   *bubbleServer
	agent *timed
	c     apitest.Caller // the timed agent's request handler
}

// startTimedBubble is startTimed in the bubble the test runs in.
func startTimedBubble(t *testing.T, adjust func(*askpoint.Config)) *timedBubble {
	t.Helper()
	ta := &timed{now: time.Now, released: &releases{}, answers: &int64s{}}
	b := startBubble(t, adjust, askpoint.AgentSpec{Name: "timed", Agent: ta.agent(), Card: a2a.AgentCard{Name: "Timed", Description: "Asks with an expiry."}})
	return &timedBubble{srv: b, agent: ta, c: b.handler(t, "timed")}
}

// advance moves the bubble's clock by d and waits until the server has
// acted on everything due by then.
func (e *timedBubble) advance(d time.Duration) {
	time.Sleep(d)
	synctest.Wait()
}

// wantState reads task id and requires it to be in state want: in a
// bubble, once synctest.Wait returned, what was due has been done.
func wantState(t *testing.T, ctx context.Context, c apitest.Caller, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	task := getTask(t, ctx, c, id)
	if task.Status.State != want {
		t.Fatalf("task %s: state %v (status message %q), want %v", id, task.Status.State, messageText(task.Status.Message), want)
	}
	return task
}

// eventually polls cond for up to 5s of real time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	apitest.Eventually(t, what, 5*time.Second, cond)
}

// settle waits until the server has acted on everything due at the current
// fake time (its timer loops finished a round, nothing is in hand), for
// checks that something did NOT happen.
func (e *timerEnv) settle(t *testing.T) {
	t.Helper()
	if err := e.env.Engine.Idle(testCtx(t)); err != nil {
		t.Fatalf("Idle: %v", err)
	}
}

func TestExpiryFailsTheTaskNamingTheQuestionAndWhenItExpired(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, nil)
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("ask"), a2a.TaskStateInputRequired)
		q, _, _ := question.FromMessage(task.Status.Message)

		e.advance(expiryAfter - time.Second)
		if got := getTask(t, ctx, e.c, task.ID); got.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("a second before expiry: state = %v, want input-required", got.Status.State)
		}
		e.advance(time.Second)
		got := wantState(t, ctx, e.c, task.ID, a2a.TaskStateFailed)
		want := fmt.Sprintf("question %s expired at %s", q.ID, q.Expires.UTC().Format(time.RFC3339))
		if text := statusText(got); !strings.Contains(text, want) {
			t.Fatalf("status message = %q, want it to say %q", text, want)
		}
	})
}

func TestExpiryCancelsTheTaskWhenTheAgentChoseCancel(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, nil)
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("ask cancel"), a2a.TaskStateInputRequired)
		e.advance(expiryAfter)
		got := wantState(t, ctx, e.c, task.ID, a2a.TaskStateCanceled)
		if text := statusText(got); !strings.Contains(text, "expired") || !strings.Contains(text, "canceled") {
			t.Fatalf("status message = %q, want it to say the question expired and the task was canceled", text)
		}
	})
}

func TestExpiryResumesTheTaskWithTheAgentsDefaultAnswer(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, nil)
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("ask default"), a2a.TaskStateInputRequired)
		e.advance(expiryAfter)
		got := wantState(t, ctx, e.c, task.ID, a2a.TaskStateCompleted)
		if len(got.Artifacts) != 1 {
			t.Fatalf("artifacts = %d, want 1", len(got.Artifacts))
		}
		if text := partsText(got.Artifacts[0].Parts); !strings.Contains(text, "hello nobody") || !strings.Contains(text, "expired=true") {
			t.Fatalf("artifact = %q, want the default answer (nobody) marked as expired", text)
		}
		full := getTaskHistory(t, ctx, e.c, task.ID)
		found := false
		for _, m := range full.History {
			found = found || m.Role == a2a.MessageRoleAgent && strings.Contains(messageText(m), "default answer")
		}
		if !found {
			t.Fatalf("history has no agent message saying the default answer was used: %s", historyText(full))
		}
	})
}

func TestDefaultAnswerThatDoesNotFitTheSchemaFailsTheAsk(t *testing.T) {
	clock := newFakeClock()
	bad := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			q := question.Question{Text: "Name?", Schema: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)}
			return askpoint.Ask(q, struct{}{}).DefaultAnswer(map[string]any{"name": 7}), nil
		},
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.Now = clock.Now },
		Agents: []askpoint.AgentSpec{{Name: "bad", Agent: bad, Card: a2a.AgentCard{Name: "Bad", Description: "Bad default."}}}})
	ctx := testCtx(t)
	got := sendState(t, ctx, env.Client(t, "bad", a2a.TransportProtocolJSONRPC), userText("go"), a2a.TaskStateFailed)
	if text := statusText(got); !strings.Contains(text, "default answer") || !strings.Contains(text, "/name") {
		t.Fatalf("status message = %q, want it to name the default answer and its bad field", text)
	}
}

func TestLateAnswerIsRefusedAndExpiresTheTaskOnTheSpot(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		// No sweeper: only the late answer can find out that time is up.
		e := startTimedBubble(t, func(c *askpoint.Config) { c.DisableSweeper = true })
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("ask"), a2a.TaskStateInputRequired)
		e.advance(expiryAfter + time.Minute)
		if got := getTask(t, ctx, e.c, task.ID); got.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("with no sweeper and no answer: state = %v, want still input-required", got.Status.State)
		}
		_, err := e.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"name": "Ada"}))})
		wantErr(t, "late answer", err, a2a.ErrUnsupportedOperation)
		if !strings.Contains(err.Error(), "expired") {
			t.Fatalf("late answer error = %v, want it to say the question expired", err)
		}
		got := getTaskHistory(t, ctx, e.c, task.ID)
		if got.Status.State != a2a.TaskStateFailed {
			t.Fatalf("after the late answer: state = %v, want failed", got.Status.State)
		}
		for _, m := range got.History {
			if m.Role == a2a.MessageRoleUser && strings.Contains(messageText(m)+dataText(m), "Ada") {
				t.Fatalf("the refused answer is in the history: %s", historyText(got))
			}
		}
		if n := e.agent.answers.get(); n != 0 {
			t.Fatalf("agent ran OnAnswer %d times, want 0", n)
		}
	})
}

func TestRemindersFireOnceEachAndNoneAfterAnAnswer(t *testing.T) {
	e := startTimed(t, nil)
	hook := newHookReceiver(t)
	ctx := testCtx(t)
	task := sendTask(t, ctx, e.c, &a2a.SendMessageRequest{
		Message: userText("ask"),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL(), Token: "tok-1"}},
	})
	hook.waitFor(t, "the input-required notification", func(n []notification) bool { return countState(n, a2a.TaskStateInputRequired, false) == 1 })

	e.clock.Advance(expiryAfter / 2)
	hook.waitFor(t, "the half-way reminder", func(n []notification) bool { return countReminders(n) == 1 })
	e.settle(t)
	if n := countReminders(hook.all()); n != 1 {
		t.Fatalf("after more rounds at half-way: %d reminders, want 1", n)
	}
	e.clock.Advance(expiryAfter * 4 / 10) // 90%
	hook.waitFor(t, "the 90% reminder", func(n []notification) bool { return countReminders(n) == 2 })
	r := hook.all()
	last := r[len(r)-1]
	if last.Reminder == nil || last.Reminder["reminder"] != float64(2) || last.Reminder["of"] != float64(2) {
		t.Fatalf("second reminder marker = %v, want reminder 2 of 2", last.Reminder)
	}
	q, ok, err := question.FromMessage(last.Status.Message)
	if err != nil || !ok || q.Text != "What is your name?" {
		t.Fatalf("reminder carries question %+v (ok=%v, err=%v), want the open question unchanged", q, ok, err)
	}

	if _, err := e.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"name": "Ada"}))}); err != nil {
		t.Fatalf("answer: %v", err)
	}
	waitState(t, ctx, e.c, task.ID, a2a.TaskStateCompleted)
	e.clock.Advance(expiryAfter)
	e.settle(t)
	if n := countReminders(hook.all()); n != 2 {
		t.Fatalf("after the answer and past the expiry: %d reminders, want still 2", n)
	}
}

func TestReminderPointsMissedWhileNoSweeperRanFoldIntoOne(t *testing.T) {
	e := startTimed(t, nil)
	hook := newHookReceiver(t)
	ctx := testCtx(t)
	sendTask(t, ctx, e.c, &a2a.SendMessageRequest{
		Message: userText("ask"),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.URL()}},
	})
	e.clock.Advance(expiryAfter * 95 / 100) // past both points at once
	hook.waitFor(t, "a reminder", func(n []notification) bool { return countReminders(n) >= 1 })
	e.settle(t)
	if n := countReminders(hook.all()); n != 1 {
		t.Fatalf("reminders = %d, want 1 for both missed points", n)
	}
}

func TestHoldIsReleasedOnTimeWithTheSweeperStopped(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, func(c *askpoint.Config) { c.DisableSweeper = true })
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("hold 10"), a2a.TaskStateInputRequired)

		e.advance(10*time.Minute - time.Second)
		if got := e.agent.released.list(); len(got) != 0 {
			t.Fatalf("a second before the hold's deadline: released %v, want nothing", got)
		}
		e.advance(time.Second)
		got := e.agent.released.list()
		q, _, _ := question.FromMessage(task.Status.Message)
		if want := []string{string(task.ID) + "/" + q.ID + "/hold/seat 14C"}; !equalStrings(got, want) {
			t.Fatalf("releases = %v, want exactly %v", got, want)
		}
		if st := getTask(t, ctx, e.c, task.ID).Status.State; st != a2a.TaskStateInputRequired {
			t.Fatalf("after the release: state = %v, want still input-required (the question is open until it expires)", st)
		}
	})
}

func TestResumeTellsTheAgentWhichHoldsLapsed(t *testing.T) {
	for _, tc := range []struct {
		name    string
		advance time.Duration
		want    string
	}{
		{"within", 5 * time.Minute, "seat lapsed=false released=false"},
		{"after", 11 * time.Minute, "seat lapsed=true released=true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, func(t *testing.T) {
				e := startTimedBubble(t, nil)
				ctx := t.Context()
				task := sendState(t, ctx, e.c, userText("hold 10"), a2a.TaskStateInputRequired)
				e.advance(tc.advance)
				if tc.advance > 10*time.Minute {
					if got := e.agent.released.list(); len(got) != 1 {
						t.Fatalf("%v after the ask: released %v, want the hold released", tc.advance, got)
					}
				}
				got := sendState(t, ctx, e.c, followUp(task.ID, userData(map[string]any{"name": "Ada"})), a2a.TaskStateCompleted)
				if text := partsText(got.Artifacts[0].Parts); !strings.Contains(text, tc.want) {
					t.Fatalf("artifact = %q, want the hold reported as %q", text, tc.want)
				}
				if tc.advance < 10*time.Minute {
					e.advance(time.Hour)
					if got := e.agent.released.list(); len(got) != 0 {
						t.Fatalf("a hold handed back on resume was released by the runtime: %v", got)
					}
				}
			})
		})
	}
}

func TestHoldIsReleasedAtOnceWhenTheCallerCancelsInsteadOfAnswering(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, nil)
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("hold 10"), a2a.TaskStateInputRequired)
		if _, err := e.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
			t.Fatalf("CancelTask: %v", err)
		}
		synctest.Wait()
		if got := e.agent.released.list(); len(got) != 1 {
			t.Fatalf("after the cancel: released %v, want the hold at once", got)
		}
	})
}

func TestHoldIsReleasedWhenTheQuestionExpires(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, nil)
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("hold 60"), a2a.TaskStateInputRequired)
		e.advance(expiryAfter)
		wantState(t, ctx, e.c, task.ID, a2a.TaskStateFailed)
		if n := len(e.agent.released.list()); n != 1 {
			t.Fatalf("releases = %d, want 1", n)
		}
	})
}

func TestHoldPastTheQuestionsExpiryIsRefused(t *testing.T) {
	e := startTimed(t, nil)
	ctx := testCtx(t)
	got := sendState(t, ctx, e.c, userText("hold-late"), a2a.TaskStateFailed)
	if text := statusText(got); !strings.Contains(text, `hold "seat"`) || !strings.Contains(text, "after the question expires") {
		t.Fatalf("status message = %q, want it to name the hold and say it outlives the question", text)
	}
}

// TestAnswerRacingExpiryHasOneOutcome moves the clock across the expiry
// while answers and sweeps run at once: every trial ends either completed
// (an answer won before the expiry, the agent ran once) or failed (the
// expiry won, the agent never ran), and every caller's view agrees.
func TestAnswerRacingExpiryHasOneOutcome(t *testing.T) {
	e := startTimed(t, func(c *askpoint.Config) { c.DisableSweeper = true })
	ctx := testCtx(t)
	const trials = 40
	outcomes := map[a2a.TaskState]int{}
	for i := range trials {
		before := e.agent.answers.get()
		task := sendState(t, ctx, e.c, userText("ask"), a2a.TaskStateInputRequired)
		e.clock.Advance(expiryAfter - time.Millisecond)
		var wg sync.WaitGroup
		accepted := make([]bool, 4)
		for j := range accepted {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"name": fmt.Sprint("caller-", j)}))})
				accepted[j] = err == nil
				if err != nil && !strings.Contains(err.Error(), "expired") && !strings.Contains(err.Error(), "takes no more messages") {
					t.Errorf("trial %d: answer %d error = %v, want the task or an expiry/finished refusal", i, j, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%5) * 200 * time.Microsecond)
			e.clock.Advance(time.Millisecond)
			if err := e.env.Engine.SweepNow(ctx); err != nil {
				t.Errorf("sweep: %v", err)
			}
		}()
		wg.Wait()
		end := waitTerminal(t, ctx, e.c, task.ID)
		ran := e.agent.answers.get() - before
		switch end.Status.State {
		case a2a.TaskStateCompleted:
			if ran != 1 {
				t.Fatalf("trial %d: completed with %d runs of OnAnswer, want 1", i, ran)
			}
		case a2a.TaskStateFailed:
			if ran != 0 {
				t.Fatalf("trial %d: expired but OnAnswer ran %d times", i, ran)
			}
			for j, ok := range accepted {
				if ok {
					t.Fatalf("trial %d: the task expired, yet answer %d was accepted", i, j)
				}
			}
		default:
			t.Fatalf("trial %d: ended %v, want completed or failed", i, end.Status.State)
		}
		outcomes[end.Status.State]++
	}
	t.Logf("outcomes over %d trials: %v", trials, outcomes)
}

func waitTerminal(t *testing.T, ctx context.Context, c apitest.Caller, id a2a.TaskID) *a2a.Task {
	t.Helper()
	for {
		task := getTask(t, ctx, c, id)
		if task.Status.State.Terminal() {
			return task
		}
		select {
		case <-ctx.Done():
			t.Fatalf("task %s is %v, not terminal before the deadline", id, task.Status.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func getTaskHistory(t *testing.T, ctx context.Context, c apitest.Caller, id a2a.TaskID) *a2a.Task {
	t.Helper()
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: id, HistoryLength: intp(100)})
	if err != nil {
		t.Fatalf("GetTask(%s): %v", id, err)
	}
	return task
}

func historyText(task *a2a.Task) string {
	var b strings.Builder
	for _, m := range task.History {
		fmt.Fprintf(&b, "\n  %s: %s%s", m.Role, messageText(m), dataText(m))
	}
	return b.String()
}

func dataText(m *a2a.Message) string {
	var out []string
	for _, p := range m.Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			raw, _ := json.Marshal(d.Value)
			out = append(out, string(raw))
		}
	}
	return strings.Join(out, " ")
}

func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		if tx, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(tx))
		}
	}
	return strings.Join(out, " ")
}

func equalStrings(a, b []string) bool {
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	return strings.Join(a, "\x00") == strings.Join(b, "\x00")
}

// A paused task whose row has a wake timer but no pause state (paused by an
// older runtime, or set by hand) still expires at its question's expiry.
func TestQuestionWithoutPauseStateStillExpires(t *testing.T) {
	inBubble(t, func(t *testing.T) {
		e := startTimedBubble(t, nil)
		ctx := t.Context()
		task := sendState(t, ctx, e.c, userText("ask"), a2a.TaskStateInputRequired)
		row, err := e.srv.st.GetTask(ctx, string(task.ID))
		if err != nil {
			t.Fatal(err)
		}
		row.Pause = nil
		if _, err := e.srv.st.UpdateTask(ctx, row, nil); err != nil {
			t.Fatal(err)
		}
		e.advance(expiryAfter / 2) // a sweep before the expiry must keep the timer
		e.advance(expiryAfter / 2)
		wantState(t, ctx, e.c, task.ID, a2a.TaskStateFailed)
	})
}
