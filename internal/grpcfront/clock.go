package grpcfront

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/tap"
)

// tap gives every call a context that ends, resetting the call, unless
// its request message arrives within Config.BodyTimeout (arrived stops the
// clock): a connection cannot hold calls opened and left silent. The
// context is the one the transport reads the request with, so its end
// stops the read.
//
// The clock is a timer kept for the next call once it has been stopped or
// has rung, and the context carries it itself (clockCtx), so that a call
// allocates neither a timer nor a context value for it; what is left is
// the cancelable context. See docs/decisions/0260.
func (f *Front) tap(ctx context.Context, _ *tap.Info) (context.Context, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	c, gen := startClock(f.cfg.BodyTimeout, cancel)
	return &clockCtx{Context: ctx, c: c, gen: gen}, nil
}

// errSlowRequest ends a call whose request did not arrive in time.
var errSlowRequest = errors.New("grpcfront: the call's request message did not arrive within the body timeout")

// requestClock ends a call (cancel) when it rings. gen counts the calls it
// has run for: a context holds the clock with the gen it ran for, so a
// clock serving a later call is not stopped by an earlier call's context.
type requestClock struct {
	timer  *time.Timer
	mu     sync.Mutex
	gen    uint64
	cancel context.CancelCauseFunc // nil once arrived or rung
}

// clocks are the clocks free for a call.
var clocks sync.Pool

// startClock starts a clock that calls cancel after d, and returns it with
// the gen it runs for.
func startClock(d time.Duration, cancel context.CancelCauseFunc) (*requestClock, uint64) {
	c, _ := clocks.Get().(*requestClock)
	if c == nil {
		c = &requestClock{gen: 1, cancel: cancel}
		c.mu.Lock() // ring, which frees the clock, waits for its timer to be set
		c.timer = time.AfterFunc(d, c.ring)
		c.mu.Unlock()
		return c, 1
	}
	return c, c.restart(d, cancel)
}

// restart runs a free clock (stopped or rung) for another call, and
// returns the gen it runs for.
func (c *requestClock) restart(d time.Duration, cancel context.CancelCauseFunc) uint64 {
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.cancel = cancel
	c.mu.Unlock()
	c.timer.Reset(d)
	return gen
}

// ring ends the call the clock runs for, unless its request arrived; the
// clock is then free.
func (c *requestClock) ring() {
	c.mu.Lock()
	cancel := c.cancel
	c.cancel = nil
	c.mu.Unlock()
	if cancel != nil {
		cancel(errSlowRequest)
		clocks.Put(c)
	}
}

// arrived stops the clock tap started for the call of ctx: its request is
// in. The clock is free again when it was stopped before it rang (when it
// is ringing, ring finds nothing to cancel, and the call goes on).
func arrived(ctx context.Context) {
	x, ok := ctx.Value(requestClockKey{}).(*clockCtx)
	if !ok {
		return
	}
	c := x.c
	c.mu.Lock()
	if c.gen != x.gen || c.cancel == nil {
		c.mu.Unlock()
		return
	}
	c.cancel = nil
	stopped := c.timer.Stop()
	c.mu.Unlock()
	if stopped {
		clocks.Put(c)
	}
}

type requestClockKey struct{}

// clockCtx is a call's context as tap makes it: the cancelable context,
// carrying the call's clock as context.WithValue would, in one allocation,
// and, once admit has routed the call, its route (under agentKey). A
// context made from it finds the cancelable one under it (Done and the
// context package's own lookup are the embedded context's).
type clockCtx struct {
	context.Context
	c     *requestClock
	gen   uint64
	route atomic.Pointer[route]
}

func (x *clockCtx) Value(key any) any {
	switch key {
	case requestClockKey{}:
		return x
	case agentKey{}:
		if rt := x.route.Load(); rt != nil {
			return rt
		}
	}
	return x.Context.Value(key)
}
