package workflow_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/workflow"
)

// callTimeout bounds each test's calls, so that a stuck workflow fails the
// test instead of hanging it.
const callTimeout = 20 * time.Second

// chatterReply is what the chatter always says: text that a framework which
// binds the next participant's words to a waiting task would take as the
// answer to the asker's confirmation question (its schema takes one string).
const chatterReply = "yes, confirmed"

// confirmSchema is the asker's question: one string field, so that a plain
// text reply would be accepted as an answer.
const confirmSchema = `{"type":"object","required":["confirm"],"properties":{"confirm":{"type":"string","minLength":1}}}`

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// calls records what a test agent was given, safely across goroutines.
type calls struct {
	mu       sync.Mutex
	starts   []string     // the text of each message that started a task
	taskIDs  []string     // the task of each start
	answers  []string     // the confirm value of each answer
	answered []a2a.TaskID // the task of each answer
}

func (c *calls) start(call *askpoint.Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.starts = append(c.starts, textOf(call.Request))
	c.taskIDs = append(c.taskIDs, call.TaskID)
}

func (c *calls) answer(call *askpoint.Call, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.answers = append(c.answers, v)
	c.answered = append(c.answered, a2a.TaskID(call.TaskID))
}

func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.starts)
}

func (c *calls) startTexts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.starts...)
}

func (c *calls) tasks() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.taskIDs...)
}

func (c *calls) answerValues() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.answers...)
}

// asker asks for a confirmation on every task and completes echoing the
// answer it got ("asker got VALUE"); handoff, when set, names the next
// participant in its reply's data part.
func asker(rec *calls, handoff string) askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			rec.start(call)
			q := question.Question{Text: "Shall I go ahead with the booking? Please confirm.", Schema: json.RawMessage(confirmSchema)}
			return askpoint.Ask(q, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, ans map[string]any) (askpoint.Outcome, error) {
			v, _ := ans["confirm"].(string)
			rec.answer(call, v)
			parts := a2a.ContentParts{a2a.NewTextPart("asker got " + v)}
			if handoff != "" {
				parts = append(parts, a2a.NewDataPart(map[string]any{"handoff": handoff}))
			}
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "reply", Parts: parts}), nil
		},
	}
}

// chatter always replies chatterReply at once.
func chatter(rec *calls) askpoint.Agent {
	return askpoint.Steps[struct{}, struct{}]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			rec.start(call)
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "reply", Parts: a2a.ContentParts{a2a.NewTextPart(chatterReply)}}), nil
		},
	}
}

// silent completes with nothing to say: no artifact, no status message.
func silent(rec *calls) askpoint.Agent {
	return askpoint.Steps[struct{}, struct{}]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			rec.start(call)
			return askpoint.Complete(), nil
		},
	}
}

func card(name string) a2a.AgentCard {
	return a2a.AgentCard{Name: name, Description: "A workflow test agent.", Version: "1.0.0"}
}

// rig is one askpoint server serving the participants and the workflows
// under test, as askpoint serve does: participants are reached over A2A at
// their URLs on it, and their push notifications come back to it.
type rig struct {
	t       *testing.T
	env     *apitest.Env
	base    string
	asker   *calls
	chatter *calls
	silent  *calls
	hook    *hookReceiver
	flows   map[string]workflow.Config      // by agent name
	handoff string                          // the asker's handoff target
	wrap    func(http.Handler) http.Handler // around the server's handler, when set
}

// newRig starts a server with the participants "asker", "chatter",
// "silent" and one workflow agent per entry of flows (each Config gets its
// CallbackURL). handoff is what the asker names in its reply ("" for none).
func newRig(t *testing.T, handoff string, flows map[string]workflow.Config) *rig {
	t.Helper()
	r := &rig{t: t, asker: &calls{}, chatter: &calls{}, silent: &calls{}, hook: newHookReceiver(t), flows: flows, handoff: handoff}
	ln, base := apitest.Listen(t, "")
	r.base = base
	r.start(ln, "")
	return r
}

