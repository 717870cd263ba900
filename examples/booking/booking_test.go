package booking_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/booking"
	"github.com/askpoint/askpoint/question"
)

// The agent asks at noon: the seat is held until 12:10, the question is
// open until 12:30.
var noon = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func request(text string) *askpoint.Call {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	return &askpoint.Call{TaskID: "t-1", Request: m, Message: m, Key: "t-1/start"}
}

func agent(inv *booking.Inventory) askpoint.Agent {
	return booking.Agent(inv, func() time.Time { return noon })
}

func start(t *testing.T, a askpoint.Agent, text string) askpoint.Outcome {
	t.Helper()
	out, err := a.Start(context.Background(), request(text))
	if err != nil {
		t.Fatalf("Start(%q) error = %v", text, err)
	}
	return out
}

// ask starts a booking of seat 14C on AP123 and checks that it asked.
func ask(t *testing.T, a askpoint.Agent) (askpoint.Outcome, booking.Checkpoint) {
	t.Helper()
	out := start(t, a, "Book seat 14C on flight AP123")
	if out.Kind() != askpoint.OutcomeAsk {
		t.Fatalf("Start() outcome = %q (%s), want ask", out.Kind(), out.Text())
	}
	cp, ok := out.Checkpoint().(booking.Checkpoint)
	if !ok {
		t.Fatalf("checkpoint is %T, want booking.Checkpoint", out.Checkpoint())
	}
	return out, cp
}

// holds are the ask's holds as the runtime hands them back on resume.
func holds(t *testing.T, ask askpoint.Outcome, lapsed, released bool) []askpoint.HoldStatus {
	t.Helper()
	var out []askpoint.HoldStatus
	for _, h := range ask.Holds() {
		data, err := json.Marshal(h.Data)
		if err != nil {
			t.Fatalf("hold %q data does not encode: %v", h.Name, err)
		}
		out = append(out, askpoint.HoldStatus{Name: h.Name, Until: h.Until, Data: data, Lapsed: lapsed, Released: released})
	}
	return out
}

// release runs the agent's release of every hold of ask, as the runtime
// does at the hold's deadline.
func release(t *testing.T, a askpoint.Agent, ask askpoint.Outcome) {
	t.Helper()
	r, ok := a.(askpoint.Releaser)
	if !ok {
		t.Fatalf("agent %T cannot release holds", a)
	}
	for _, h := range holds(t, ask, true, true) {
		call := &askpoint.Call{TaskID: "t-1", Key: "t-1/hold/" + h.Name}
		if err := r.Release(context.Background(), call, h); err != nil {
			t.Fatalf("Release(%q) error = %v", h.Name, err)
		}
	}
}

// resume feeds an answer to the agent the way the runtime does: the
// checkpoint as JSON, the answer validated against the question, the holds
// handed back.
func resume(t *testing.T, a askpoint.Agent, ask askpoint.Outcome, answer *question.Answer, key string, hs []askpoint.HoldStatus) askpoint.Outcome {
	t.Helper()
	q := ask.Question()
	if answer.Action == "" {
		if errs := q.Validate(answer.Fields); len(errs) > 0 {
			t.Fatalf("answer %s is invalid: %v", answer.Fields, errs)
		}
	}
	cp, err := json.Marshal(ask.Checkpoint())
	if err != nil {
		t.Fatalf("checkpoint does not encode: %v", err)
	}
	call := request("unused")
	call.Key = key
	call.Holds = hs
	out, err := a.Resume(context.Background(), call, &askpoint.Resumption{Checkpoint: cp, Question: q, Answer: answer})
	if err != nil {
		t.Fatalf("Resume() error = %v", err)
	}
	return out
}

func confirm(yes bool) *question.Answer {
	if yes {
		return &question.Answer{Fields: json.RawMessage(`{"confirm":true}`)}
	}
	return &question.Answer{Fields: json.RawMessage(`{"confirm":false}`)}
}

// bookingOf reads the booking artifact of a completed outcome.
func bookingOf(t *testing.T, out askpoint.Outcome) booking.Booking {
	t.Helper()
	if out.Kind() != askpoint.OutcomeComplete || len(out.Artifacts()) != 1 {
		t.Fatalf("outcome = %q (%s) with %d artifacts, want complete with 1", out.Kind(), out.Text(), len(out.Artifacts()))
	}
	var b booking.Booking
	for _, p := range out.Artifacts()[0].Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			raw, _ := json.Marshal(d.Value)
			if err := json.Unmarshal(raw, &b); err != nil {
				t.Fatalf("booking data %s: %v", raw, err)
			}
		}
	}
	if b.Reference == "" {
		t.Fatalf("the artifact holds no booking reference: %+v", out.Artifacts()[0])
	}
	return b
}

