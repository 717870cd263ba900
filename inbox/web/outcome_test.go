package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/examples/planning"
	"github.com/askpoint/askpoint/internal/apitest"
)

// Issue 32, point 5: after a decision the task page says what happened in
// its own words. A decline reads as declined (not a green "declined" under
// "The caller declined"), the status sentence is said once (it was said
// three times), a data-only artifact shows its keys and values (it showed
// "payment:"), and the planning workflow's transcript is readable, not one
// paragraph of inline JSON. At both sizes.
func TestTheTaskPageSaysWhatTheDecisionDid(t *testing.T) {
	ctx := newBrowser(t)
	ln, base := apitest.Listen(t, "")
	chat, err := planning.Workflow(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Listener: ln, Agents: []askpoint.AgentSpec{
		{Name: "approval", Agent: approval.Agent(), Card: approval.Card()},
		{Name: "planner", Agent: planning.Planner(), Card: planning.PlannerCard()},
		{Name: "planning", Agent: chat, Card: planning.WorkflowCard()},
	}})
	in := startInbox(t, nil)
	declined, _ := deferTo(t, env, in.ib, "approval", "Pay invoice INV-7: 80 EUR to ACME")
	paid, _ := deferTo(t, env, in.ib, "approval", "Pay invoice INV-8: 90 EUR to ACME")
	planned, _ := deferTo(t, env, in.ib, "planning", "File my taxi receipt from Tuesday, 42 euros")
	browserLogin(t, ctx, in.url+"/", frankToken)

	do(t, ctx, "decline", chromedp.Navigate(in.url+"/q/"+itoa(declined.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Click(sel("#refuse summary")), chromedp.SendKeys(sel("#reason"), "Not our supplier"), chromedp.Click(sel("#decline")),
		chromedp.WaitVisible(sel("#state")))
	for _, sz := range sizes {
		do(t, ctx, "the declined task at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/tasks/"+declined.TaskID), chromedp.WaitVisible(sel("#state")))
		if got := val(t, ctx, "outcome", chromedp.Text(sel("#outcome"))); got != "frank declined to answer; the task is rejected." {
			t.Errorf("%s: the declined task says %q; want that frank declined", sz.name, got)
		}
		if c := js[string](t, ctx, "the verb's color", `getComputedStyle(document.querySelector(".verb")).color`); c == "rgb(6, 118, 71)" {
			t.Errorf("%s: declined is shown in green (%s)", sz.name, c)
		}
		status := val(t, ctx, "status", chromedp.Text(sel("#status")))
		if n := strings.Count(js[string](t, ctx, "the page", `document.querySelector("main").innerText`), status); status == "" || n != 1 {
			t.Errorf("%s: the status %q is said %d times; want once", sz.name, status, n)
		}
		shot(t, ctx, "outcome-declined-"+sz.name)
	}

	do(t, ctx, "approve", chromedp.Navigate(in.url+"/q/"+itoa(paid.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Click(sel(`#field-approve input[value="true"]`)), chromedp.Click(sel("#send")), chromedp.WaitVisible(sel("#state")))
	art := val(t, ctx, "the artifact", chromedp.Text(sel(".artifact")))
	for _, want := range []string{"Payment", "Invoice\nINV-8", "Amount\n90", "Paid\ntrue"} {
		if !strings.Contains(art, want) {
			t.Errorf("the payment's artifact reads %q; want %q in it", art, want)
		}
	}
	shot(t, ctx, "outcome-paid-1280")

	do(t, ctx, "answer the planning workflow's question", viewport(1280, 900), chromedp.Navigate(in.url+"/q/"+itoa(planned.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Click(sel(`#field-costCentre input[value="CC-4410"]`)), chromedp.Click(sel("#send")), chromedp.WaitVisible(sel("#state")))
	for _, sz := range sizes {
		do(t, ctx, "the planning task at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/tasks/"+planned.TaskID), chromedp.WaitVisible(sel(".artifact")))
		inline := js[int](t, ctx, "inline JSON", `Array.from(document.querySelectorAll("main p, main div.text, main code")).filter(e => /^\s*[\[{]".*[}\]]\s*$/s.test(e.innerText) && !e.innerText.includes("\n")).length`)
		lines := js[int](t, ctx, "the transcript's lines", `Math.max(0, ...Array.from(document.querySelectorAll(".artifact")).map(e => e.innerText.split("\n").length))`)
		if inline > 0 || lines < 4 {
			t.Errorf("%s: the planning task shows %d paragraphs of inline JSON, its artifact %d lines; want it readable, line by line\n%s", sz.name, inline, lines, js[string](t, ctx, "the page", `document.querySelector("main").innerText`))
		}
		if w := js[int64](t, ctx, "scrollWidth", `document.documentElement.scrollWidth`); w > sz.w {
			t.Errorf("%s: the planning task is %d px wide", sz.name, w)
		}
		shot(t, ctx, "outcome-planning-"+sz.name)
	}
}
