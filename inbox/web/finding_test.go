package web_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/question"
)

// submitFilter sends the list's filter form and waits for the new list.
func submitFilter() chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Evaluate[chromedp.Void](`document.body.dataset.old = "1"`),
		chromedp.Click(sel("#filter button")),
		chromedp.WaitVisible(sel("body:not([data-old]) #items")),
	)
}

// rowsJS lists the list's rows by their question's key.
const rowsJS = `Array.from(document.querySelectorAll("#items tbody tr")).map(r => r.dataset.key)`

// Issue 32, point 6: the list is filtered by agent and by text, sorted by
// time left, and has an answered view; a filtered list stays filtered as
// it updates by itself. At both sizes.
func TestTheListFiltersSortsAndShowsWhatWasAnswered(t *testing.T) {
	ctx := newBrowser(t)
	env := approvalEnv(t, false)
	in := startInbox(t, nil)
	taxi, _ := deferTo(t, env, in.ib, "expense", "File my taxi receipt from Tuesday, 42 euros")
	hotel, _ := deferTo(t, env, in.ib, "expense", "File my hotel bill from 2026-11-20, 180 euros")
	pay, _ := deferTo(t, env, in.ib, "approval", "Pay invoice INV-7: 80 EUR to ACME")
	add := func(key, agent string, left time.Duration) *inbox.Item {
		it, _, err := in.ib.Add(t.Context(), inbox.FromStatus(agent, "t-"+key, "ctx", (&question.Question{
			ID: key, Text: "Which hotel cost centre, " + key + "?", Expires: time.Now().Add(left),
			Schema: []byte(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","enum":["CC-4410","CC-4420"]}}}`),
		}).Message()))
		if err != nil {
			t.Fatal(err)
		}
		return it
	}
	soon := add("q-soon", "http://127.0.0.1:9/other", 10*time.Minute)
	browserLogin(t, ctx, in.url+"/", frankToken)
	approvalURL := env.AgentURL("approval")

	for _, sz := range sizes {
		do(t, ctx, "the list at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#filter")))
		do(t, ctx, "filter by the approval agent",
			chromedp.SetValue(sel("#filter-agent"), approvalURL), submitFilter())
		if got := js[[]string](t, ctx, "rows", rowsJS); strings.Join(got, ",") != pay.Key {
			t.Errorf("%s: filtered by the approval agent: %v; want only %s", sz.name, got, pay.Key)
		}
		do(t, ctx, "search hotel", chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#filter")),
			chromedp.SendKeys(sel("#filter-q"), "hotel bill"), submitFilter())
		if got := js[[]string](t, ctx, "rows", rowsJS); strings.Join(got, ",") != hotel.Key {
			t.Errorf("%s: searched for \"hotel bill\" (the request's words): %v; want only %s", sz.name, got, hotel.Key)
		}
		do(t, ctx, "least time left first", chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#filter")),
			chromedp.SetValue(sel("#filter-sort"), "left"), submitFilter())
		if got := js[[]string](t, ctx, "rows", rowsJS); len(got) != 4 || got[0] != soon.Key {
			t.Errorf("%s: by time left: %v; want %s (10 minutes left) first of 4", sz.name, got, soon.Key)
		}
		shot(t, ctx, "finding-sorted-"+sz.name)
	}

	// Filtered, the list updates by itself and stays filtered.
	do(t, ctx, "search hotel", chromedp.Navigate(in.url+"/?q=hotel"), chromedp.WaitVisible(sel("#items tr")))
	later := add("q-later", "http://127.0.0.1:9/other", time.Hour)
	do(t, ctx, "the new hotel question appears", chromedp.WaitVisible(sel(`#items tr[data-key="`+later.Key+`"]`)))
	for _, k := range js[[]string](t, ctx, "rows", rowsJS) {
		if k == taxi.Key || k == pay.Key {
			t.Errorf("after a live update the list filtered by \"hotel\" shows %s", k)
		}
	}

	// Answered: it leaves the waiting list for the answered view.
	do(t, ctx, "answer the taxi", chromedp.Navigate(in.url+"/q/"+itoa(taxi.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Click(sel(`#field-costCentre input[value="CC-4410"]`)), chromedp.Click(sel("#send")), chromedp.WaitVisible(sel("#state")))
	for _, sz := range sizes {
		do(t, ctx, "the list at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#view-answered")))
		do(t, ctx, "the answered view", chromedp.Navigate(js[string](t, ctx, "the answered link", `document.getElementById("view-answered").href`)), chromedp.WaitVisible(sel("#items")))
		row := val(t, ctx, "the answered view", chromedp.Text(sel("#items")))
		if !strings.Contains(row, "File my taxi receipt") || !strings.Contains(row, "answered by person (frank)") || strings.Contains(row, "Pay invoice") {
			t.Errorf("%s: the answered view reads %q; want the taxi, answered by frank, and not the open approval", sz.name, row)
		}
		shot(t, ctx, "finding-answered-"+sz.name)
	}
}