func state(t *testing.T, inv *booking.Inventory, id string) string {
	t.Helper()
	r, ok := inv.Reservation(id)
	if !ok {
		t.Fatalf("reservation %s is unknown", id)
	}
	return r.State
}

func TestParseReadsFlightAndSeat(t *testing.T) {
	tests := []struct {
		text, flight, seat, missing string
	}{
		{"Book seat 14C on flight AP123", "AP123", "14C", ""},
		{"book seat 14c on ap123", "AP123", "14C", ""},
		{"AP 456, seat 11a please", "AP456", "11A", ""},
		{"I'd like 20F on AP-789", "AP789", "20F", ""},
		{"Book seat 14C", "", "14C", "a flight number"},
		{"Book flight AP123", "AP123", "", "a seat"},
		{"Book me a nice seat", "", "", "a seat or a flight number"},
	}
	for _, tt := range tests {
		flight, seat, missing := booking.Parse(tt.text)
		if flight != tt.flight || seat != tt.seat || missing != tt.missing {
			t.Errorf("Parse(%q) = %q, %q, missing %q; want %q, %q, missing %q", tt.text, flight, seat, missing, tt.flight, tt.seat, tt.missing)
		}
	}
}

func TestStartRejectsWhatItCannotBook(t *testing.T) {
	inv := booking.NewInventory()
	if _, err := inv.Reserve("AP123", "12A", "another-caller"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		text string
		want []string // in the reason
	}{
		{"Book me a nice seat", []string{"a seat or a flight number", "Book seat 14C on flight AP123"}},
		{"Book seat 14C", []string{"a flight number"}},
		{"Book seat 14C on XY999", []string{"no flight XY999", "AP123, AP456, AP789"}},
		{"Book seat 31C on AP123", []string{"AP123 has no seat 31C"}},
		{"Book seat 12A on AP123", []string{"12A on AP123 is already taken"}},
	}
	for _, tt := range tests {
		out := start(t, agent(inv), tt.text)
		if out.Kind() != askpoint.OutcomeReject {
			t.Errorf("Start(%q) outcome = %q, want reject", tt.text, out.Kind())
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(out.Text(), w) {
				t.Errorf("Start(%q) reason %q does not say %q", tt.text, out.Text(), w)
			}
		}
	}
	if !inv.Available("AP123", "14C") {
		t.Errorf("a rejected request left seat 14C on AP123 held")
	}
}

func TestAskHoldsTheSeatUntilTheReleaseDeadline(t *testing.T) {
	inv := booking.NewInventory()
	out, cp := ask(t, agent(inv))
	q := out.Question()
	if err := q.Check(); err != nil {
		t.Fatalf("question does not check: %v", err)
	}
	if want := "Seat 14C on AP123 is held for you until 12:10 UTC. Confirm the booking for EUR 129?"; q.Text != want {
		t.Errorf("question text = %q, want %q", q.Text, want)
	}
	if want := noon.Add(30 * time.Minute); !q.Expires.Equal(want) {
		t.Errorf("question expires %v, want %v", q.Expires, want)
	}
	if errs := q.Validate(json.RawMessage(`{"confirm":true}`)); len(errs) > 0 {
		t.Errorf("Validate(confirm true) = %v, want valid", errs)
	}
	for _, bad := range []string{`{}`, `{"confirm":"maybe"}`} {
		if errs := q.Validate(json.RawMessage(bad)); len(errs) == 0 {
			t.Errorf("Validate(%s) accepted an answer without a boolean confirm", bad)
		}
	}

	hs := out.Holds()
	if len(hs) != 1 {
		t.Fatalf("ask holds %d things, want 1", len(hs))
	}
	h := hs[0]
	if h.Name != "seat 14C on AP123" {
		t.Errorf("hold name = %q, want %q", h.Name, "seat 14C on AP123")
	}
	if want := noon.Add(10 * time.Minute); !h.Until.Equal(want) {
		t.Errorf("hold until %v, want %v", h.Until, want)
	}
	if !h.Until.Before(q.Expires) {
		t.Errorf("hold until %v is not before the question's expiry %v", h.Until, q.Expires)
	}
	raw, _ := json.Marshal(h.Data)
	var data booking.HoldData
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatalf("hold data %s: %v", raw, err)
	}
	if want := (booking.HoldData{ReservationID: cp.ReservationID, Flight: "AP123", Seat: "14C"}); data != want || data.ReservationID == "" {
		t.Errorf("hold data = %+v, want %+v with a reservation ID", data, want)
	}
	if got := state(t, inv, cp.ReservationID); got != booking.Held {
		t.Errorf("reservation %s is %s while asking, want held", cp.ReservationID, got)
	}
	if inv.Available("AP123", "14C") {
		t.Errorf("seat 14C on AP123 is available while held")
	}
}

