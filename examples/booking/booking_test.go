package booking_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/booking"
)

// The agent asks at noon: the seat is held until 12:10, the question is
// open until 12:30.
var noon = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rig is a booking agent on an inventory and a clock that starts at noon,
// its steps run as a server runs them (askpointtest.Runner).
type rig struct {
	inv   *booking.Inventory
	clock *askpointtest.Clock
	run   askpointtest.Runner
}

func newRig() *rig {
	r := &rig{inv: booking.NewInventory(), clock: askpointtest.NewClock(noon)}
	r.run = askpointtest.Runner{Agent: booking.Agent(r.inv, r.clock.Now), Now: r.clock.Now}
	return r
}

func (r *rig) start(t *testing.T, text string) *askpointtest.Step {
	t.Helper()
	return r.run.Start(t, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
}

// ask starts a booking of seat 14C on AP123 and checks that it asked.
func (r *rig) ask(t *testing.T) (*askpointtest.Step, booking.Checkpoint) {
	t.Helper()
	s := r.start(t, "Book seat 14C on flight AP123")
	var cp booking.Checkpoint
	if s.State != a2a.TaskStateInputRequired || json.Unmarshal(s.Checkpoint, &cp) != nil {
		t.Fatalf("Start() = %s (%s) with checkpoint %s, want a question and a booking.Checkpoint", s.State, s.Text, s.Checkpoint)
	}
	return s, cp
}

// lapse moves the clock past the hold's deadline (12:10), before the
// question's expiry (12:30).
func (r *rig) lapse(t *testing.T) { r.clock.Advance(t, 11*time.Minute) }

// bookingOf reads the booking artifact of a completed step.
func bookingOf(t *testing.T, s *askpointtest.Step) booking.Booking {
	t.Helper()
	out := s.Outcome
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

func (r *rig) state(t *testing.T, id string) string {
	t.Helper()
	res, ok := r.inv.Reservation(id)
	if !ok {
		t.Fatalf("reservation %s is unknown", id)
	}
	return res.State
}

var confirm = booking.Answer{Confirm: true}

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
	r := newRig()
	if _, err := r.inv.Reserve("AP123", "12A", "another-caller"); err != nil {
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
		s := r.start(t, tt.text)
		if s.State != a2a.TaskStateRejected {
			t.Errorf("Start(%q) = %s, want rejected", tt.text, s.State)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(s.Text, w) {
				t.Errorf("Start(%q) reason %q does not say %q", tt.text, s.Text, w)
			}
		}
	}
	if !r.inv.Available("AP123", "14C") {
		t.Errorf("a rejected request left seat 14C on AP123 held")
	}
}

func TestAskHoldsTheSeatUntilTheReleaseDeadline(t *testing.T) {
	r := newRig()
	s, cp := r.ask(t)
	q := s.Question
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
	if len(s.Holds) != 1 {
		t.Fatalf("ask holds %d things, want 1", len(s.Holds))
	}
	h := s.Holds[0]
	if h.Name != "seat 14C on AP123" {
		t.Errorf("hold name = %q, want %q", h.Name, "seat 14C on AP123")
	}
	if want := noon.Add(10 * time.Minute); !h.Until.Equal(want) {
		t.Errorf("hold until %v, want %v", h.Until, want)
	}
	var data booking.HoldData
	if err := json.Unmarshal(h.Data, &data); err != nil {
		t.Fatalf("hold data %s: %v", h.Data, err)
	}
	if want := (booking.HoldData{ReservationID: cp.ReservationID, Flight: "AP123", Seat: "14C"}); data != want || data.ReservationID == "" {
		t.Errorf("hold data = %+v, want %+v with a reservation ID", data, want)
	}
	if got := r.state(t, cp.ReservationID); got != booking.Held {
		t.Errorf("reservation %s is %s while asking, want held", cp.ReservationID, got)
	}
	if r.inv.Available("AP123", "14C") {
		t.Errorf("seat 14C on AP123 is available while held")
	}
}

func TestConfirmWithinTheHoldBooks(t *testing.T) {
	r := newRig()
	s, cp := r.ask(t)
	done := s.Answer(t, confirm)
	b := bookingOf(t, done)
	want := booking.Booking{Reference: b.Reference, ReservationID: cp.ReservationID, Flight: "AP123", Seat: "14C", Fare: 129, Currency: "EUR"}
	if b != want || !strings.HasPrefix(b.Reference, "BK-") {
		t.Errorf("booking = %+v, want %+v with a BK- reference", b, want)
	}
	if got := r.state(t, cp.ReservationID); got != booking.Confirmed {
		t.Errorf("reservation is %s, want confirmed", got)
	}
	if !strings.Contains(done.Text, b.Reference) || strings.Contains(done.Text, "lapsed") {
		t.Errorf("message %q should name reference %s and no lapse", done.Text, b.Reference)
	}
	// A release that comes after the confirmation leaves the booking be.
	r.lapse(t)
	s.Release(t)
	if got := r.state(t, cp.ReservationID); got != booking.Confirmed {
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
			r := newRig()
			s, cp := r.ask(t)
			r.lapse(t)
			if tc.released {
				s.Release(t)
				if !r.inv.Available("AP123", "14C") {
					t.Fatalf("the release left the seat held")
				}
			}
			done := s.Answer(t, confirm)
			b := bookingOf(t, done)
			if b.ReservationID == cp.ReservationID || b.Seat != "14C" || b.Flight != "AP123" {
				t.Errorf("booking = %+v, want seat 14C on AP123 under a new reservation (not %s)", b, cp.ReservationID)
			}
			if got := r.state(t, b.ReservationID); got != booking.Confirmed {
				t.Errorf("new reservation is %s, want confirmed", got)
			}
			if got := r.state(t, cp.ReservationID); got != booking.Released {
				t.Errorf("old reservation is %s, want released", got)
			}
			if !strings.Contains(done.Text, "lapsed") || !strings.Contains(done.Text, "still free") {
				t.Errorf("message %q does not say the hold lapsed and the seat was still free", done.Text)
			}
		})
	}
}

