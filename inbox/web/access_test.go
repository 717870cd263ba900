package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/question"
)

// contrastJS lists, for the page as rendered, the text of sel whose
// contrast with the background behind it is under min, and the inputs
// whose border's contrast is under 3 (WCAG 2.2: 1.4.3 and 1.4.11), as
// "what: ratio". The colors are the computed styles.
const contrastJS = `(() => {
  const rgb = c => (c.match(/[\d.]+/g) || []).map(Number);
  const lum = c => { const [r, g, b] = rgb(c).slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const behind = el => { for (; el; el = el.parentElement) { const c = getComputedStyle(el).backgroundColor, a = rgb(c); if (a.length < 4 || a[3] > 0) return c; } return "rgb(255, 255, 255)"; };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const out = [];
  for (const el of document.querySelectorAll(".muted, .hint, .constraints, .crumbs, .request, .subject, .label, th, dt, label.typed, .refuse summary, .digest, .empty, .notice, .problem, .errors li")) {
    if (!el.innerText || !el.innerText.trim() || el.offsetParent === null) continue;
    const r = ratio(getComputedStyle(el).color, behind(el));
    if (r < 4.5) out.push("text " + el.className + " " + JSON.stringify(el.innerText.trim().slice(0, 30)) + ": " + r.toFixed(2));
  }
  for (const el of document.querySelectorAll("input[type=text], input[type=search], input[type=password], input[type=date], textarea, select, .choice")) {
    if (el.offsetParent === null) continue;
    const r = ratio(getComputedStyle(el).borderTopColor, behind(el.parentElement));
    if (r < 3) out.push("border of " + (el.id || el.className || el.tagName) + ": " + r.toFixed(2));
  }
  return out;
})()`

// Issue 32, point 7 (WCAG 2.2 AA), in the browser: muted text is at least
// 4.5:1 and field borders at least 3:1 against what is behind them,
// computed from the rendered pages' styles (they were 4.28-4.44 and
// 1.57); an input the inbox refused says so (aria-invalid) and names its
// error (aria-describedby), and gets the focus; a re-ask's banner is an
// alert and gets the focus; every page has a skip link first; a
// question's page is titled with its text.
func TestPagesMeetContrastAndTellAssistiveTechnologyWhatIsWrong(t *testing.T) {
	ctx := newBrowser(t)
	env := approvalEnv(t, false)
	in := startInbox(t, nil)
	multi, _ := deferTo(t, env, in.ib, "expense", "File my taxi receipt")
	reask, _, err := in.ib.Add(t.Context(), inbox.FromStatus("http://127.0.0.1:9/agent", "t-reask", "ctx", (&question.Question{
		ID: "q-reask", Text: "Which cost centre, again?", Expires: time.Now().Add(time.Hour), Attempt: 2,
		Schema: []byte(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","enum":["CC-4410","CC-4420"]}}}`),
		Errors: []question.FieldError{{Pointer: "/costCentre", Message: "expected one of CC-4410, CC-4420"}},
	}).Message()))
	if err != nil {
		t.Fatal(err)
	}
	browserLogin(t, ctx, in.url+"/", frankToken)

	for _, p := range []string{"/", "/q/" + itoa(multi.ID), "/q/" + itoa(reask.ID), "/?view=answered"} {
		do(t, ctx, "open "+p, chromedp.Navigate(in.url+p), chromedp.WaitReady(sel("main")))
		if bad := js[[]string](t, ctx, "contrast", contrastJS); len(bad) > 0 {
			t.Errorf("%s: too little contrast:\n%s", p, strings.Join(bad, "\n"))
		}
		first := js[string](t, ctx, "the first focusable", `(() => { const e = document.querySelector("a[href], button, input:not([type=hidden]), select, textarea"); return e.className + " " + e.getAttribute("href"); })()`)
		if first != "skip #main" || !js[bool](t, ctx, "main", `!!document.getElementById("main")`) {
			t.Errorf("%s: the first thing to focus is %q; want the skip link to #main", p, first)
		}
	}

	// A re-ask: the banner is an alert, and has the focus.
	do(t, ctx, "the re-ask", chromedp.Navigate(in.url+"/q/"+itoa(reask.ID)), chromedp.WaitVisible(sel("#reask")))
	if role, focused := js[string](t, ctx, "role", `document.getElementById("reask").getAttribute("role")`), js[string](t, ctx, "focus", `document.activeElement.id`); role != "alert" || focused != "reask" {
		t.Errorf("the re-ask's banner: role %q, focus on %q; want an alert with the focus", role, focused)
	}
	if title := js[string](t, ctx, "title", `document.title`); !strings.HasPrefix(title, "Which cost centre, again?") {
		t.Errorf("the question's page is titled %q; want its text", title)
	}
	if got := js[string](t, ctx, "the field's error", `(() => { const fs = document.querySelector("#field-costCentre fieldset");
	  return fs.getAttribute("aria-invalid") + " " + fs.getAttribute("aria-describedby").split(" ").map(id => (document.getElementById(id) || {}).innerText || "").join(" ").trim(); })()`); got != "true Choose one of: CC-4410, CC-4420" {
		t.Errorf("the re-asked field: %q; want aria-invalid and its error named", got)
	}

	// A refusal by the inbox (past the page's own check).
	for _, sz := range sizes {
		do(t, ctx, "a refused date at "+sz.name, viewport(sz.w, sz.h),
			chromedp.Navigate(in.url+"/q/"+itoa(multi.ID)), chromedp.WaitVisible(sel("#answer")),
			chromedp.SendKeys(sel("#field-amount input"), "42"),
			chromedp.SendKeys(sel("#field-date input"), "yesterday"),
			chromedp.Click(sel(`#field-costCentre input[value="CC-4410"]`)),
			chromedp.Evaluate[chromedp.Void](`document.getElementById("answer").submit()`),
			chromedp.WaitVisible(sel("#field-date ul.errors li")),
		)
		got := js[string](t, ctx, "the refused input", `(() => { const i = document.querySelector("#field-date input");
		  return i.getAttribute("aria-invalid") + "|" + (document.activeElement === i) + "|" + i.getAttribute("aria-describedby").split(" ").map(id => (document.getElementById(id) || {}).innerText || "").join(" ").trim(); })()`)
		if want := `true|true|the receipt's date, YYYY-MM-DD "yesterday" is not in the expected format (the receipt's date, YYYY-MM-DD)`; got != want {
			t.Errorf("%s: the refused date input: %q; want %q (invalid, focused, its hint and error named)", sz.name, got, want)
		}
		shot(t, ctx, "access-refused-"+sz.name)
		// The page's own check marks and clears the input as the person types.
		do(t, ctx, "type a good date", chromedp.Evaluate[chromedp.Void](`document.querySelector("#field-date input").value = ""`),
			chromedp.SendKeys(sel("#field-date input"), "2026-11-20"), chromedp.WaitNotPresent(sel("#field-date ul.errors li")))
		if v := js[string](t, ctx, "aria-invalid", `String(document.querySelector("#field-date input").getAttribute("aria-invalid"))`); v != "null" {
			t.Errorf("%s: after a good date the input still says aria-invalid=%s", sz.name, v)
		}
	}
}
