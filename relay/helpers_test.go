package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// The callers of the top server, by bearer token. alice has a default cost
// centre the assistant knows (CC-4410, "Engineering"); bob has none.
const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
)

var callers = map[string]string{aliceToken: "alice", bobToken: "bob"}

// callTimeout bounds each test's calls, so that a broken relay fails the
// test instead of hanging it.
const callTimeout = 15 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// fakeClock moves only when the test says so.
type fakeClock = apitest.FakeClock

func newFakeClock(start time.Time) *fakeClock { return apitest.NewFakeClock(start) }

// ledger records what the expense agent files, once per idempotency key as
// expense.Ledger requires; calls counts every call, repeats included.
type ledger struct {
	mu    sync.Mutex
	byKey map[string]expense.Expense
	keys  []string
	calls int
}

func newLedger() *ledger { return &ledger{byKey: map[string]expense.Expense{}} }

func (l *ledger) File(_ context.Context, key string, e expense.Expense) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	if key == "" {
		return "", fmt.Errorf("ledger: no idempotency key")
	}
	if prev, ok := l.byKey[key]; ok {
		return prev.ExpenseID, nil
	}
	e.ExpenseID = fmt.Sprintf("EXP-%04d", len(l.keys)+1)
	l.byKey[key] = e
	l.keys = append(l.keys, key)
	return e.ExpenseID, nil
}

// filed lists the distinct filings, oldest first.
func (l *ledger) filed() []expense.Expense {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]expense.Expense, 0, len(l.keys))
	for _, k := range l.keys {
		out = append(out, l.byKey[k])
	}
	return out
}

// wantOneFiling requires exactly one expense filed, charged to cc.
func (l *ledger) wantOneFiling(t *testing.T, cc string) {
	t.Helper()
	got := l.filed()
	if len(got) != 1 {
		t.Fatalf("ledger filed %d expenses (%+v), want exactly 1", len(got), got)
	}
	if got[0].CostCentre != cc {
		t.Fatalf("ledger filed %+v, want it charged to %s", got[0], cc)
	}
}

// fast makes a server poll and retry push deliveries quickly.
func fast(c *askpoint.Config) {
	c.PollInterval = 20 * time.Millisecond
	c.PushRetryMin = 10 * time.Millisecond
	c.PushRetryMax = 50 * time.Millisecond
}

// hostOf is the host:port of a base URL, as Config.WebhookHosts wants it.
func hostOf(t *testing.T, base string) string {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parse %q: %v", base, err)
	}
	return u.Host
}

// startSub starts the sub server: the expense agent as "expenses" (with
// the recording ledger) plus extra agents, on clock (nil: real time), with
// push allowed to the hosts in pushTo.
func startSub(t *testing.T, l *ledger, clock *fakeClock, pushTo []string, extra ...askpoint.AgentSpec) *apitest.Env {
	t.Helper()
	var now func() time.Time
	if clock != nil {
		now = clock.Now
	}
	agents := append([]askpoint.AgentSpec{{Name: "expenses", Agent: expense.Agent(expense.DefaultDirectory, l, now), Card: expense.Card()}}, extra...)
	return apitest.Start(t, apitest.Options{
		Quiet: true,
		Config: func(c *askpoint.Config) {
			fast(c)
			c.WebhookHosts = pushTo
			if clock != nil {
				c.Now = clock.Now
			}
		},
		Agents: agents,
	})
}

// assistantSpec is the finance assistant served as "assistant" at selfBase
// (the server's base URL), in front of the expense agent at expenseURL.
func assistantSpec(t *testing.T, selfBase, expenseURL string) askpoint.AgentSpec {
	t.Helper()
	a, err := expense.Assistant(expense.AssistantConfig{
		ExpenseURL: expenseURL,
		SelfURL:    selfBase + "/assistant",
		Defaults:   map[string]string{"alice": "CC-4410"},
	})
	if err != nil {
		t.Fatalf("expense.Assistant() = %v", err)
	}
	return askpoint.AgentSpec{Name: "assistant", Agent: a, Card: expense.AssistantCard()}
}

// world is a top server (with callers alice and bob) in front of a sub
// server holding the expense agent.
type world struct {
	sub, top *apitest.Env
	ledger   *ledger
	topAddr  string // host:port of the top server
	// topOpts restarts the top server (restartTop).
	topOpts apitest.Options
}

// startWorld starts the sub server on subClock (nil: real time) and the
// top server serving what agents builds for its base URL and the sub
// server's base URL (nil: the finance assistant).
func startWorld(t *testing.T, subClock *fakeClock, topConfig func(*askpoint.Config), agents func(topBase, subBase string) []askpoint.AgentSpec, subExtra ...askpoint.AgentSpec) *world {
	t.Helper()
	return startWorldOn(t, "", subClock, topConfig, agents, subExtra...)
}