func TestAnswerAfterALapseRunTwiceBooksOnce(t *testing.T) {
	r := newRig()
	s, _ := r.ask(t)
	r.lapse(t)
	s.Release(t)
	first := s.Answer(t, confirm)
	// The same step again, as after a crash: same key, same holds.
	if again, want := bookingOf(t, first.Again(t)), bookingOf(t, first); again != want {
		t.Errorf("the step run again booked %+v, the first run %+v; want the same booking", again, want)
	}
}

func TestLapsedHoldOnATakenSeatFails(t *testing.T) {
	r := newRig()
	s, cp := r.ask(t)
	r.lapse(t)
	s.Release(t)
	other, err := r.inv.Reserve("AP123", "14C", "another-caller")
	if err != nil {
		t.Fatalf("another caller cannot reserve the released seat: %v", err)
	}
	done := s.Answer(t, confirm)
	if done.State != a2a.TaskStateFailed {
		t.Fatalf("after the answer: %s (%s), want failed", done.State, done.Text)
	}
	for _, w := range []string{"Nothing was booked", "lapsed at 12:10 UTC", "gone to someone else", "14C on AP123"} {
		if !strings.Contains(done.Text, w) {
			t.Errorf("reason %q does not say %q", done.Text, w)
		}
	}
	if got := r.state(t, other); got != booking.Held {
		t.Errorf("the other caller's reservation is %s, want still held", got)
	}
	if got := r.state(t, cp.ReservationID); got != booking.Released {
		t.Errorf("our old reservation is %s, want released", got)
	}
}

