// Package booking is an example agent that holds something while it asks.
// It reserves the seat the caller names, then asks whether to book it, and
// declares the reservation as a hold on its question ([askpoint.Outcome.Hold]).
//
// The question stays open for 30 minutes ([AnswerWithin]) but the seat is
// held for only 10 ([HoldFor]): a seat cannot be kept from other buyers for
// as long as a person may take to answer. When the hold's deadline passes
// first, the runtime calls the agent's OnRelease, which frees the seat, and
// the question stays open. An answer that comes later finds the hold Lapsed
// in call.Holds, and the agent re-checks instead of trusting what it once
// held: if the seat is still free it reserves it again and books it; if
// someone else took it meanwhile, the task fails saying so. A task that ends
// without resuming (its question expires, the caller cancels) has its hold
// released at once.
//
// Try it with askpoint serve:
//
//	askpoint send http://127.0.0.1:8420/booking "Book seat 14C on flight AP123"
//	askpoint send --task TASK_ID --data '{"confirm": true}' http://127.0.0.1:8420/booking
package booking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

const (
	// HoldFor is how long the seat is held while the agent waits for the
	// caller to confirm.
	HoldFor = 10 * time.Minute
	// AnswerWithin is how long the question stays open. It outlasts the
	// hold: a late answer is still read, and the seat re-checked.
	AnswerWithin = 30 * time.Minute
)

// Checkpoint is what the agent saves while it waits for the answer.
type Checkpoint struct {
	Flight        string    `json:"flight"`
	Seat          string    `json:"seat"`
	ReservationID string    `json:"reservationId"`
	Fare          int       `json:"fare"`
	Currency      string    `json:"currency"`
	Hold          string    `json:"hold"` // the hold's name
	HeldUntil     time.Time `json:"heldUntil"`
}

// Answer is the caller's answer to "Confirm the booking?".
type Answer struct {
	Confirm bool `json:"confirm"`
}

// HoldData is what the hold carries to OnRelease.
type HoldData struct {
	ReservationID string `json:"reservationId"`
	Flight        string `json:"flight"`
	Seat          string `json:"seat"`
}

// Booking is the artifact of a confirmed booking.
type Booking struct {
	Reference     string `json:"reference"`
	ReservationID string `json:"reservationId"`
	Flight        string `json:"flight"`
	Seat          string `json:"seat"`
	Fare          int    `json:"fare"`
	Currency      string `json:"currency"`
}

// Agent builds the booking agent on inv. now gives the time the hold and
// the question are measured from (nil: time.Now).
func Agent(inv *Inventory, now func() time.Time) askpoint.Agent {
	if now == nil {
		now = time.Now
	}
	return askpoint.Steps[Checkpoint, Answer]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return start(inv, now().UTC(), call)
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, a Answer) (askpoint.Outcome, error) {
			if !a.Confirm {
				inv.Release(cp.ReservationID)
				return askpoint.Complete().WithMessage(fmt.Sprintf(
					"Nothing was booked: you did not confirm, so seat %s on %s is released.", cp.Seat, cp.Flight)), nil
			}
			return book(inv, call, cp)
		},
		OnDecline: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, reason string) (askpoint.Outcome, error) {
			inv.Release(cp.ReservationID)
			return askpoint.Reject(fmt.Sprintf("Seat %s on %s is released and nothing was booked. %s",
				cp.Seat, cp.Flight, askpoint.DeclinedText(reason))), nil
		},
		// OnRelease runs when the hold's deadline passes before the answer,
		// or when the task ends without one. Release is idempotent on the
		// reservation, so a release run again after a crash (same call.Key)
		// frees nothing twice, and one that runs after a confirmation leaves
		// the booking alone.
		OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
			var d HoldData
			if err := json.Unmarshal(h.Data, &d); err != nil || d.ReservationID == "" {
				return fmt.Errorf("booking: hold %q carries no reservation (data %s): %v", h.Name, h.Data, err)
			}
			inv.Release(d.ReservationID)
			return nil
		},
	}
}

// start reads the request, reserves the seat and asks to confirm it, holding
// the reservation while it waits.
func start(inv *Inventory, now time.Time, call *askpoint.Call) (askpoint.Outcome, error) {
	flight, seat, missing := Parse(messageText(call.Request))
	if missing != "" {
		return askpoint.Reject(fmt.Sprintf("I could not find %s in your message. Say which seat on which flight, e.g. %q.", missing, example)), nil
	}
	f, ok := inv.Flight(flight)
	if !ok {
		return askpoint.Reject(fmt.Sprintf("There is no flight %s. Flights on sale: %s.", flight, strings.Join(inv.Flights(), ", "))), nil
	}
	// The step's key makes the reservation once, even when this step runs
	// again after a crash.
	id, err := inv.Reserve(flight, seat, call.Key)
	switch {
	case errors.Is(err, ErrUnknownSeat):
		return askpoint.Reject(fmt.Sprintf("Flight %s has no seat %s (rows 10 to 20, seats A to F).", flight, seat)), nil
	case errors.Is(err, ErrTaken):
		return askpoint.Reject(fmt.Sprintf("Seat %s on %s is already taken. Ask for another seat.", seat, flight)), nil
	case err != nil:
		return askpoint.Outcome{}, fmt.Errorf("reserve seat %s on %s: %w", seat, flight, err)
	}

	until := now.Add(HoldFor)
	cp := Checkpoint{
		Flight: flight, Seat: seat, ReservationID: id, Fare: f.Fare, Currency: f.Currency,
		Hold: "seat " + seat + " on " + flight, HeldUntil: until,
	}
	schema := map[string]any{
		"type":     "object",
		"required": []string{"confirm"},
		"properties": map[string]any{
			"confirm": map[string]any{
				"type":        "boolean",
				"description": fmt.Sprintf("true books the seat for %s %d; false lets it go", f.Currency, f.Fare),
			},
		},
	}
	q := question.Question{
		Text: fmt.Sprintf("Seat %s on %s is held for you until %s UTC. Confirm the booking for %s %d?",
			seat, flight, until.Format("15:04"), f.Currency, f.Fare),
		Schema:  mustJSON(schema),
		Expires: now.Add(AnswerWithin),
	}
	return askpoint.Ask(q, cp).Hold(askpoint.Hold{
		Name:  cp.Hold,
		Until: until,
		Data:  HoldData{ReservationID: id, Flight: flight, Seat: seat},
	}), nil
}