// start (re)starts the server on ln with the database at db ("" for a new
// one), serving the same participant recorders.
func (r *rig) start(ln net.Listener, db string) {
	t := r.t
	t.Helper()
	self := ln.Addr().String()
	hookHost := r.hook.Host()
	specs := []askpoint.AgentSpec{
		{Name: "asker", Agent: asker(r.asker, r.handoff), Card: card("Asker")},
		{Name: "chatter", Agent: chatter(r.chatter), Card: card("Chatter")},
		{Name: "silent", Agent: silent(r.silent), Card: card("Silent")},
	}
	for name, cfg := range r.flows {
		cfg.CallbackURL = r.base + "/" + name
		for i := range cfg.Participants {
			if cfg.Participants[i].URL == "" {
				cfg.Participants[i].URL = r.base + "/" + cfg.Participants[i].Name
			}
		}
		a, err := workflow.Agent(cfg)
		if err != nil {
			t.Fatalf("workflow.Agent(%s) = %v", name, err)
		}
		specs = append(specs, askpoint.AgentSpec{Name: name, Agent: a, Card: card("Workflow " + name)})
	}
	r.env = apitest.Start(t, apitest.Options{
		Quiet:    true,
		Wrap:     r.wrap,
		Listener: ln,
		DBPath:   db,
		Agents:   specs,
		Config: func(c *askpoint.Config) {
			// The participants' notifications come back to this server;
			// the test's push receiver is on 127.0.0.1 too. Nothing else
			// private is allowed.
			c.WebhookHosts = []string{self, hookHost}
			c.PollInterval = 20 * time.Millisecond
			c.PushRetryMin = 10 * time.Millisecond
			c.PushRetryMax = 50 * time.Millisecond
			c.Reminders = []float64{}
		},
	})
}

// settle waits until the server has nothing left to do (apitest.Settle):
// every step it owes has run, every notification it owes has been
// delivered, including to itself, and whatever those caused has been done
// too. A "nothing more happens" check reads its recorders after it.
func (r *rig) settle() {
	r.t.Helper()
	apitest.Settle(r.t, testCtx(r.t), r.env)
}

// restart stops the server and starts a new one on the same address with
// the same database.
func (r *rig) restart() {
	r.t.Helper()
	addr := strings.TrimPrefix(r.base, "http://")
	db := r.env.DBPath
	r.env.Close()
	ln, _ := apitest.Listen(r.t, addr)
	r.start(ln, db)
}

func (r *rig) client(agent string) *a2aclient.Client {
	r.t.Helper()
	return r.env.Client(r.t, agent, a2a.TransportProtocolJSONRPC)
}

// request is the caller's first message to a workflow, with the test's push
// receiver configured on the workflow's task.
func (r *rig) request(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: r.hook.URL(), Token: "caller-hook-token"}},
	}
}

// streamed is what a streaming SendMessage yielded, read to its end.
type streamed struct {
	task   *a2a.Task
	events []a2a.Event
	last   a2a.TaskStatus
}

// inputRequired lists the input-required status events of the stream.
func (s *streamed) inputRequired() []a2a.TaskStatus {
	var out []a2a.TaskStatus
	for _, ev := range s.events {
		switch e := ev.(type) {
		case *a2a.Task:
			if e.Status.State == a2a.TaskStateInputRequired {
				out = append(out, e.Status)
			}
		case *a2a.TaskStatusUpdateEvent:
			if e.Status.State == a2a.TaskStateInputRequired {
				out = append(out, e.Status)
			}
		}
	}
	return out
}

// stream sends req with SendStreamingMessage and reads the stream to its
// end (the server closes it at input-required or at the end of the task).
func stream(t *testing.T, ctx context.Context, c *a2aclient.Client, req *a2a.SendMessageRequest) *streamed {
	t.Helper()
	out := &streamed{}
	for ev, err := range c.SendStreamingMessage(ctx, req) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v (after %d events)", err, len(out.events))
		}
		out.events = append(out.events, ev)
		switch e := ev.(type) {
		case *a2a.Task:
			out.task, out.last = e, e.Status
		case *a2a.TaskStatusUpdateEvent:
			out.last = e.Status
		}
	}
	if out.task == nil {
		t.Fatalf("the stream yielded no task (events %d)", len(out.events))
	}
	return out
}

func send(t *testing.T, ctx context.Context, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	return apitest.SendTask(t, ctx, c, &a2a.SendMessageRequest{Message: m}, describeMessage(m))
}

// answer is the caller's answer to question id of task.
func answer(task a2a.TaskID, fields map[string]any) *a2a.Message {
	p := a2a.NewDataPart(fields)
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = task
	return m
}

func getHistory(t *testing.T, ctx context.Context, c *a2aclient.Client, id a2a.TaskID) *a2a.Task {
	t.Helper()
	n := 100
	return apitest.GetTask(t, ctx, c, &a2a.GetTaskRequest{ID: id, HistoryLength: &n})
}