func TestReleaseFreesTheSeatAndIsIdempotent(t *testing.T) {
	r := newRig()
	s, cp := r.ask(t)
	r.lapse(t)
	s.Release(t)
	if !r.inv.Available("AP123", "14C") {
		t.Fatalf("seat 14C on AP123 is not available after the release")
	}
	if got := r.state(t, cp.ReservationID); got != booking.Released {
		t.Errorf("reservation is %s after the release, want released", got)
	}
	// The release run again (as after a crash), then after someone else
	// reserved the seat: neither frees it.
	again := func() {
		if err := r.run.Agent.(askpoint.Releaser).Release(context.Background(), &askpoint.Call{Key: "k"}, s.Holds[0]); err != nil {
			t.Fatalf("Release again: %v", err)
		}
	}
	again()
	if !r.inv.Available("AP123", "14C") {
		t.Errorf("seat 14C on AP123 is not available after a second release")
	}
	other, err := r.inv.Reserve("AP123", "14C", "another-caller")
	if err != nil {
		t.Fatal(err)
	}
	again()
	if r.inv.Available("AP123", "14C") || r.state(t, other) != booking.Held {
		t.Errorf("a repeated release freed another caller's reservation %s", other)
	}
}

func TestReleaseWithoutAReservationIsAnError(t *testing.T) {
	err := newRig().run.Agent.(askpoint.Releaser).Release(context.Background(), &askpoint.Call{Key: "k"},
		askpoint.HoldStatus{Name: "seat 14C on AP123", Data: json.RawMessage(`{"seat":"14C"}`)})
	if err == nil || !strings.Contains(err.Error(), "no reservation") {
		t.Errorf("Release() error = %v, want one saying the hold carries no reservation", err)
	}
}

// Declining and not confirming both end the booking with nothing booked and
// the held seat released.
func TestAnswersThatBookNothingReleaseTheSeat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(t *testing.T, s *askpointtest.Step) *askpointtest.Step
		state a2a.TaskState
		texts []string // what its text must say
	}{
		{"Declining", func(t *testing.T, s *askpointtest.Step) *askpointtest.Step { return s.Decline(t, "plans changed") },
			a2a.TaskStateRejected, []string{"plans changed", "nothing was booked"}},
		{"NotConfirming", func(t *testing.T, s *askpointtest.Step) *askpointtest.Step { return s.Answer(t, "no") },
			a2a.TaskStateCompleted, []string{"Nothing was booked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig()
			s, cp := r.ask(t)
			done := tc.reply(t, s)
			if done.State != tc.state || len(done.Outcome.Artifacts()) != 0 {
				t.Fatalf("after the reply: %s (%s) with %d artifacts, want %s with none", done.State, done.Text, len(done.Outcome.Artifacts()), tc.state)
			}
			for _, want := range tc.texts {
				if !strings.Contains(done.Text, want) {
					t.Errorf("text %q does not say %q", done.Text, want)
				}
			}
			if !r.inv.Available("AP123", "14C") || r.state(t, cp.ReservationID) != booking.Released {
				t.Errorf("%s left seat 14C on AP123 held", tc.name)
			}
		})
	}
}

func TestRepeatedStartWithTheSameKeyReservesOnce(t *testing.T) {
	r := newRig()
	s, first := r.ask(t)
	// The same step again, as after a crash: the seat is held by the first
	// run's reservation, which the key finds instead of reserving anew.
	var second booking.Checkpoint
	if err := json.Unmarshal(s.Again(t).Checkpoint, &second); err != nil || second.ReservationID != first.ReservationID {
		t.Fatalf("the repeated start reserved %s (%v), the first %s; want one reservation", second.ReservationID, err, first.ReservationID)
	}
	r.inv.Release(first.ReservationID)
	if !r.inv.Available("AP123", "14C") {
		t.Errorf("seat still held after releasing the only reservation: the repeated start reserved it twice")
	}
}

func TestCardExamplesAreRequestsTheAgentReads(t *testing.T) {
	c := booking.Card()
	if c.Name != "Booking agent" || len(c.Skills) != 1 || len(c.Skills[0].Examples) == 0 {
		t.Fatalf("card = %q with %d skills, want \"Booking agent\" with one skill and examples", c.Name, len(c.Skills))
	}
	for _, ex := range c.Skills[0].Examples {
		if s := newRig().start(t, ex); s.State != a2a.TaskStateInputRequired {
			t.Errorf("the card's example %q gets %s (%s), want a question", ex, s.State, s.Text)
		}
	}
}
