package askpoint_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store/sqlite"
)

// flowPlace and flowDates are two answer types of one flow.
type flowPlace struct {
	City string `json:"city" jsonschema:"required"`
}

type flowDates struct {
	From string `json:"from" jsonschema:"required,format=date"`
	To   string `json:"to" jsonschema:"required,format=date"`
}

// flowCounts counts what a flow's function did, run after run.
type flowCounts struct {
	runs, quotes atomic.Int32
	swapped      atomic.Bool // the next version of the agent asks dates first
}

// tripFlow asks a place, dates (the last day not before the first) and a
// confirmation, quoting once in between, and completes with all three.
func tripFlow(n *flowCounts) askpoint.Flow {
	toAfterFrom := func(d flowDates) error {
		if d.To < d.From {
			return question.FieldError{Pointer: "/to", Message: "the last day is before the first"}
		}
		return nil
	}
	return func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
		n.runs.Add(1)
		if err := call.Progress(ctx, "planning"); err != nil {
			return askpoint.Outcome{}, err
		}
		var place flowPlace
		var dates flowDates
		var err error
		if n.swapped.Load() {
			if dates, err = askpoint.AskFor(call, question.Question{Text: "When?"}, toAfterFrom); err != nil {
				return askpoint.Outcome{}, err
			}
		}
		if place, err = askpoint.AskFor[flowPlace](call, question.Question{Text: "Where to?"}); err != nil {
			return askpoint.Outcome{}, err
		}
		if !n.swapped.Load() {
			if dates, err = askpoint.AskFor(call, question.Question{Text: "When?"}, toAfterFrom); err != nil {
				return askpoint.Outcome{}, err
			}
		}
		price, err := askpoint.Once(call, "quote", func(key string) (int, error) {
			n.quotes.Add(1)
			return 100 * len(place.City), nil
		})
		if err != nil {
			return askpoint.Outcome{}, err
		}
		if err := call.Progress(ctx, fmt.Sprintf("quoted %d", price)); err != nil {
			return askpoint.Outcome{}, err
		}
		ok, err := askpoint.AskFor[bool](call, question.Question{Text: fmt.Sprintf("Book %s for %d?", place.City, price)})
		if err != nil {
			return askpoint.Outcome{}, err
		}
		if !ok {
			return askpoint.Reject("not confirmed"), nil
		}
		text := fmt.Sprintf("%s %s..%s %d", place.City, dates.From, dates.To, price)
		return askpoint.Complete(&a2a.Artifact{ID: "trip", Parts: a2a.ContentParts{a2a.NewTextPart(text)}}), nil
	}
}

// flowServer serves agent as "trip" on the SQLite file at path and returns
// a client of it and a stop.
func flowServer(t *testing.T, path string, agent askpoint.Agent) (*a2aclient.Client, func()) {
	t.Helper()
	st, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := askpoint.NewServer(askpoint.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(askpoint.AgentSpec{Name: "trip", Agent: agent, Card: a2a.AgentCard{Name: "Trip", Description: "Plans a trip."}}); err != nil {
		t.Fatal(err)
	}
	base, stop := startServe(t, srv)
	c, err := client.Dial(t.Context(), base+"/trip", nil)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	halt := func() {
		if stopped {
			return
		}
		stopped = true
		_ = c.Destroy()
		if err := <-stop(); err != nil {
			t.Errorf("Serve = %v", err)
		}
		st.Close()
	}
	t.Cleanup(halt)
	return c, halt
}

func flowSend(t *testing.T, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage gave %T, want a task", res)
	}
	return task
}

// flowAnswer answers task's open question with the data part v, or with
// text when v is a string.
func flowAnswer(t *testing.T, c *a2aclient.Client, task *a2a.Task, v any) *a2a.Task {
	t.Helper()
	flowQuestion(t, task)
	var m *a2a.Message
	if s, ok := v.(string); ok {
		m = a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s))
	} else {
		p := a2a.NewDataPart(v)
		p.MediaType = question.MediaTypeJSON
		m = a2a.NewMessage(a2a.MessageRoleUser, p)
	}
	m.TaskID = task.ID
	return flowSend(t, c, m)
}