// book confirms the reservation if the hold is still good; otherwise it
// re-checks the seat.
func book(inv *Inventory, call *askpoint.Call, cp Checkpoint) (askpoint.Outcome, error) {
	hold, found := holdNamed(call.Holds, cp.Hold)
	if found && !hold.Lapsed {
		ref, err := inv.Confirm(cp.ReservationID)
		if err == nil {
			return booked(cp, cp.ReservationID, ref, ""), nil
		}
		if !errors.Is(err, ErrReleased) && !errors.Is(err, ErrUnknownReservation) {
			return askpoint.Outcome{}, fmt.Errorf("confirm reservation %s: %w", cp.ReservationID, err)
		}
		// Not ours any more after all: re-check like a lapsed hold.
	}

	// The hold lapsed: its release may have run, may be running, or may not
	// have started (HoldStatus.Released says only that it started). Let go
	// of the old reservation here too, Release is idempotent, and reserve
	// the seat afresh if nobody took it meanwhile. The new key is this
	// step's, so a run of this step after a crash finds the same new
	// reservation instead of making another.
	inv.Release(cp.ReservationID)
	id, err := inv.Reserve(cp.Flight, cp.Seat, call.Key+"/re-reserve")
	if errors.Is(err, ErrTaken) {
		return askpoint.Fail(fmt.Sprintf(
			"Nothing was booked: the hold on seat %s on %s lapsed at %s UTC before you confirmed, and the seat has since gone to someone else. Ask again for another seat.",
			cp.Seat, cp.Flight, cp.HeldUntil.UTC().Format("15:04"))), nil
	}
	if err != nil {
		return askpoint.Outcome{}, fmt.Errorf("reserve seat %s on %s again: %w", cp.Seat, cp.Flight, err)
	}
	ref, err := inv.Confirm(id)
	if err != nil {
		return askpoint.Outcome{}, fmt.Errorf("confirm reservation %s: %w", id, err)
	}
	return booked(cp, id, ref, fmt.Sprintf("The hold had lapsed at %s UTC, but the seat was still free, so it was reserved again. ",
		cp.HeldUntil.UTC().Format("15:04"))), nil
}

// booked completes the task with the booking as its artifact.
func booked(cp Checkpoint, reservationID, ref, note string) askpoint.Outcome {
	b := Booking{Reference: ref, ReservationID: reservationID, Flight: cp.Flight, Seat: cp.Seat, Fare: cp.Fare, Currency: cp.Currency}
	summary := fmt.Sprintf("%sBooked seat %s on %s for %s %d. Booking reference %s.", note, b.Seat, b.Flight, b.Currency, b.Fare, b.Reference)
	return askpoint.Complete(&a2a.Artifact{
		Name:  "booking",
		Parts: a2a.ContentParts{a2a.NewTextPart(summary), dataPart(b)},
	}).WithMessage(summary)
}

func holdNamed(holds []askpoint.HoldStatus, name string) (askpoint.HoldStatus, bool) {
	for _, h := range holds {
		if h.Name == name {
			return h, true
		}
	}
	return askpoint.HoldStatus{}, false
}

const example = "Book seat 14C on flight AP123"

var (
	flightNumber = regexp.MustCompile(`(?i)\b([a-z]{2})[ -]?(\d{2,4})\b`)
	seatNumber   = regexp.MustCompile(`(?i)\b(\d{1,2}[a-k])\b`)
)

// Parse finds the flight number and the seat in a request such as "Book
// seat 14C on flight AP123" (in any order and case; "ap 123" and "14c" do).
// missing names what it could not find, "" when it found both.
func Parse(text string) (flight, seat, missing string) {
	if m := flightNumber.FindStringSubmatch(text); m != nil {
		flight = strings.ToUpper(m[1]) + m[2]
	}
	if m := seatNumber.FindStringSubmatch(text); m != nil {
		seat = strings.ToUpper(m[1])
	}
	switch {
	case flight == "" && seat == "":
		missing = "a seat or a flight number"
	case flight == "":
		missing = "a flight number"
	case seat == "":
		missing = "a seat"
	}
	return flight, seat, missing
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(string(t))
		}
	}
	return b.String()
}
