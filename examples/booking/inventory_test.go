package booking_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/askpoint/askpoint/examples/booking"
)

func TestReserveIsIdempotentOnItsKey(t *testing.T) {
	inv := booking.NewInventory()
	a, err := inv.Reserve("AP123", "14C", "k1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := inv.Reserve("ap 123", "14c", "k1")
	if err != nil || b != a {
		t.Errorf("Reserve again with key k1 = %q, %v; want %q, nil", b, err, a)
	}
	if _, err := inv.Reserve("AP123", "14C", "k2"); !errors.Is(err, booking.ErrTaken) {
		t.Errorf("Reserve with another key = %v, want ErrTaken", err)
	}
	if _, err := inv.Reserve("AP123", "15C", "k1"); err == nil {
		t.Errorf("Reserve of another seat with key k1 succeeded; a key reserves one seat")
	}
	if _, err := inv.Reserve("AP123", "15C", ""); err == nil {
		t.Errorf("Reserve without a key succeeded")
	}
}

func TestConfirmIsIdempotentAndRefusesAReleasedReservation(t *testing.T) {
	inv := booking.NewInventory()
	id, _ := inv.Reserve("AP456", "10A", "k1")
	ref, err := inv.Confirm(id)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := inv.Confirm(id); err != nil || again != ref {
		t.Errorf("Confirm again = %q, %v; want %q, nil", again, err, ref)
	}
	if inv.Release(id) || inv.Available("AP456", "10A") {
		t.Errorf("Release freed a confirmed booking")
	}

	other, _ := inv.Reserve("AP456", "10B", "k2")
	if !inv.Release(other) {
		t.Fatalf("Release of a held reservation freed nothing")
	}
	if inv.Release(other) {
		t.Errorf("a second Release freed the seat again")
	}
	if _, err := inv.Confirm(other); !errors.Is(err, booking.ErrReleased) {
		t.Errorf("Confirm of a released reservation = %v, want ErrReleased", err)
	}
	if _, err := inv.Confirm("RES-9999"); !errors.Is(err, booking.ErrUnknownReservation) {
		t.Errorf("Confirm of an unknown reservation = %v, want ErrUnknownReservation", err)
	}
	if inv.Release("RES-9999") {
		t.Errorf("Release of an unknown reservation reported freeing a seat")
	}
}

func TestConcurrentReservationsOfOneSeatHaveOneWinner(t *testing.T) {
	inv := booking.NewInventory()
	const callers = 32
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  []string
		lost int
	)
	for i := range callers {
		wg.Go(func() {
			id, err := inv.Reserve("AP789", "20F", fmt.Sprintf("caller-%d", i))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, id)
			case errors.Is(err, booking.ErrTaken):
				lost++
			default:
				t.Errorf("Reserve() error = %v", err)
			}
			inv.Available("AP789", "20F")
		})
	}
	wg.Wait()
	if len(won) != 1 || lost != callers-1 {
		t.Errorf("%d callers won seat 20F and %d lost, want 1 and %d", len(won), lost, callers-1)
	}
}