// Issue 32, point 6: serve's /inbox/ page links each task's history and,
// for the principals named for them, the stats; it has the answered view
// too. The history page is behind the same login as the form, and shows a
// principal their own tasks only.
func TestTheServerPageLinksTaskHistoryAndStats(t *testing.T) {
	ctx := newBrowser(t)
	env := approvalEnv(t, true)
	alice := env.ClientAs(t, "approval", a2a.TransportProtocolJSONRPC, aliceToken)
	send := func(text string) *a2a.Task {
		res, err := alice.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task)
	}
	open, done := send("Pay invoice INV-7: 80 EUR to ACME"), send("Pay invoice INV-8: 90 EUR to ACME")
	base := startServerPage(t, env, func(c *web.ServerPageConfig) {
		c.Stats = func() ([]string, [][]string) { return []string{"AGENT", "ASKED"}, [][]string{{"approval", "2"}} }
		c.StatsPrincipals = []string{"alice"}
	})
	history := base + "/inbox/tasks/approval/" + string(open.ID)

	// The door: no login, another principal.
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := anon.Get(history)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/inbox/login") {
		t.Errorf("the history without a login: %d to %q; want 303 to /inbox/login", res.StatusCode, res.Header.Get("Location"))
	}
	if code, _ := get(t, loginAt(t, base, bobToken), history); code != http.StatusNotFound {
		t.Errorf("bob opening alice's task's history: %d, want 404", code)
	}
	if _, page := get(t, loginAt(t, base, bobToken), base+"/inbox/"); strings.Contains(page, `id="stats-link"`) {
		t.Error("bob's list links the stats, which he may not see")
	}

	browserLogin(t, ctx, base+"/inbox/", aliceToken)
	do(t, ctx, "answer one", chromedp.Navigate(base+"/inbox/t/approval/"+string(done.ID)), chromedp.WaitVisible(sel("#answer")),
		chromedp.Click(sel(`#field-approve input[value="true"]`)), chromedp.Click(sel("#send")), chromedp.WaitVisible(sel("#notice")))
	for _, sz := range sizes {
		do(t, ctx, "the list at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(base+"/inbox/"), chromedp.WaitVisible(sel("#task-"+string(open.ID))))
		// Links are followed by their href: the live list may redraw a row
		// under a click.
		link := js[string](t, ctx, "the task's link", `document.querySelector("#task-`+string(open.ID)+` td.task a").href`)
		do(t, ctx, "the task's history", chromedp.Navigate(link), chromedp.WaitVisible(sel("#history")))
		if got := val(t, ctx, "history", chromedp.Text(sel("#history"))); !strings.Contains(got, "Pay invoice INV-7: 80 EUR to ACME") || !strings.Contains(got, "agent asks") {
			t.Errorf("%s: the task's history reads %q; want the request and the question", sz.name, got)
		}
		do(t, ctx, "the list", chromedp.Navigate(base+"/inbox/"), chromedp.WaitVisible(sel("#stats-link")))
		do(t, ctx, "the stats", chromedp.Navigate(js[string](t, ctx, "the stats link", `document.getElementById("stats-link").href`)), chromedp.WaitVisible(sel("table.stats")))
		do(t, ctx, "the list", chromedp.Navigate(base+"/inbox/"), chromedp.WaitVisible(sel("#view-answered")))
		do(t, ctx, "the answered view", chromedp.Navigate(js[string](t, ctx, "the answered link", `document.getElementById("view-answered").href`)),
			chromedp.WaitVisible(sel("#task-"+string(done.ID))))
		if got := val(t, ctx, "answered", chromedp.Text(sel("#items"))); !strings.Contains(got, "completed") || js[bool](t, ctx, "the open task", `!!document.getElementById("task-`+string(open.ID)+`")`) {
			t.Errorf("%s: the answered view reads %q; want the completed task only", sz.name, got)
		}
		do(t, ctx, "its history", chromedp.Navigate(js[string](t, ctx, "its link", `document.querySelector("#task-`+string(done.ID)+` a.open").href`)), chromedp.WaitVisible(sel("#outcome")))
		if got := val(t, ctx, "outcome", chromedp.Text(sel("#outcome"))); got != "alice answered; the task is completed." {
			t.Errorf("%s: the answered task's page says %q", sz.name, got)
		}
		shot(t, ctx, "serverpage-history-"+sz.name)
	}
}