// startWorldOn is startWorld with the top server on the PostgreSQL database
// at pgURL ("" for SQLite).
func startWorldOn(t *testing.T, pgURL string, subClock *fakeClock, topConfig func(*askpoint.Config), agents func(topBase, subBase string) []askpoint.AgentSpec, subExtra ...askpoint.AgentSpec) *world {
	t.Helper()
	ln, topURL := apitest.Listen(t, "")
	w := &world{ledger: newLedger(), topAddr: hostOf(t, topURL)}
	w.sub = startSub(t, w.ledger, subClock, []string{w.topAddr}, subExtra...)
	if agents == nil {
		agents = func(topBase, subBase string) []askpoint.AgentSpec {
			return []askpoint.AgentSpec{assistantSpec(t, topBase, subBase+"/expenses")}
		}
	}
	w.topOpts = apitest.Options{
		Quiet: true,
		Config: func(c *askpoint.Config) {
			fast(c)
			c.Tokens = callers
			if topConfig != nil {
				topConfig(c)
			}
		},
		Agents:      agents(topURL, w.sub.URL),
		PostgresURL: pgURL,
	}
	opts := w.topOpts
	opts.Listener = ln
	w.top = apitest.Start(t, opts)
	return w
}

// restartTop stops the top server and starts a new one on the same
// address and database, with freshly built agents.
func (w *world) restartTop(t *testing.T, agents []askpoint.AgentSpec) {
	t.Helper()
	db := w.top.DBPath
	w.top.Close()
	ln, _ := apitest.Listen(t, w.topAddr)
	opts := w.topOpts
	opts.Listener, opts.DBPath, opts.Agents = ln, db, agents
	w.top = apitest.Start(t, opts)
}

// settle waits until neither server has anything left to do, for itself
// or for the other (apitest.Settle): a check that something did not
// happen reads the stores and recorders after it.
func (w *world) settle(t *testing.T) {
	t.Helper()
	apitest.Settle(t, testCtx(t), w.top, w.sub)
}

func (w *world) bob(t *testing.T) *a2aclient.Client {
	return w.top.ClientAs(t, "assistant", a2a.TransportProtocolJSONRPC, bobToken)
}

func (w *world) alice(t *testing.T) *a2aclient.Client {
	return w.top.ClientAs(t, "assistant", a2a.TransportProtocolHTTPJSON, aliceToken)
}

// subClient is an anonymous client of an agent on the sub server, which is
// how the relay reaches it (so it sees the relay's tasks).
func (w *world) subClient(t *testing.T, agent string) *a2aclient.Client {
	return w.sub.Client(t, agent, a2a.TransportProtocolJSONRPC)
}

const receipt = "File my taxi receipt from Tuesday, 42 euros"

func userText(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
}

// receiptWaiting sends bob's receipt to the assistant and requires its task
// to wait on a question, and the expense agent to hold one task for it,
// which it returns with its history; bob and subC are the clients of both.
func (w *world) receiptWaiting(t *testing.T, ctx context.Context) (bob, subC *a2aclient.Client, task, sub *a2a.Task) {
	t.Helper()
	bob, subC = w.bob(t), w.subClient(t, "expenses")
	task = sendState(t, ctx, bob, userText(receipt), a2a.TaskStateInputRequired)
	return bob, subC, task, onlyTask(t, ctx, subC)
}

// storedTask reads task id's row from env's store.
func storedTask(t *testing.T, ctx context.Context, env *apitest.Env, id a2a.TaskID) *store.Task {
	t.Helper()
	row, err := env.Store.GetTask(ctx, string(id))
	if err != nil {
		t.Fatalf("GetTask(%s) from the store: %v", id, err)
	}
	return row
}

// answer is a data answer to question qid of task id.
func answer(id a2a.TaskID, qid string, fields map[string]any) *a2a.Message {
	obj := map[string]any{"questionId": qid}
	for k, v := range fields {
		obj[k] = v
	}
	p := a2a.NewDataPart(obj)
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = id
	return m
}

func send(t *testing.T, ctx context.Context, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	return apitest.SendTask(t, ctx, c, &a2a.SendMessageRequest{Message: m}, describeMsg(m))
}

