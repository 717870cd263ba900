package askpoint_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
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

// flowServer serves agent as "trip" on a server of the test's.
func flowServer(t *testing.T, agent askpoint.Agent) *askpointtest.Env {
	t.Helper()
	return askpointtest.Start(t, flowSpec(agent))
}

func flowSpec(agent askpoint.Agent) askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "trip", Agent: agent, Card: a2a.AgentCard{Name: "Trip", Description: "Plans a trip."}}
}

func statusText(task *a2a.Task) string { return text.Of(task.Status.Message) }

func TestFlowAsksEachQuestionWithItsOwnTypeAndRunsItsWorkOnce(t *testing.T) {
	var n flowCounts
	env := flowServer(t, tripFlow(&n))

	task := env.Send(t, "trip", "a trip, please")
	q := env.Question(t, task)
	if q.Text != "Where to?" || !strings.Contains(string(q.Schema), `"city"`) {
		t.Fatalf("first question = %q %s, want Where to? with the schema of flowPlace", q.Text, q.Schema)
	}
	task = env.Answer(t, task, map[string]any{"city": "Oslo"})
	if q := env.Question(t, task); q.Text != "When?" || !strings.Contains(string(q.Schema), `"format":"date"`) {
		t.Fatalf("second question = %q %s, want When? with the schema of flowDates", q.Text, q.Schema)
	}
	task = env.Answer(t, task, map[string]any{"from": "2027-05-01", "to": "2027-05-04"})
	q = env.Question(t, task)
	if q.Text != "Book Oslo for 400?" || !strings.Contains(string(q.Schema), `"`+question.ScalarField+`":{"type":"boolean"}`) {
		t.Fatalf("third question = %q %s, want the confirmation of a bool", q.Text, q.Schema)
	}
	task = env.Answer(t, task, "yes")
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task is %s (%q), want completed", task.Status.State, statusText(task))
	}
	if got := task.Artifacts[0].Parts[0].Content.(a2a.Text); got != "Oslo 2027-05-01..2027-05-04 400" {
		t.Errorf("artifact = %q, want every answer and the quote", got)
	}
	if runs, quotes := n.runs.Load(), n.quotes.Load(); runs != 4 || quotes != 1 {
		t.Errorf("the function ran %d times and quoted %d times, want 4 runs (one a step) and one quote", runs, quotes)
	}
	// Progress the replays sent again was dropped: each text once.
	full, err := env.Client(t, "trip").GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
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
	env := flowServer(t, tripFlow(&n))
	task := env.Answer(t, env.Send(t, "trip", "a trip, please"), map[string]any{"city": "Rome"})
	env.Question(t, task)
	var m flowCounts // a new process: nothing of the first is in memory
	env.Restart(t, flowSpec(tripFlow(&m)))
	task = env.Answer(t, task, map[string]any{"from": "2027-06-01", "to": "2027-06-02"})
	if q := env.Question(t, task); q.Text != "Book Rome for 400?" {
		t.Fatalf("after the restart the question is %q, want the confirmation built from the answer given before", q.Text)
	}
	task = env.Answer(t, task, map[string]any{question.ScalarField: true})
	if task.Status.State != a2a.TaskStateCompleted || task.Artifacts[0].Parts[0].Content.(a2a.Text) != "Rome 2027-06-01..2027-06-02 400" {
		t.Fatalf("task is %s (%q), want completed with the answers of both processes", task.Status.State, statusText(task))
	}
}

func TestFlowFailsATaskWhoseQuestionsChangedOrder(t *testing.T) {
	var n flowCounts
	env := flowServer(t, tripFlow(&n))
	task := env.Answer(t, env.Send(t, "trip", "a trip, please"), map[string]any{"city": "Oslo"})
	env.Question(t, task) // paused on When?, its first answer recorded as the place

	n.swapped.Store(true) // a new version asks When? first
	task = env.Answer(t, task, map[string]any{"from": "2027-05-01", "to": "2027-05-04"})
	if task.Status.State != a2a.TaskStateFailed {
		t.Fatalf("task is %s (%q), want failed", task.Status.State, statusText(task))
	}
	if got := statusText(task); !strings.Contains(got, "another version of the agent") || !strings.Contains(got, "step 1") {
		t.Errorf("reason = %q, want it to say the agent changed at step 1", got)
	}
	if n.quotes.Load() != 0 {
		t.Errorf("quoted %d times, want none: the answers were not handed on", n.quotes.Load())
	}
}

