package mcpbridge_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/question"
)

// The tools are the agents, named and described from their cards.
func TestToolsAreTheAgentsCards(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if tl.Name == "expense_agent" {
			if tl.Title != "Expense agent" || !strings.Contains(tl.Description, "Files expense receipts") || !strings.Contains(tl.Description, "File an expense") {
				t.Errorf("expense_agent: title %q, description %q: want the card's name, description and skill", tl.Title, tl.Description)
			}
			if !strings.Contains(dump(tl.InputSchema), `"message"`) || !strings.Contains(dump(tl.InputSchema), `"data"`) {
				t.Errorf("input schema %s: want message and data", dump(tl.InputSchema))
			}
		}
	}
	if want := []string{"expense_agent", "payment_approval", "travel"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
}

// The SDK's own multi round-trip loop fills the form in and retries; the
// answer reaches the agent with the question's ID and a decision record,
// and the artifact is the tool result.
func TestExpenseRoundTripToTheArtifact(t *testing.T) {
	r := newRig(t, nil)
	var asked *mcp.ElicitParams
	cs := r.connect(t, "alice", "", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = req.Params
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"costCentre": "CC-4420"}}, nil
	})
	res := call(t, cs, "expense_agent", "File my taxi receipt from Tuesday, 42 euros")
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	if asked == nil || !strings.Contains(asked.Message, "Which cost centre") {
		t.Fatalf("the form asked %+v, want the cost centre question", asked)
	}
	cc := properties(t, asked)["properties"].(map[string]any)["costCentre"].(map[string]any)
	if dump(cc["enum"]) != `["CC-4410","CC-4420"]` || cc["oneOf"] != nil {
		t.Errorf("costCentre = %s, want the two unlabelled options as an untitled enum", dump(cc))
	}
	sc, ok := res.StructuredContent.(map[string]any)
	if !ok || sc["costCentre"] != "CC-4420" || sc["expenseId"] == nil {
		t.Errorf("structuredContent = %s, want the filed expense charged to CC-4420", dump(res.StructuredContent))
	}
	if !strings.Contains(text(res), "Filed expense") {
		t.Errorf("text %q, want the artifact's summary", text(res))
	}
	task := r.task(t, "expense", res.Meta["dev.askpoint/taskId"])
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task is %s", task.Status.State)
	}
	var sent *a2a.Message
	for _, m := range task.History {
		if m.Role == a2a.MessageRoleUser && len(m.Extensions) > 0 {
			sent = m
		}
	}
	if sent == nil {
		t.Fatalf("no answer in the task's history: %s", dump(task.History))
	}
	d, ok, err := question.DecisionOf(sent)
	if !ok || err != nil {
		t.Fatalf("the answer carries no decision record (%v): %s", err, dump(sent.Metadata))
	}
	if d.By.Kind != "person" || d.By.Name != "user:alice" || !strings.HasPrefix(d.By.Via, "MCP") || d.QuestionID == "" {
		t.Errorf("decision record %+v: want by person user:alice via MCP, with the question ID", d)
	}
}

// Labelled options keep their labels, whatever their values; a decline
// goes to the agent as a decline, and the task's end is the result.
func TestApprovalLabelsAndDecline(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "payment_approval", "Pay invoice INV-7: 80 EUR to ACME")
	key, ep := form(t, res)
	if !strings.Contains(ep.Message, "Pay 80 EUR to ACME") {
		t.Errorf("message %q", ep.Message)
	}
	props := properties(t, ep)
	approve := props["properties"].(map[string]any)["approve"].(map[string]any)
	if dump(approve["oneOf"]) != `[{"const":"true","title":"Yes, pay"},{"const":"false","title":"No"}]` {
		t.Errorf("approve = %s, want the labelled options", dump(approve))
	}
	reason := props["properties"].(map[string]any)["reason"].(map[string]any)
	if reason["type"] != "string" || reason["maxLength"] != 200.0 {
		t.Errorf("reason = %s, want a string of at most 200", dump(reason))
	}
	if dump(props["required"]) != `["approve"]` {
		t.Errorf("required = %s", dump(props["required"]))
	}
	res, err := retry(t, cs, "payment_approval", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "decline"}}, res.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(text(res), "rejected") || !strings.Contains(text(res), "declined") {
		t.Errorf("result %s, want a tool error saying the task was rejected as declined", dump(res))
	}
	task := r.task(t, "approval", res.Meta["dev.askpoint/taskId"])
	if task.Status.State != a2a.TaskStateRejected {
		t.Errorf("task is %s, want rejected", task.Status.State)
	}
}

