package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/internal/browsertest"
	"github.com/askpoint/askpoint/question"
)

// Issue 32, point 1: the approval example's question above 1000 EUR has a
// required field named reason, the name the decline form used: the inbox
// dropped it, and the payment could not be approved in the browser (422
// "missing required field reason", the typed text erased). The agent's
// fields now have a namespace of their own in the form; the reason is
// asked once (point 3: the question's own reason is the justification, no
// second "why" box), and the record keeps it. At both faces, both sizes.
func TestALargePaymentIsApprovedWithItsReasonInTheBrowser(t *testing.T) {
	ctx := newBrowser(t)
	const reason = "Budgeted in the Q4 plan"

	// The web inbox (askpoint inbox --web).
	env := approvalEnv(t, false)
	in := startInbox(t, nil)
	it, c := deferTo(t, env, in.ib, "approval", "Pay invoice INV-9: 1200 EUR to ACME")
	browserLogin(t, ctx, in.url+"/", frankToken)
	form := in.url + "/q/" + itoa(it.ID)
	for _, sz := range sizes {
		do(t, ctx, "the form at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(form), chromedp.WaitVisible(sel("#answer")))
		shot(t, ctx, "approval-form-"+sz.name)
	}
	approveIn(t, ctx, "the web inbox", reason)
	if state := val(t, ctx, "state", chromedp.TextContent(sel("#state"))); state != "completed" {
		t.Fatalf("the web inbox: after approving, the task page says %q; want completed\n%s", state, browsertest.Shown(ctx))
	}
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(it.TaskID)})
	if err != nil {
		t.Fatal(err)
	}
	checkApproved(t, "the web inbox", task, "frank", reason)

	// askpoint serve's /inbox/ page.
	tenv := approvalEnv(t, true)
	alice := tenv.ClientAs(t, "approval", a2a.TransportProtocolJSONRPC, aliceToken)
	res, err := alice.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Pay invoice INV-9: 1200 EUR to ACME"))})
	if err != nil {
		t.Fatal(err)
	}
	paused := res.(*a2a.Task)
	base := startServerPage(t, tenv, nil)
	browserLogin(t, ctx, base+"/inbox/", aliceToken)
	do(t, ctx, "the server page's form", chromedp.Navigate(base+"/inbox/t/approval/"+string(paused.ID)), chromedp.WaitVisible(sel("#answer")))
	approveIn(t, ctx, "the server page", reason)
	do(t, ctx, "the notice", chromedp.WaitVisible(sel("#notice")))
	task, err = alice.GetTask(t.Context(), &a2a.GetTaskRequest{ID: paused.ID})
	if err != nil {
		t.Fatal(err)
	}
	checkApproved(t, "the server page", task, "alice", reason)
}

// approveIn answers the open approval form: "Yes, pay", with the reason in
// the question's own field; it checks the form asks for a reason once and
// shows the options by their labels.
func approveIn(t *testing.T, ctx context.Context, face, reason string) {
	t.Helper()
	whys := js[int](t, ctx, "why boxes", `document.querySelectorAll("#answer textarea, #answer input[type=text]").length`)
	if whys != 1 || js[bool](t, ctx, "the inbox's box", `!!document.getElementById("justification")`) {
		t.Errorf("%s: the form has %d text boxes (the inbox's own justification: %v); want one, the question's reason",
			face, whys, js[bool](t, ctx, "the inbox's box", `!!document.getElementById("justification")`))
	}
	opts := js[string](t, ctx, "options", `Array.from(document.querySelectorAll("#field-approve .choice")).map(e => e.innerText.trim()).join("|")`)
	if opts != "Yes, pay|No" {
		t.Errorf("%s: the approve options read %q; want their labels only (Yes, pay|No), no true/false", face, opts)
	}
	do(t, ctx, face+": approve with a reason",
		chromedp.Click(sel(`#field-approve input[value="true"]`)),
		chromedp.SendKeys(sel("#field-reason textarea, #field-reason input"), reason),
		chromedp.Click(sel("#send")),
		chromedp.WaitNotPresent(sel("#answer")),
	)
}

// checkApproved checks the task was paid with the reason, and the
// decision record names who and keeps the reason as its justification.
func checkApproved(t *testing.T, face string, task *a2a.Task, who, reason string) {
	t.Helper()
	if task.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("%s: the task is %s; want completed (paid)", face, task.Status.State)
	}
	paid := ""
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if m, ok := d.Value.(map[string]any); ok {
					paid, _ = m["reason"].(string)
				}
			}
		}
	}
	d := lastDecisionOf(t, task)
	if paid != reason || d.By.Name != who || d.Decision != question.DecisionAnswered || d.Justification != reason {
		t.Errorf("%s: the payment's reason %q, decision %+v; want %q, answered by %s with it as the justification", face, paid, d, reason, who)
	}
	if strings.Contains(d.Justification, "\n") {
		t.Errorf("%s: justification %q", face, d.Justification)
	}
}
