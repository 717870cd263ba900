package grpcfront

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request clock kept for a later call ends that call at its own body
// timeout: a call whose request arrived is not ended, and its context,
// stopping the clock again, leaves the later call's running. Contexts made
// from a call's find its clock and its cancelable context.
func TestAKeptRequestClockEndsOnlyTheCallItRunsFor(t *testing.T) {
	const d = 20 * time.Millisecond
	ctx1, cancel1 := context.WithCancelCause(t.Context())
	c, gen1 := startClock(time.Hour, cancel1)
	first := context.WithValue(&clockCtx{Context: ctx1, c: c, gen: gen1}, struct{}{}, 1) // a context made from the call's
	arrived(first)

	ctx2, cancel2 := context.WithCancelCause(t.Context())
	gen2 := c.restart(d, cancel2)
	second, stop := context.WithCancel(&clockCtx{Context: ctx2, c: c, gen: gen2})
	defer stop()
	arrived(first) // the earlier call's context, again: not the second call's clock
	select {
	case <-second.Done():
	case <-time.After(time.Minute):
		t.Fatal("the second call did not end at its body timeout")
	}
	if cause := context.Cause(second); !errors.Is(cause, errSlowRequest) {
		t.Errorf("the second call ended with %v, want errSlowRequest", cause)
	}
	if err := ctx1.Err(); err != nil {
		t.Errorf("the first call, whose request arrived, ended: %v", err)
	}

	// Rung, the clock runs for a third call, which arrives: it is not ended.
	ctx3, cancel3 := context.WithCancelCause(t.Context())
	gen3 := c.restart(d, cancel3)
	arrived(&clockCtx{Context: ctx3, c: c, gen: gen3})
	if c.timer.Stop() {
		t.Error("the clock still runs after the third call's request arrived")
	}
	if err := ctx3.Err(); err != nil {
		t.Errorf("the third call, whose request arrived, ended: %v", err)
	}
}