func flowQuestion(t *testing.T, task *a2a.Task) *question.Question {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task is %s (%q), want input-required", task.Status.State, flowStatus(task))
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if !ok || err != nil {
		t.Fatalf("no question in the status (%v)", err)
	}
	return q
}

func flowStatus(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range task.Status.Message.Parts {
		if s, ok := p.Content.(a2a.Text); ok {
			b.WriteString(string(s))
		}
	}
	return b.String()
}

func flowStart(t *testing.T, c *a2aclient.Client) *a2a.Task {
	t.Helper()
	return flowSend(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("a trip, please")))
}

func TestFlowAsksEachQuestionWithItsOwnTypeAndRunsItsWorkOnce(t *testing.T) {
	var n flowCounts
	c, _ := flowServer(t, filepath.Join(t.TempDir(), "a.db"), tripFlow(&n))

	task := flowStart(t, c)
	q := flowQuestion(t, task)
	if q.Text != "Where to?" || !strings.Contains(string(q.Schema), `"city"`) {
		t.Fatalf("first question = %q %s, want Where to? with the schema of flowPlace", q.Text, q.Schema)
	}
	task = flowAnswer(t, c, task, map[string]any{"city": "Oslo"})
	if q := flowQuestion(t, task); q.Text != "When?" || !strings.Contains(string(q.Schema), `"format":"date"`) {
		t.Fatalf("second question = %q %s, want When? with the schema of flowDates", q.Text, q.Schema)
	}
	task = flowAnswer(t, c, task, map[string]any{"from": "2027-05-01", "to": "2027-05-04"})
	q = flowQuestion(t, task)
	if q.Text != "Book Oslo for 400?" || !strings.Contains(string(q.Schema), `"`+question.ScalarField+`":{"type":"boolean"}`) {
		t.Fatalf("third question = %q %s, want the confirmation of a bool", q.Text, q.Schema)
	}
	task = flowAnswer(t, c, task, "yes")
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task is %s (%q), want completed", task.Status.State, flowStatus(task))
	}
	if got := task.Artifacts[0].Parts[0].Content.(a2a.Text); got != "Oslo 2027-05-01..2027-05-04 400" {
		t.Errorf("artifact = %q, want every answer and the quote", got)
	}
	if runs, quotes := n.runs.Load(), n.quotes.Load(); runs != 4 || quotes != 1 {
		t.Errorf("the function ran %d times and quoted %d times, want 4 runs (one a step) and one quote", runs, quotes)
	}
	// Progress the replays sent again was dropped: each text once.
	full, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range full.History {
		for _, p := range m.Parts {
			if s, ok := p.Content.(a2a.Text); ok && (s == "planning" || strings.HasPrefix(string(s), "quoted")) {
				seen[string(s)]++
			}
		}
	}
	if seen["planning"] > 1 || seen["quoted 400"] > 1 {
		t.Errorf("progress in the history = %v, want each text at most once", seen)
	}
}

func TestFlowResumesAfterARestartFromItsCheckpoint(t *testing.T) {
	var n flowCounts
	path := filepath.Join(t.TempDir(), "a.db")
	c, stop := flowServer(t, path, tripFlow(&n))
	task := flowAnswer(t, c, flowStart(t, c), map[string]any{"city": "Rome"})
	flowQuestion(t, task)
	stop()

	var m flowCounts // a new process: nothing of the first is in memory
	c, _ = flowServer(t, path, tripFlow(&m))
	task = flowAnswer(t, c, task, map[string]any{"from": "2027-06-01", "to": "2027-06-02"})
	if q := flowQuestion(t, task); q.Text != "Book Rome for 400?" {
		t.Fatalf("after the restart the question is %q, want the confirmation built from the answer given before", q.Text)
	}
	task = flowAnswer(t, c, task, map[string]any{question.ScalarField: true})
	if task.Status.State != a2a.TaskStateCompleted || task.Artifacts[0].Parts[0].Content.(a2a.Text) != "Rome 2027-06-01..2027-06-02 400" {
		t.Fatalf("task is %s (%q), want completed with the answers of both processes", task.Status.State, flowStatus(task))
	}
}