// A choice by its label's value, then dates and bounded integers; an
// answer the agent's own check refuses comes back as its re-ask, with its
// error in the message; then a confirmation, and the booking.
func TestTravelReaskAfterTheAgentsCheck(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "travel", "A trip for two in May")
	_, ep := form(t, res)
	city := properties(t, ep)["properties"].(map[string]any)["answer"].(map[string]any)
	if !strings.Contains(dump(city["oneOf"]), `{"const":"Rome","title":"Rome, Italy"}`) {
		t.Fatalf("city = %s, want the cities with their labels", dump(city))
	}
	res = answer(t, cs, "travel", res, map[string]any{"answer": "Rome"})
	first, ep := form(t, res)
	props := properties(t, ep)
	p := props["properties"].(map[string]any)
	if dump(p["start"]) != `{"format":"date","title":"First day","type":"string"}` ||
		dump(p["travellers"]) != `{"maximum":9,"minimum":1,"title":"Travellers","type":"integer"}` {
		t.Errorf("trip form = %s, want dates and a bounded integer", dump(props))
	}
	if dump(props["required"]) != `["start","end","travellers"]` {
		t.Errorf("required = %s", dump(props["required"]))
	}
	res = answer(t, cs, "travel", res, map[string]any{"start": "2027-05-10", "end": "2027-05-01", "travellers": 2})
	again, ep := form(t, res)
	if again == first {
		t.Errorf("the re-ask has the question ID %s of the first ask", again)
	}
	if !strings.Contains(ep.Message, "the last day is before the first") || !strings.Contains(ep.Message, "not accepted") {
		t.Errorf("re-ask message %q, want the agent's error", ep.Message)
	}
	res = answer(t, cs, "travel", res, map[string]any{"start": "2027-05-01", "end": "2027-05-04", "travellers": 2})
	_, ep = form(t, res)
	confirm := properties(t, ep)["properties"].(map[string]any)["answer"].(map[string]any)
	if dump(confirm["oneOf"]) != `[{"const":"true","title":"Yes, book it"},{"const":"false","title":"No"}]` {
		t.Errorf("confirmation = %s", dump(confirm))
	}
	if !strings.Contains(ep.Message, "Book Rome, 2027-05-01 to 2027-05-04, for 2 at 720 EUR?") {
		t.Errorf("confirmation message %q", ep.Message)
	}
	res = answer(t, cs, "travel", res, map[string]any{"answer": "true"})
	if res.IsError || res.NeedsInput() || text(res) != "Booked Rome: TRV-001" {
		t.Fatalf("result %s, want the booking", dump(res))
	}
	if r.desk.Bookings() != 1 {
		t.Errorf("%d bookings, want 1", r.desk.Bookings())
	}
}

// An answer that fails the question is refused by the bridge, as the
// agent would refuse it, and never reaches the agent: the same question
// comes back with why.
func TestAnInvalidAnswerNeverReachesTheAgent(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "expense_agent", "File my taxi receipt from Tuesday, 42 euros")
	key, _ := form(t, res)
	before := snapshot(r.task(t, "expense", res.Meta["dev.askpoint/taskId"]))
	res = answer(t, cs, "expense_agent", res, map[string]any{"costCentre": "CC-9999"})
	again, ep := form(t, res)
	if again != key {
		t.Errorf("asked %s, want the same question %s again", again, key)
	}
	if !strings.Contains(ep.Message, "That answer was not sent: Choose one of: CC-4410, CC-4420.") {
		t.Errorf("message %q, want why the answer was not sent", ep.Message)
	}
	if after := snapshot(r.task(t, "expense", res.Meta["dev.askpoint/taskId"])); after != before {
		t.Errorf("the task changed: %s, was %s", after, before)
	}
	res = answer(t, cs, "expense_agent", res, map[string]any{"costCentre": "CC-4410"})
	if res.IsError || res.StructuredContent.(map[string]any)["costCentre"] != "CC-4410" {
		t.Fatalf("result %s", dump(res))
	}
}

// What the form cannot say (the date's pattern) is said, and refused, in
// people's words: never a regular expression.
func TestAPatternIsSaidInWords(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "expense_agent", "File my taxi receipt")
	_, ep := form(t, res)
	date := properties(t, ep)["properties"].(map[string]any)["date"].(map[string]any)
	if strings.Contains(dump(date), "^[0-9]") || date["description"] != "the receipt's date, YYYY-MM-DD" {
		t.Errorf("date = %s, want its description and no pattern", dump(date))
	}
	res = answer(t, cs, "expense_agent", res, map[string]any{"amount": 42, "currency": "EUR", "date": "Tuesday", "costCentre": "CC-4410"})
	_, ep = form(t, res)
	if strings.Contains(ep.Message, "^[0-9]") || !strings.Contains(ep.Message, `"Tuesday" is not in the expected format (the receipt's date, YYYY-MM-DD)`) {
		t.Errorf("message %q, want the date refused in words", ep.Message)
	}
}