func TestConfirmWithinTheHoldBooks(t *testing.T) {
	inv := booking.NewInventory()
	a := agent(inv)
	ask, cp := ask(t, a)
	out := resume(t, a, ask, confirm(true), "t-1/q-1", holds(t, ask, false, false))
	b := bookingOf(t, out)
	want := booking.Booking{Reference: b.Reference, ReservationID: cp.ReservationID, Flight: "AP123", Seat: "14C", Fare: 129, Currency: "EUR"}
	if b != want || !strings.HasPrefix(b.Reference, "BK-") {
		t.Errorf("booking = %+v, want %+v with a BK- reference", b, want)
	}
	if got := state(t, inv, cp.ReservationID); got != booking.Confirmed {
		t.Errorf("reservation is %s, want confirmed", got)
	}
	if !strings.Contains(out.Text(), b.Reference) || strings.Contains(out.Text(), "lapsed") {
		t.Errorf("message %q should name reference %s and no lapse", out.Text(), b.Reference)
	}
	// A release that comes after the confirmation leaves the booking be.
	release(t, a, ask)
	if got := state(t, inv, cp.ReservationID); got != booking.Confirmed {
		t.Errorf("after a late release the reservation is %s, want still confirmed", got)
	}
}

func TestLapsedHoldOnAFreeSeatReservesAgainAndBooks(t *testing.T) {
	for _, tc := range []struct {
		name     string
		released bool
	}{
		{"released", true},
		{"release not run yet", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := booking.NewInventory()
			a := agent(inv)
			ask, cp := ask(t, a)
			if tc.released {
				release(t, a, ask)
				if !inv.Available("AP123", "14C") {
					t.Fatalf("the release left the seat held")
				}
			}
			out := resume(t, a, ask, confirm(true), "t-1/q-1", holds(t, ask, true, tc.released))
			b := bookingOf(t, out)
			if b.ReservationID == cp.ReservationID || b.Seat != "14C" || b.Flight != "AP123" {
				t.Errorf("booking = %+v, want seat 14C on AP123 under a new reservation (not %s)", b, cp.ReservationID)
			}
			if got := state(t, inv, b.ReservationID); got != booking.Confirmed {
				t.Errorf("new reservation is %s, want confirmed", got)
			}
			if got := state(t, inv, cp.ReservationID); got != booking.Released {
				t.Errorf("old reservation is %s, want released", got)
			}
			if !strings.Contains(out.Text(), "lapsed") || !strings.Contains(out.Text(), "still free") {
				t.Errorf("message %q does not say the hold lapsed and the seat was still free", out.Text())
			}
		})
	}
}

func TestAnswerAfterALapseRunTwiceBooksOnce(t *testing.T) {
	inv := booking.NewInventory()
	a := agent(inv)
	ask, _ := ask(t, a)
	release(t, a, ask)
	first := bookingOf(t, resume(t, a, ask, confirm(true), "t-1/q-1", holds(t, ask, true, true)))
	// The same step again, as after a crash: same key, same holds.
	again := bookingOf(t, resume(t, a, ask, confirm(true), "t-1/q-1", holds(t, ask, true, true)))
	if again != first {
		t.Errorf("the step run again booked %+v, the first run %+v; want the same booking", again, first)
	}
}

func TestLapsedHoldOnATakenSeatFails(t *testing.T) {
	inv := booking.NewInventory()
	a := agent(inv)
	ask, cp := ask(t, a)
	release(t, a, ask)
	other, err := inv.Reserve("AP123", "14C", "another-caller")
	if err != nil {
		t.Fatalf("another caller cannot reserve the released seat: %v", err)
	}
	out := resume(t, a, ask, confirm(true), "t-1/q-1", holds(t, ask, true, true))
	if out.Kind() != askpoint.OutcomeFail {
		t.Fatalf("outcome = %q (%s), want fail", out.Kind(), out.Text())
	}
	for _, w := range []string{"Nothing was booked", "lapsed at 12:10 UTC", "gone to someone else", "14C on AP123"} {
		if !strings.Contains(out.Text(), w) {
			t.Errorf("reason %q does not say %q", out.Text(), w)
		}
	}
	if got := state(t, inv, other); got != booking.Held {
		t.Errorf("the other caller's reservation is %s, want still held", got)
	}
	if got := state(t, inv, cp.ReservationID); got != booking.Released {
		t.Errorf("our old reservation is %s, want released", got)
	}
}

