package travel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/askpoint/askpoint/question"
)

// Cities are the destinations the agent offers.
var Cities = []question.Option{
	{Value: "Lisbon", Label: "Lisbon, Portugal"},
	{Value: "Oslo", Label: "Oslo, Norway"},
	{Value: "Rome", Label: "Rome, Italy"},
	{Value: "Kyoto", Label: "Kyoto, Japan"},
}

// YesNo are the answers to a confirmation.
var YesNo = []question.Option{{Value: true, Label: "Yes, book it"}, {Value: false, Label: "No"}}

// lastDayAfterFirst is the rule of a Trip its schema cannot say.
func lastDayAfterFirst(t Trip) error {
	if t.End < t.Start {
		return question.FieldError{Pointer: "/end", Message: "the last day is before the first"}
	}
	return nil
}

// Agency quotes and books trips. key is the same on every try of one
// quote or booking: a second call with it does nothing new.
type Agency interface {
	Quote(ctx context.Context, key, city string, t Trip) (int, error)
	Book(ctx context.Context, key, city string, t Trip) (string, error)
}

// Desk is an Agency in memory that counts what it was asked to do, for the
// example's tests and the demo.
type Desk struct {
	mu     sync.Mutex
	quotes map[string]int
	books  map[string]string
	calls  int
}

// Quote prices a trip at 120 EUR a night a traveller.
func (d *Desk) Quote(_ context.Context, key, city string, t Trip) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.quotes == nil {
		d.quotes = map[string]int{}
	}
	if p, ok := d.quotes[key]; ok {
		return p, nil
	}
	p := 120 * t.Travellers * max(nights(t), 1)
	d.quotes[key] = p
	return p, nil
}

// Book books a trip once per key and returns its reference.
func (d *Desk) Book(_ context.Context, key, city string, t Trip) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	if d.books == nil {
		d.books = map[string]string{}
	}
	if ref, ok := d.books[key]; ok {
		return ref, nil
	}
	ref := fmt.Sprintf("TRV-%03d", len(d.books)+1)
	d.books[key] = ref
	return ref, nil
}

// Calls is how many times Quote and Book were called.
func (d *Desk) Calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls
}

// Bookings is how many trips were booked.
func (d *Desk) Bookings() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.books)
}

// nights is how many nights a trip has (0 when its dates do not read).
func nights(t Trip) int {
	start, err1 := time.Parse(time.DateOnly, t.Start)
	end, err2 := time.Parse(time.DateOnly, t.End)
	if err1 != nil || err2 != nil {
		return 0
	}
	return int(end.Sub(start).Hours() / 24)
}
