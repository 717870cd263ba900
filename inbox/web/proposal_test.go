package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// roomAnswer is what the proposing agent's question takes.
type roomAnswer struct {
	Nights int    `json:"nights"`
	Room   string `json:"room"`
}

// proposer asks to book a room and proposes 3 nights in a double (the
// schema's defaults); it completes with what it was told.
func proposer() askpoint.Agent {
	return askpoint.Steps[struct{}, roomAnswer]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{
				Text: "Book the room for the conference?",
				Schema: []byte(`{"type":"object","required":["nights","room"],"properties":{
					"nights":{"type":"integer","minimum":1,"maximum":14,"default":3},
					"room":{"type":"string","oneOf":[{"const":"single","title":"Single room"},{"const":"double","title":"Double room"}],"default":"double"}}}`),
			}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, a roomAnswer) (askpoint.Outcome, error) {
			return askpoint.Complete().WithMessage(fmt.Sprintf("Booked %d nights in a %s room.", a.Nights, a.Room)), nil
		},
	}
}

// Issue 32, point 8: a question's proposed values (the schema's defaults)
// are in the form, prefilled, marked as the agent's proposal and editable;
// the decision record says whether the person accepted them (answered) or
// changed them (edited), and the task page says it in words. At both
// sizes.
func TestProposedValuesArePrefilledAndTheRecordSaysAcceptedOrChanged(t *testing.T) {
	ctx := newBrowser(t)
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{{Name: "rooms", Agent: proposer(),
		Card: a2a.AgentCard{Name: "Rooms", Description: "Books a room; proposes one."}}}})
	in := startInbox(t, nil)
	kept, c := deferTo(t, env, in.ib, "rooms", "Book my room for the Lisbon conference")
	changed, _ := deferTo(t, env, in.ib, "rooms", "Book my room for the Porto conference")
	browserLogin(t, ctx, in.url+"/", frankToken)
	for _, sz := range sizes {
		do(t, ctx, "the form at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/q/"+itoa(kept.ID)), chromedp.WaitVisible(sel("#answer")))
		got := js[string](t, ctx, "the proposal", `document.querySelector("#field-nights input").value + "|" +
		  document.querySelector('#field-room input[value="double"]').checked + "|" +
		  Array.from(document.querySelectorAll(".proposed")).map(e => e.innerText).join("|")`)
		if want := "3|true|The agent proposes 3: keep it or change it.|The agent proposes Double room: keep it or change it."; got != want {
			t.Errorf("%s: the form shows %q; want the proposal prefilled and said: %q", sz.name, got, want)
		}
		shot(t, ctx, "proposal-form-"+sz.name)
	}
	do(t, ctx, "accept", chromedp.Click(sel("#send")), chromedp.WaitVisible(sel("#outcome")))
	if got := val(t, ctx, "outcome", chromedp.Text(sel("#outcome"))); got != "frank accepted the agent's proposal; the task is completed." {
		t.Errorf("after accepting: %q", got)
	}
	do(t, ctx, "change the nights", chromedp.Navigate(in.url+"/q/"+itoa(changed.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#field-nights input").value = ""`),
		chromedp.SendKeys(sel("#field-nights input"), "4"), chromedp.Click(sel("#send")), chromedp.WaitVisible(sel("#outcome")))
	if got := val(t, ctx, "outcome", chromedp.Text(sel("#outcome"))); got != "frank changed the agent's proposal; the task is completed." {
		t.Errorf("after changing: %q", got)
	}
	shot(t, ctx, "proposal-changed-1280")
	for _, x := range []struct {
		id, decision, status string
	}{{kept.TaskID, question.DecisionAnswered, "Booked 3 nights in a double room."}, {changed.TaskID, question.DecisionEdited, "Booked 4 nights in a double room."}} {
		task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(x.id)})
		if err != nil {
			t.Fatal(err)
		}
		d := lastDecisionOf(t, task)
		status := ""
		if task.Status.Message != nil {
			for _, p := range task.Status.Message.Parts {
				if s, ok := p.Content.(a2a.Text); ok {
					status += string(s)
				}
			}
		}
		if d.Decision != x.decision || !strings.Contains(status, x.status) {
			t.Errorf("task %s: decision %q, status %q; want %q and %q", x.id, d.Decision, status, x.decision, x.status)
		}
	}
}
