package booking

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Errors the inventory returns (wrapped, with the flight and seat named).
var (
	ErrUnknownFlight      = errors.New("no such flight")
	ErrUnknownSeat        = errors.New("no such seat")
	ErrTaken              = errors.New("seat taken")
	ErrReleased           = errors.New("reservation released")
	ErrUnknownReservation = errors.New("no such reservation")
)

// Flight is one flight the inventory sells seats on.
type Flight struct {
	Number   string
	Route    string // "AMS-LIS", for people
	Fare     int    // per seat, in Currency
	Currency string
	Seats    []string
}

// Reservation states.
const (
	Held      = "held"
	Confirmed = "confirmed"
	Released  = "released"
)

// Reservation is a seat held (or booked) for someone.
type Reservation struct {
	ID     string
	Flight string
	Seat   string
	State  string // Held, Confirmed or Released
	Key    string // the idempotency key it was made with
}

// Inventory is an in-process seat inventory, safe for concurrent use. A
// seat is free, held by one reservation, or booked by one confirmed
// reservation. Reserve is idempotent on its key, and Release and Confirm
// are idempotent on the reservation, so an agent step that runs again after
// a crash changes nothing the first run did.
//
// It lives in memory: a server that restarts forgets its reservations
// (Release then has nothing to do, and Confirm reports
// ErrUnknownReservation). A real one is a service of its own.
type Inventory struct {
	mu           sync.Mutex
	flights      map[string]Flight
	holder       map[string]string // flight/seat -> ID of the reservation holding it
	reservations map[string]*Reservation
	byKey        map[string]string // idempotency key -> reservation ID
	seq          int
}

// NewInventory returns an inventory of three flights, AP123, AP456 and
// AP789, with rows 10 to 20, seats A to F, all free.
func NewInventory() *Inventory {
	return NewInventoryOf(
		Flight{Number: "AP123", Route: "AMS-LIS", Fare: 129, Currency: "EUR"},
		Flight{Number: "AP456", Route: "LIS-BCN", Fare: 89, Currency: "EUR"},
		Flight{Number: "AP789", Route: "BCN-AMS", Fare: 215, Currency: "EUR"},
	)
}

// NewInventoryOf returns an inventory of flights, all seats free. A flight
// without seats gets rows 10 to 20, seats A to F.
func NewInventoryOf(flights ...Flight) *Inventory {
	inv := &Inventory{
		flights:      map[string]Flight{},
		holder:       map[string]string{},
		reservations: map[string]*Reservation{},
		byKey:        map[string]string{},
	}
	for _, f := range flights {
		f.Number = normalize(f.Number)
		if len(f.Seats) == 0 {
			for row := 10; row <= 20; row++ {
				for _, letter := range "ABCDEF" {
					f.Seats = append(f.Seats, fmt.Sprintf("%d%c", row, letter))
				}
			}
		}
		f.Seats = slices.Clone(f.Seats)
		for i := range f.Seats {
			f.Seats[i] = normalize(f.Seats[i])
		}
		inv.flights[f.Number] = f
	}
	return inv
}

// Flight looks up a flight by number.
func (inv *Inventory) Flight(number string) (Flight, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	f, ok := inv.flights[normalize(number)]
	f.Seats = slices.Clone(f.Seats)
	return f, ok
}

// Flights lists the flight numbers, sorted.
func (inv *Inventory) Flights() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var out []string
	for n := range inv.flights {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Reserve holds seat on flight and returns the reservation's ID. key makes
// it idempotent: reserving again with a key that already reserved returns
// that reservation's ID, whatever became of it since, and holds nothing
// new. A seat held or booked by another reservation is ErrTaken.
func (inv *Inventory) Reserve(flight, seat, key string) (string, error) {
	flight, seat = normalize(flight), normalize(seat)
	if key == "" {
		return "", errors.New("booking: a reservation needs an idempotency key")
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if id, ok := inv.byKey[key]; ok {
		r := inv.reservations[id]
		if r.Flight != flight || r.Seat != seat {
			return "", fmt.Errorf("booking: key %q already reserved seat %s on %s, not %s on %s", key, r.Seat, r.Flight, seat, flight)
		}
		return id, nil
	}
	f, ok := inv.flights[flight]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnknownFlight, flight)
	}
	if !slices.Contains(f.Seats, seat) {
		return "", fmt.Errorf("%w: %s has no seat %s", ErrUnknownSeat, flight, seat)
	}
	if inv.holder[flight+"/"+seat] != "" {
		return "", fmt.Errorf("%w: seat %s on %s", ErrTaken, seat, flight)
	}
	inv.seq++
	id := fmt.Sprintf("RES-%04d", inv.seq)
	inv.reservations[id] = &Reservation{ID: id, Flight: flight, Seat: seat, State: Held, Key: key}
	inv.holder[flight+"/"+seat] = id
	inv.byKey[key] = id
	return id, nil
}

// Release frees a held seat. It is idempotent: releasing a released or
// unknown reservation does nothing. A confirmed reservation is a booking,
// not a hold, and stays booked: a late release cannot undo a confirmation.
// released says whether this call freed the seat.
func (inv *Inventory) Release(id string) (released bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	r, ok := inv.reservations[id]
	if !ok || r.State != Held {
		return false
	}
	r.State = Released
	delete(inv.holder, r.Flight+"/"+r.Seat)
	return true
}

// Confirm turns a held reservation into a booking and returns its booking
// reference. It is idempotent: confirming a confirmed reservation returns
// the same reference. A released reservation is ErrReleased (the seat may
// have gone to someone else); an unknown one ErrUnknownReservation.
func (inv *Inventory) Confirm(id string) (string, error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	r, ok := inv.reservations[id]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrUnknownReservation, id)
	}
	if r.State == Released {
		return "", fmt.Errorf("%w: %s (seat %s on %s)", ErrReleased, id, r.Seat, r.Flight)
	}
	r.State = Confirmed
	return reference(id), nil
}

// Available reports whether seat exists on flight and nobody holds or
// booked it.
func (inv *Inventory) Available(flight, seat string) bool {
	flight, seat = normalize(flight), normalize(seat)
	inv.mu.Lock()
	defer inv.mu.Unlock()
	f, ok := inv.flights[flight]
	return ok && slices.Contains(f.Seats, seat) && inv.holder[flight+"/"+seat] == ""
}

// Reservation looks up a reservation by ID.
func (inv *Inventory) Reservation(id string) (Reservation, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	r, ok := inv.reservations[id]
	if !ok {
		return Reservation{}, false
	}
	return *r, true
}

// reference is a reservation's booking reference: BK- and six characters
// derived from its ID, so that confirming again gives the same one.
func reference(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "BK-" + strings.ToUpper(hex.EncodeToString(sum[:3]))
}

// normalize spells flight numbers and seats one way: upper case, no spaces
// or dashes ("ap 123" is AP123, "14c" is 14C).
func normalize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' {
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(s)))
}
