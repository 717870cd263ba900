package travel_test

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/travel"
)

func TestTravelBooksATripAfterThreeQuestions(t *testing.T) {
	desk := &travel.Desk{}
	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "travel", Agent: travel.Agent(desk), Card: travel.Card()})
	task := env.Answer(t, env.Send(t, "travel", "A trip for two in May"), "Lisbon")
	task = env.Answer(t, task, travel.Trip{Start: "2027-05-01", End: "2027-05-04", Travellers: 2})
	task = env.Answer(t, task, "yes")
	if task.Status.State != a2a.TaskStateCompleted || desk.Bookings() != 1 || desk.Calls() != 2 {
		t.Fatalf("task is %s, %d bookings of %d calls; want completed, one booking, one quote", task.Status.State, desk.Bookings(), desk.Calls())
	}
}

// Each question is asked with the schema of its own answer type, the
// confirmation names the quote, and dates that end before they start are
// asked again with the agent's own words at the field.
func TestTravelAsksEachQuestionInItsOwnTermsAndReasksBackwardDates(t *testing.T) {
	desk := &travel.Desk{}
	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "travel", Agent: travel.Agent(desk), Card: travel.Card()})
	task := env.Send(t, "travel", "A trip")
	if q := env.Question(t, task); len(q.Options) != 4 || q.Options[0].Label != "Lisbon, Portugal" {
		t.Fatalf("first question's options = %+v, want the four labelled cities", q.Options)
	}
	task = env.Answer(t, task, "kyoto") // a value, ignoring case
	q := env.Question(t, task)
	if !strings.Contains(string(q.Schema), `"travellers"`) || !strings.Contains(string(q.Schema), `"format":"date"`) {
		t.Fatalf("second question's schema = %s, want Trip's", q.Schema)
	}
	task = env.Answer(t, task, travel.Trip{Start: "2027-05-04", End: "2027-05-01", Travellers: 1})
	q = env.Question(t, task)
	if q.Attempt != 2 || len(q.Errors) != 1 || q.Errors[0].Pointer != "/end" {
		t.Fatalf("after backward dates: %+v, want attempt 2 with the error at /end", q)
	}
	task = env.Answer(t, task, travel.Trip{Start: "2027-05-01", End: "2027-05-03", Travellers: 3})
	if q := env.Question(t, task); q.Text != "Book Kyoto, 2027-05-01 to 2027-05-03, for 3 at 720 EUR?" {
		t.Fatalf("confirmation = %q", q.Text)
	}
	task = env.Answer(t, task, "No")
	if task.Status.State != a2a.TaskStateRejected || desk.Bookings() != 0 {
		t.Fatalf("task is %s with %d bookings, want rejected with none", task.Status.State, desk.Bookings())
	}
}

// The same agent stepped without a server (askpointtest.Run): the
// checkpoint goes through JSON between steps, as on a server, and the
// quote is recorded, not repeated.
func TestTravelStepsWithoutAServer(t *testing.T) {
	desk := &travel.Desk{}
	step := askpointtest.Run(t, travel.Agent(desk), "A trip").Answer(t, "Oslo")
	step = step.Answer(t, travel.Trip{Start: "2027-01-10", End: "2027-01-12", Travellers: 1}).Answer(t, "yes")
	if step.State != a2a.TaskStateCompleted || desk.Calls() != 2 || desk.Bookings() != 1 {
		t.Fatalf("step is %s after %d calls and %d bookings, want completed after a quote and a booking", step.State, desk.Calls(), desk.Bookings())
	}
}