func TestFlowFailsATaskWhoseQuestionsChangedOrder(t *testing.T) {
	var n flowCounts
	c, _ := flowServer(t, filepath.Join(t.TempDir(), "a.db"), tripFlow(&n))
	task := flowAnswer(t, c, flowStart(t, c), map[string]any{"city": "Oslo"})
	flowQuestion(t, task) // paused on When?, its first answer recorded as the place

	n.swapped.Store(true) // a new version asks When? first
	task = flowAnswer(t, c, task, map[string]any{"from": "2027-05-01", "to": "2027-05-04"})
	if task.Status.State != a2a.TaskStateFailed {
		t.Fatalf("task is %s (%q), want failed", task.Status.State, flowStatus(task))
	}
	if got := flowStatus(task); !strings.Contains(got, "another version of the agent") || !strings.Contains(got, "step 1") {
		t.Errorf("reason = %q, want it to say the agent changed at step 1", got)
	}
	if n.quotes.Load() != 0 {
		t.Errorf("quoted %d times, want none: the answers were not handed on", n.quotes.Load())
	}
}

func TestFlowReasksWhatAChecksRefusesAndCountsItTowardTheCap(t *testing.T) {
	var n flowCounts
	c, _ := flowServer(t, filepath.Join(t.TempDir(), "a.db"), tripFlow(&n))
	task := flowAnswer(t, c, flowStart(t, c), map[string]any{"city": "Oslo"})
	first := flowQuestion(t, task)
	backwards := map[string]any{"from": "2027-05-04", "to": "2027-05-01"}

	task = flowAnswer(t, c, task, backwards)
	q := flowQuestion(t, task)
	if q.Text != "When?" || q.Attempt != 2 || q.ID == first.ID || len(q.Errors) != 1 || q.Errors[0].Pointer != "/to" ||
		q.Errors[0].Message != "the last day is before the first" {
		t.Fatalf("re-ask = %+v, want When? again, attempt 2, a new ID and the check's error at /to", q)
	}
	task = flowAnswer(t, c, task, backwards)
	if q := flowQuestion(t, task); q.Attempt != 3 {
		t.Fatalf("second re-ask is attempt %d, want 3", q.Attempt)
	}
	task = flowAnswer(t, c, task, backwards)
	if task.Status.State != a2a.TaskStateFailed || !strings.Contains(flowStatus(task), "No valid answer after 3 attempts") ||
		!strings.Contains(flowStatus(task), "the last day is before the first") {
		t.Fatalf("task is %s (%q), want failed after 3 attempts, naming the check's error", task.Status.State, flowStatus(task))
	}
	if n.quotes.Load() != 0 {
		t.Errorf("quoted %d times with refused dates, want none", n.quotes.Load())
	}
}

func TestFlowCarriesOnAfterAReaskIsAnswered(t *testing.T) {
	var n flowCounts
	c, _ := flowServer(t, filepath.Join(t.TempDir(), "a.db"), tripFlow(&n))
	task := flowAnswer(t, c, flowStart(t, c), map[string]any{"city": "Oslo"})
	task = flowAnswer(t, c, task, map[string]any{"from": "2027-05-04", "to": "2027-05-01"})
	task = flowAnswer(t, c, task, map[string]any{"from": "2027-05-01", "to": "2027-05-04"})
	if q := flowQuestion(t, task); q.Text != "Book Oslo for 400?" || q.Attempt > 1 {
		t.Fatalf("after the corrected dates the question is %q (attempt %d), want a first ask of the confirmation", q.Text, q.Attempt)
	}
}