func TestReleaseFreesTheSeatAndIsIdempotent(t *testing.T) {
	inv := booking.NewInventory()
	a := agent(inv)
	ask, cp := ask(t, a)
	release(t, a, ask)
	if !inv.Available("AP123", "14C") {
		t.Fatalf("seat 14C on AP123 is not available after the release")
	}
	if got := state(t, inv, cp.ReservationID); got != booking.Released {
		t.Errorf("reservation is %s after the release, want released", got)
	}
	release(t, a, ask) // twice is harmless
	if !inv.Available("AP123", "14C") {
		t.Errorf("seat 14C on AP123 is not available after a second release")
	}
	// Nor does a third release free a seat someone else has reserved since.
	other, err := inv.Reserve("AP123", "14C", "another-caller")
	if err != nil {
		t.Fatal(err)
	}
	release(t, a, ask)
	if inv.Available("AP123", "14C") || state(t, inv, other) != booking.Held {
		t.Errorf("a repeated release freed another caller's reservation %s", other)
	}
}

func TestReleaseWithoutAReservationIsAnError(t *testing.T) {
	a := agent(booking.NewInventory())
	err := a.(askpoint.Releaser).Release(context.Background(), &askpoint.Call{Key: "k"},
		askpoint.HoldStatus{Name: "seat 14C on AP123", Data: json.RawMessage(`{"seat":"14C"}`)})
	if err == nil || !strings.Contains(err.Error(), "no reservation") {
		t.Errorf("Release() error = %v, want one saying the hold carries no reservation", err)
	}
}

// Declining and not confirming both end the booking with nothing booked and
// the held seat released.
func TestAnswersThatBookNothingReleaseTheSeat(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer *question.Answer
		kind   askpoint.OutcomeKind
		texts  []string // what its text must say
	}{
		{"Declining", &question.Answer{Action: question.ActionDecline, Reason: "plans changed"}, askpoint.OutcomeReject,
			[]string{"plans changed", "nothing was booked"}}, // the caller's reason, and that nothing was booked
		{"NotConfirming", confirm(false), askpoint.OutcomeComplete, []string{"Nothing was booked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inv := booking.NewInventory()
			a := agent(inv)
			ask, cp := ask(t, a)
			out := resume(t, a, ask, tc.answer, "t-1/q-1", holds(t, ask, false, false))
			if out.Kind() != tc.kind || len(out.Artifacts()) != 0 {
				t.Fatalf("outcome = %q (%s) with %d artifacts, want %s with none", out.Kind(), out.Text(), len(out.Artifacts()), tc.kind)
			}
			for _, want := range tc.texts {
				if !strings.Contains(out.Text(), want) {
					t.Errorf("outcome text %q does not say %q", out.Text(), want)
				}
			}
			if !inv.Available("AP123", "14C") || state(t, inv, cp.ReservationID) != booking.Released {
				t.Errorf("%s left seat 14C on AP123 held", tc.name)
			}
		})
	}
}

func TestRepeatedStartWithTheSameKeyReservesOnce(t *testing.T) {
	inv := booking.NewInventory()
	a := agent(inv)
	_, first := ask(t, a)
	// The same step again, as after a crash: the seat is held by the first
	// run's reservation, which the key finds instead of reserving anew.
	_, second := ask(t, a)
	if second.ReservationID != first.ReservationID {
		t.Fatalf("the repeated start reserved %s, the first %s; want one reservation", second.ReservationID, first.ReservationID)
	}
	inv.Release(first.ReservationID)
	if !inv.Available("AP123", "14C") {
		t.Errorf("seat still held after releasing the only reservation: the repeated start reserved it twice")
	}
}

func TestCardExamplesAreRequestsTheAgentReads(t *testing.T) {
	c := booking.Card()
	if c.Name != "Booking agent" || len(c.Skills) != 1 || len(c.Skills[0].Examples) == 0 {
		t.Fatalf("card = %q with %d skills, want \"Booking agent\" with one skill and examples", c.Name, len(c.Skills))
	}
	for _, ex := range c.Skills[0].Examples {
		out := start(t, agent(booking.NewInventory()), ex)
		if out.Kind() != askpoint.OutcomeAsk {
			t.Errorf("the card's example %q gets %q (%s), want a question", ex, out.Kind(), out.Text())
		}
	}
}