// waitState polls the task until it is in state want.
func waitState(t *testing.T, ctx context.Context, c *a2aclient.Client, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	return apitest.WaitState(t, ctx, c, &a2a.GetTaskRequest{ID: id}, want, func(last *a2a.Task) string {
		return fmt.Sprintf("%q", textOf(last.Status.Message))
	})
}

// mustQuestion decodes the question of an input-required status.
func mustQuestion(t *testing.T, st a2a.TaskStatus) *question.Question {
	t.Helper()
	if st.State != a2a.TaskStateInputRequired {
		t.Fatalf("state = %v (%q), want input-required", st.State, textOf(st.Message))
	}
	q, ok, err := question.FromMessage(st.Message)
	if err != nil || !ok {
		t.Fatalf("input-required status has no question (ok=%v, err=%v): %s", ok, err, describeMessage(st.Message))
	}
	return q
}

// transcript reads the final artifact's data part.
type transcriptData struct {
	Transcript []workflow.Turn `json:"transcript"`
	Rounds     int             `json:"rounds"`
}

func transcriptOf(t *testing.T, task *a2a.Task) transcriptData {
	t.Helper()
	for _, a := range task.Artifacts {
		if a == nil || a.Name != "transcript" {
			continue
		}
		for _, p := range a.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				raw, err := json.Marshal(d.Value)
				if err != nil {
					t.Fatal(err)
				}
				var out transcriptData
				if err := json.Unmarshal(raw, &out); err != nil {
					t.Fatalf("transcript data part %s: %v", raw, err)
				}
				return out
			}
		}
	}
	t.Fatalf("task %s has no transcript artifact with a data part (%d artifacts)", task.ID, len(task.Artifacts))
	return transcriptData{}
}

func speakers(ts []workflow.Turn) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Speaker)
	}
	return strings.Join(out, ",")
}

// dataOf returns the first JSON-object data part of m.
func dataOf(m *a2a.Message) map[string]any {
	if m == nil {
		return nil
	}
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if d, ok := p.Content.(a2a.Data); ok {
			if obj, ok := d.Value.(map[string]any); ok {
				return obj
			}
		}
	}
	return nil
}

func textOf(m *a2a.Message) string { return apitest.Text(m) }

func describeMessage(m *a2a.Message) string {
	if m == nil {
		return "<nil>"
	}
	s := fmt.Sprintf("%s %q", m.Role, textOf(m))
	if d := dataOf(m); d != nil {
		raw, _ := json.Marshal(d)
		s += " " + string(raw)
	}
	if len(m.Metadata) > 0 {
		raw, _ := json.Marshal(m.Metadata)
		s += " meta=" + string(raw)
	}
	return s
}

func historyText(task *a2a.Task) string {
	var b strings.Builder
	for _, m := range task.History {
		b.WriteString("\n  " + describeMessage(m))
	}
	return b.String()
}

// userAnswers are the history's user messages that answer a question (a
// data part with a questionId).
func userAnswers(task *a2a.Task) []*a2a.Message {
	var out []*a2a.Message
	for _, m := range task.History {
		if m.Role != a2a.MessageRoleUser {
			continue
		}
		if d := dataOf(m); d != nil && d["questionId"] != nil {
			out = append(out, m)
		}
	}
	return out
}

// eventually polls cond for up to callTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	apitest.Eventually(t, what, callTimeout, cond)
}

// hookReceiver is the caller's push receiver on 127.0.0.1.
type hookReceiver struct{ *apitest.Webhook }

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	return &hookReceiver{apitest.NewWebhook(t)}
}

// requestIDs lists the question IDs of the input-required notifications
// about task, in order.
func (h *hookReceiver) requestIDs(task a2a.TaskID) []string {
	var out []string
	for _, n := range h.For(task) {
		if n.Status.State != a2a.TaskStateInputRequired {
			continue
		}
		q, ok, _ := question.FromMessage(n.Status.Message)
		if ok {
			out = append(out, q.ID)
		} else {
			out = append(out, "(no question)")
		}
	}
	return out
}

func (h *hookReceiver) states(task a2a.TaskID) []string {
	var out []string
	for _, n := range h.For(task) {
		out = append(out, strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(n.Status.State), "TASK_STATE_")), "_", "-"))
	}
	return out
}

// answeredBy is the answer message's askpoint.answeredBy metadata.
func answeredBy(m *a2a.Message) any {
	if m == nil || m.Metadata == nil {
		return nil
	}
	return m.Metadata[client.MetaAnsweredBy]
}
