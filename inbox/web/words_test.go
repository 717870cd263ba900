package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/question"
)

// Issue 32, point 3: the form speaks in words. Labels come from the
// schema's title, else the field's name in words (costCentre is "Cost
// centre"); constraints and errors never show a regular expression (a
// pattern with a description says the description; one without says "in
// the expected format" with the schema's example); a missing answer is
// "required" in a sentence. Read from the rendered page, at both sizes,
// in the page's own check and in the inbox's.
func TestTheFormSaysFieldsConstraintsAndErrorsInWords(t *testing.T) {
	ctx := newBrowser(t)
	env := approvalEnv(t, false)
	in := startInbox(t, nil)
	multi, _ := deferTo(t, env, in.ib, "expense", "File my taxi receipt") // amount, date (a pattern), costCentre, currency
	code, _, err := in.ib.Add(t.Context(), inbox.FromStatus("http://127.0.0.1:9/agent", "t-code", "ctx", (&question.Question{
		ID: "q-code", Text: "Which booking code?", Expires: time.Now().Add(time.Hour),
		Schema: []byte(`{"type":"object","required":["bookingCode"],"properties":{"bookingCode":{"type":"string","pattern":"^[A-Z]{3}-[0-9]{3}$","examples":["ABC-123"]}}}`),
	}).Message()))
	if err != nil {
		t.Fatal(err)
	}
	browserLogin(t, ctx, in.url+"/", frankToken)

	const labels = `Array.from(document.querySelectorAll("#answer .field[data-kind]")).map(e => (e.querySelector("legend, label").innerText || "").replace(/\s+/g, " ").trim()).join("|")`
	const rules = `Array.from(document.querySelectorAll("#answer .constraints")).map(e => e.innerText).join("|")`
	const errs = `Array.from(document.querySelectorAll("#answer .field[data-kind]")).map(e => e.dataset.name + ": " + e.querySelector("ul.errors").innerText.trim()).join("|")`
	for _, sz := range sizes {
		do(t, ctx, "the multi-field form at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/q/"+itoa(multi.ID)), chromedp.WaitVisible(sel("#answer")))
		if got := js[string](t, ctx, "labels", labels); got != "Amount|Date|Cost centre|Currency (optional)" {
			t.Errorf("%s: labels %q; want Amount|Date|Cost centre|Currency (optional)", sz.name, got)
		}
		if got := js[string](t, ctx, "rules", rules); strings.ContainsAny(got, "^$[") || !strings.Contains(got, "a number, more than 0") {
			t.Errorf("%s: the constraints read %q; want words (a number, more than 0), no regular expression", sz.name, got)
		}
		do(t, ctx, "refusals in the page at "+sz.name,
			chromedp.SendKeys(sel("#field-amount input"), "-5"),
			chromedp.SendKeys(sel("#field-date input"), "yesterday"),
			chromedp.Click(sel("#send")),
			chromedp.WaitVisible(sel("#field-date ul.errors li")),
		)
		want := `amount: must be greater than 0|date: "yesterday" is not in the expected format (the receipt's date, YYYY-MM-DD)|costCentre: This is required.|currency: `
		if got := js[string](t, ctx, "errors", errs); got != want {
			t.Errorf("%s: errors in the page\n%s\nwant\n%s", sz.name, got, want)
		}
		shot(t, ctx, "words-form-"+sz.name)
	}

	// The inbox's own check of a refused answer, sent past the page's.
	do(t, ctx, "a code the pattern refuses, sent",
		chromedp.Navigate(in.url+"/q/"+itoa(code.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.SendKeys(sel("#field-bookingCode input"), "abc"),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("answer").submit()`),
		chromedp.WaitVisible(sel("#field-bookingCode ul.errors li")),
	)
	if got := js[string](t, ctx, "the refusal", `document.querySelector("#field-bookingCode ul.errors").innerText.trim()`); got != `"abc" is not in the expected format, for example ABC-123` {
		t.Errorf("the inbox's refusal of the code: %q; want it in words with the schema's example", got)
	}
	if got := js[string](t, ctx, "label and rules", `document.querySelector("#field-bookingCode label").innerText + " / " + document.querySelector("#field-bookingCode .constraints").innerText`); got != "Booking code / in the expected format, for example ABC-123" {
		t.Errorf("the code's label and constraints: %q", got)
	}
}
