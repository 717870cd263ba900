package web_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/booking"
	"github.com/askpoint/askpoint/internal/apitest"
)

// Issue 32, point 2: the booking's question is open for 30 minutes while
// its seat is held for 10; the list and the form say what is held and for
// how long, so that the person does not read the question's time as the
// seat's.
func TestTheListAndTheFormShowWhatTheTaskHoldsAndUntilWhen(t *testing.T) {
	ctx := newBrowser(t)
	env := apitest.Start(t, apitest.Options{Quiet: true,
		Agents: []askpoint.AgentSpec{{Name: "booking", Agent: booking.Agent(booking.NewInventory(), nil), Card: booking.Card()}}})
	in := startInbox(t, nil)
	it, _ := deferTo(t, env, in.ib, "booking", "Book seat 14C on flight AP123")
	if len(it.Question.Holds) != 1 || it.Question.Holds[0].Name != "seat 14C on AP123" {
		t.Fatalf("the question's holds = %+v, want the seat the agent holds", it.Question.Holds)
	}
	if !it.Question.Holds[0].Until.Before(it.Question.Expires) {
		t.Fatalf("the hold lasts until %v and the question until %v; the test needs a hold that lapses first", it.Question.Holds[0].Until, it.Question.Expires)
	}
	browserLogin(t, ctx, in.url+"/", frankToken)
	for _, sz := range sizes {
		do(t, ctx, "the list at "+sz.name, viewport(sz.w, sz.h), chromedp.Navigate(in.url+"/"), chromedp.WaitVisible(sel("#items tr")))
		row := val(t, ctx, "the row", chromedp.Text(sel("#task-"+it.TaskID)))
		if !strings.Contains(row, "Held: seat 14C on AP123 (for 10m") && !strings.Contains(row, "Held: seat 14C on AP123 (for 9m") {
			t.Errorf("%s: the row lacks the hold and its time:\n%s", sz.name, row)
		}
		do(t, ctx, "the form at "+sz.name, chromedp.Navigate(in.url+"/q/"+itoa(it.ID)), chromedp.WaitVisible(sel("#holds")))
		held := strings.Join(strings.Fields(val(t, ctx, "the holds", chromedp.Text(sel("#holds dd")))), " ")
		if !strings.HasPrefix(held, "seat 14C on AP123: held for 9m") && !strings.HasPrefix(held, "seat 14C on AP123: held for 10m") || !strings.HasSuffix(held, " more") {
			t.Errorf("%s: the form says %q of the hold, want the seat held for its own ten minutes (the question has thirty)", sz.name, held)
		}
		shot(t, ctx, "holds-"+sz.name)
	}
}