func TestFlowDeclinedQuestionRejectsTheTaskUnlessHandled(t *testing.T) {
	var n flowCounts
	c, _ := flowServer(t, filepath.Join(t.TempDir(), "a.db"), tripFlow(&n))
	task := flowAnswer(t, c, flowStart(t, c), map[string]any{"action": "decline", "reason": "not now"})
	if task.Status.State != a2a.TaskStateRejected || !strings.Contains(flowStatus(task), "not now") {
		t.Fatalf("task is %s (%q), want rejected with the caller's reason", task.Status.State, flowStatus(task))
	}

	handled := askpoint.Flow(func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
		_, err := askpoint.AskFor[string](call, question.Question{Text: "Your name?"})
		var d *askpoint.Declined
		if errors.As(err, &d) {
			return askpoint.Complete(&a2a.Artifact{ID: "a", Parts: a2a.ContentParts{a2a.NewTextPart("anonymous: " + d.Reason)}}), nil
		}
		if err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Fail("answered"), nil
	})
	c2, _ := flowServer(t, filepath.Join(t.TempDir(), "b.db"), handled)
	task = flowAnswer(t, c2, flowStart(t, c2), map[string]any{"action": "decline", "reason": "private"})
	if task.Status.State != a2a.TaskStateCompleted || task.Artifacts[0].Parts[0].Content.(a2a.Text) != "anonymous: private" {
		t.Fatalf("task is %s (%q), want completed by the function's own handling", task.Status.State, flowStatus(task))
	}
}

func TestStepsReaskSeesTheQuestionAnsweredAndCountsTowardTheCap(t *testing.T) {
	type span struct {
		Min int `json:"min" jsonschema:"required"`
		Max int `json:"max" jsonschema:"required"`
	}
	var seen atomic.Pointer[question.Question]
	agent := askpoint.Steps[struct{}, span]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{Text: "Range?", Schema: question.MustSchemaFor[span](), MaxAttempts: 2}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, s span) (askpoint.Outcome, error) {
			seen.Store(call.Question)
			if s.Max < s.Min {
				return askpoint.Reask(call.Question, struct{}{}, question.FieldError{Pointer: "/max", Message: "below the minimum"}), nil
			}
			return askpoint.Complete(), nil
		},
	}
	c, _ := flowServer(t, filepath.Join(t.TempDir(), "a.db"), agent)
	task := flowStart(t, c)
	asked := flowQuestion(t, task)
	task = flowAnswer(t, c, task, map[string]any{"min": 5, "max": 1})
	if got := seen.Load(); got == nil || got.ID != asked.ID || got.Text != "Range?" {
		t.Fatalf("call.Question = %+v, want the question answered (%s)", got, asked.ID)
	}
	q := flowQuestion(t, task)
	if q.Attempt != 2 || q.MaxAttempts != 2 || len(q.Errors) != 1 || q.Errors[0].Pointer != "/max" {
		t.Fatalf("re-ask = %+v, want attempt 2 of 2 with the agent's error", q)
	}
	task = flowAnswer(t, c, task, map[string]any{"min": 5, "max": 1})
	if task.Status.State != a2a.TaskStateFailed || !strings.Contains(flowStatus(task), "No valid answer after 2 attempts") {
		t.Fatalf("task is %s (%q), want failed at the cap, as a validation re-ask would", task.Status.State, flowStatus(task))
	}
}

func TestAskForOutsideAFlowIsAPermanentError(t *testing.T) {
	_, err := askpoint.AskFor[string](&askpoint.Call{}, question.Question{Text: "x"})
	if err == nil || !askpoint.IsPermanent(err) || !strings.Contains(err.Error(), "outside a Flow") {
		t.Fatalf("AskFor outside a flow = %v, want a permanent error saying so", err)
	}
}