func TestFlowReasksWhatAChecksRefusesAndCountsItTowardTheCap(t *testing.T) {
	var n flowCounts
	env := flowServer(t, tripFlow(&n))
	task := env.Answer(t, env.Send(t, "trip", "a trip, please"), map[string]any{"city": "Oslo"})
	first := env.Question(t, task)
	backwards := map[string]any{"from": "2027-05-04", "to": "2027-05-01"}

	task = env.Answer(t, task, backwards)
	q := env.Question(t, task)
	if q.Text != "When?" || q.Attempt != 2 || q.ID == first.ID || len(q.Errors) != 1 || q.Errors[0].Pointer != "/to" ||
		q.Errors[0].Message != "the last day is before the first" {
		t.Fatalf("re-ask = %+v, want When? again, attempt 2, a new ID and the check's error at /to", q)
	}
	task = env.Answer(t, task, backwards)
	if q := env.Question(t, task); q.Attempt != 3 {
		t.Fatalf("second re-ask is attempt %d, want 3", q.Attempt)
	}
	task = env.Answer(t, task, backwards)
	if task.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(task), "No valid answer after 3 attempts") ||
		!strings.Contains(statusText(task), "the last day is before the first") {
		t.Fatalf("task is %s (%q), want failed after 3 attempts, naming the check's error", task.Status.State, statusText(task))
	}
	if n.quotes.Load() != 0 {
		t.Errorf("quoted %d times with refused dates, want none", n.quotes.Load())
	}
}

func TestFlowCarriesOnAfterAReaskIsAnswered(t *testing.T) {
	var n flowCounts
	env := flowServer(t, tripFlow(&n))
	task := env.Answer(t, env.Send(t, "trip", "a trip, please"), map[string]any{"city": "Oslo"})
	task = env.Answer(t, task, map[string]any{"from": "2027-05-04", "to": "2027-05-01"})
	task = env.Answer(t, task, map[string]any{"from": "2027-05-01", "to": "2027-05-04"})
	if q := env.Question(t, task); q.Text != "Book Oslo for 400?" || q.Attempt > 1 {
		t.Fatalf("after the corrected dates the question is %q (attempt %d), want a first ask of the confirmation", q.Text, q.Attempt)
	}
}

func TestFlowDeclinedQuestionRejectsTheTaskUnlessHandled(t *testing.T) {
	var n flowCounts
	env := flowServer(t, tripFlow(&n))
	task := env.Decline(t, env.Send(t, "trip", "a trip, please"), "not now")
	if task.Status.State != a2a.TaskStateRejected || !strings.Contains(statusText(task), "not now") {
		t.Fatalf("task is %s (%q), want rejected with the caller's reason", task.Status.State, statusText(task))
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
	env2 := flowServer(t, handled)
	task = env2.Decline(t, env2.Send(t, "trip", "a name"), "private")
	if task.Status.State != a2a.TaskStateCompleted || task.Artifacts[0].Parts[0].Content.(a2a.Text) != "anonymous: private" {
		t.Fatalf("task is %s (%q), want completed by the function's own handling", task.Status.State, statusText(task))
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
	env := flowServer(t, agent)
	task := env.Send(t, "trip", "a trip, please")
	asked := env.Question(t, task)
	task = env.Answer(t, task, map[string]any{"min": 5, "max": 1})
	if got := seen.Load(); got == nil || got.ID != asked.ID || got.Text != "Range?" {
		t.Fatalf("call.Question = %+v, want the question answered (%s)", got, asked.ID)
	}
	q := env.Question(t, task)
	if q.Attempt != 2 || q.MaxAttempts != 2 || len(q.Errors) != 1 || q.Errors[0].Pointer != "/max" {
		t.Fatalf("re-ask = %+v, want attempt 2 of 2 with the agent's error", q)
	}
	task = env.Answer(t, task, map[string]any{"min": 5, "max": 1})
	if task.Status.State != a2a.TaskStateFailed || !strings.Contains(statusText(task), "No valid answer after 2 attempts") {
		t.Fatalf("task is %s (%q), want failed at the cap, as a validation re-ask would", task.Status.State, statusText(task))
	}
}

func TestAskForOutsideAFlowIsAPermanentError(t *testing.T) {
	_, err := askpoint.AskFor[string](&askpoint.Call{}, question.Question{Text: "x"})
	if err == nil || !askpoint.IsPermanent(err) || !strings.Contains(err.Error(), "outside a Flow") {
		t.Fatalf("AskFor outside a flow = %v, want a permanent error saying so", err)
	}
}