// sendState sends m and requires the task it returns to be in state want.
func sendState(t *testing.T, ctx context.Context, c *a2aclient.Client, m *a2a.Message, want a2a.TaskState) *a2a.Task {
	t.Helper()
	task := send(t, ctx, c, m)
	if task.Status.State != want {
		t.Fatalf("SendMessage(%s): state %v (status %q), want %v", describeMsg(m), task.Status.State, statusText(task), want)
	}
	return task
}

func intp(n int) *int { return &n }

// getTask reads a task with its whole history.
func getTask(t *testing.T, ctx context.Context, c *a2aclient.Client, id a2a.TaskID) *a2a.Task {
	t.Helper()
	return apitest.GetTask(t, ctx, c, &a2a.GetTaskRequest{ID: id, HistoryLength: intp(100)})
}

// waitState polls the task, with its whole history, until it is in state
// want.
func waitState(t *testing.T, ctx context.Context, c *a2aclient.Client, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	return apitest.WaitState(t, ctx, c, &a2a.GetTaskRequest{ID: id, HistoryLength: intp(100)}, want, func(last *a2a.Task) string {
		return fmt.Sprintf("status %q; history:%s", statusText(last), historyText(last))
	})
}

// onlyTask lists the tasks an anonymous client sees and requires exactly
// one, which it returns with its history.
func onlyTask(t *testing.T, ctx context.Context, c *a2aclient.Client) *a2a.Task {
	t.Helper()
	res, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks error = %v", err)
	}
	if len(res.Tasks) != 1 {
		t.Fatalf("ListTasks: %d tasks, want exactly 1", len(res.Tasks))
	}
	return getTask(t, ctx, c, res.Tasks[0].ID)
}

// questionOf is the question of an input-required task's status message.
func questionOf(t *testing.T, task *a2a.Task) *question.Question {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task %s is %v (status %q), want input-required", task.ID, task.Status.State, statusText(task))
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok {
		t.Fatalf("task %s: status message holds no question (ok=%v, err=%v): %q", task.ID, ok, err, statusText(task))
	}
	return q
}

// questionData is the question's data part as sent, for checks of the
// wire form.
func questionData(t *testing.T, m *a2a.Message) map[string]any {
	t.Helper()
	if m != nil {
		for _, p := range m.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if obj, ok := d.Value.(map[string]any); ok && obj["questionId"] != nil {
					return obj
				}
			}
		}
	}
	t.Fatalf("message has no question data part: %s", describeMsg(m))
	return nil
}

func statusText(task *a2a.Task) string { return messageText(task.Status.Message) }

func messageText(m *a2a.Message) string { return apitest.Text(m) }

func describeMsg(m *a2a.Message) string {
	if m == nil {
		return "<nil>"
	}
	raw, _ := json.Marshal(m.Parts)
	return string(raw)
}

func historyText(task *a2a.Task) string {
	var b strings.Builder
	for _, m := range task.History {
		fmt.Fprintf(&b, "\n  %s: %s", m.Role, describeMsg(m))
	}
	return b.String()
}

// answerMessage finds the user message of a task's history that answers
// question qid.
func answerMessage(t *testing.T, task *a2a.Task, qid string) *a2a.Message {
	t.Helper()
	for _, m := range task.History {
		if m.Role != a2a.MessageRoleUser {
			continue
		}
		for _, p := range m.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if obj, ok := d.Value.(map[string]any); ok && obj["questionId"] == qid {
					return m
				}
			}
		}
	}
	t.Fatalf("task %s: no answer to question %s in its history:%s", task.ID, qid, historyText(task))
	return nil
}

// answerTo is the fields of the answer to question qid in a task's
// history, without the questionId.
func answerTo(t *testing.T, task *a2a.Task, qid string) map[string]any {
	t.Helper()
	fields := map[string]any{}
	for _, p := range answerMessage(t, task, qid).Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			if obj, ok := d.Value.(map[string]any); ok && obj["questionId"] == qid {
				for k, v := range obj {
					if k != "questionId" {
						fields[k] = v
					}
				}
			}
		}
	}
	return fields
}

// eventually polls cond for up to 5s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	apitest.Eventually(t, what, 5*time.Second, cond)
}

// pushSettled waits until env has delivered (or given up on) every push
// notification of task id that is due so far: a test that acts only then
// knows no late notification is still on its way.
func pushSettled(t *testing.T, env *apitest.Env, id a2a.TaskID) {
	t.Helper()
	eventually(t, "push notifications of "+string(id)+" delivered", func() bool {
		cfgs, err := env.Store.ListPushConfigs(context.Background(), string(id))
		if err != nil {
			t.Fatalf("ListPushConfigs: %v", err)
		}
		for _, c := range cfgs {
			if c.SentSeq < c.TargetSeq {
				return false
			}
		}
		return true
	})
}
