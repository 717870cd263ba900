package expense_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/question"
)

// Sunday 29 November 2026: "Tuesday" is the 24th.
var sunday = time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)

func TestParseReadsAmountDateAndVendor(t *testing.T) {
	tests := []struct {
		text string
		want expense.Expense
	}{
		{"File my taxi receipt from Tuesday, 42 euros", expense.Expense{Amount: 42, Currency: "EUR", Date: "2026-11-24", Vendor: "Taxi"}},
		{"File my hotel bill, €180.50, 2026-11-20", expense.Expense{Amount: 180.5, Currency: "EUR", Date: "2026-11-20", Vendor: "Hotel"}},
		{"file the train ticket from yesterday 12,40 GBP", expense.Expense{Amount: 12.4, Currency: "GBP", Date: "2026-11-28", Vendor: "Train"}},
		{"File my taxi receipt from Sunday, 9 dollars", expense.Expense{Amount: 9, Currency: "USD", Date: "2026-11-29", Vendor: "Taxi"}},
		{"File my taxi receipt", expense.Expense{Vendor: "Taxi"}},
	}
	for _, tt := range tests {
		if got := expense.Parse(tt.text, sunday); got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
	}
}

func clock() time.Time { return sunday }

func run(t *testing.T, a askpoint.Agent, text string) *askpointtest.Step {
	t.Helper()
	return askpointtest.Runner{Agent: a, Now: clock}.Start(t, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
}

func agent() askpoint.Agent {
	return expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, clock)
}

func TestAsksForTheCostCentreWithBothOptions(t *testing.T) {
	q := run(t, agent(), "File my taxi receipt from Tuesday, 42 euros").Question
	if q == nil {
		t.Fatal("Start() did not ask")
	}
	var values []string
	for _, o := range q.Options {
		values = append(values, question.ValueText(o.Value))
	}
	if !slices.Equal(values, []string{"CC-4410", "CC-4420"}) {
		t.Errorf("options = %v, want [CC-4410 CC-4420]", values)
	}
	if q.OptionField() != "costCentre" {
		t.Errorf("OptionField() = %q, want costCentre", q.OptionField())
	}
	if !strings.Contains(string(q.Schema), `^CC-[0-9]{4}$`) {
		t.Errorf("schema %s lacks the pattern ^CC-[0-9]{4}$", q.Schema)
	}
	if errs := q.Validate(json.RawMessage(`{"costCentre":"engineering"}`)); len(errs) == 0 {
		t.Errorf("Validate(engineering) accepted a value outside the options")
	}
}

func TestCompletesWithTheChosenCostCentre(t *testing.T) {
	out := run(t, agent(), "File my taxi receipt from Tuesday, 42 euros").Answer(t, "CC-4410").Outcome
	if out.Kind() != askpoint.OutcomeComplete || len(out.Artifacts()) != 1 {
		t.Fatalf("Resume() = %q with %d artifacts, want complete with 1", out.Kind(), len(out.Artifacts()))
	}
	var filed expense.Expense
	for _, p := range out.Artifacts()[0].Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			raw, _ := json.Marshal(d.Value)
			_ = json.Unmarshal(raw, &filed)
		}
	}
	want := expense.Expense{Amount: 42, Currency: "EUR", Date: "2026-11-24", Vendor: "Taxi", CostCentre: "CC-4410"}
	id := filed.ExpenseID
	filed.ExpenseID = ""
	if filed != want || !strings.HasPrefix(id, "EXP-") {
		t.Errorf("filed %+v (id %q), want %+v with an EXP- id", filed, id, want)
	}
}

func TestAsksForEveryMissingFieldInOneQuestion(t *testing.T) {
	s := run(t, agent(), "File my taxi receipt")
	var schema struct {
		Required []string `json:"required"`
	}
	if s.Question == nil || json.Unmarshal(s.Question.Schema, &schema) != nil {
		t.Fatalf("Start() is %s, want a question", s.State)
	}
	slices.Sort(schema.Required)
	if !slices.Equal(schema.Required, []string{"amount", "costCentre", "date"}) {
		t.Fatalf("required = %v, want amount, costCentre and date in one question", schema.Required)
	}
	out := s.Answer(t, map[string]any{"amount": 42, "currency": "EUR", "date": "2026-11-24", "costCentre": "CC-4420"}).Outcome
	if out.Kind() != askpoint.OutcomeComplete {
		t.Fatalf("Resume() outcome = %q (%s), want complete", out.Kind(), out.Text())
	}
	if !strings.Contains(out.Text(), "CC-4420") || !strings.Contains(out.Text(), "42.00 EUR") {
		t.Errorf("completion message %q does not name the amount and cost centre", out.Text())
	}
}

func TestSingleCostCentreNeedsNoQuestion(t *testing.T) {
	a := expense.Agent(expense.Fixture{Default: []string{"CC-4410"}}, expense.IDLedger{}, clock)
	if s := run(t, a, "File my taxi receipt from Tuesday, 42 euros"); s.State != a2a.TaskStateCompleted {
		t.Fatalf("Start() = %s, want completed without asking", s.State)
	}
}

func TestSameStepKeyFilesTheSameExpenseID(t *testing.T) {
	l := expense.IDLedger{}
	a, _ := l.File(context.Background(), "task-1/q-1", expense.Expense{})
	b, _ := l.File(context.Background(), "task-1/q-1", expense.Expense{})
	c, _ := l.File(context.Background(), "task-2/q-1", expense.Expense{})
	if a != b || a == c {
		t.Errorf("IDs %q, %q, %q: want the same key to give the same ID and another key another", a, b, c)
	}
}
