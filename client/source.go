package client

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A source is one call that yields task events: a blocking SendMessage (one
// event), a stream (SendStreamingMessage, SubscribeToTask) or a GetTask poll.
// Its goroutine lives only as long as the call; close ends it and waits
// for it, so nothing outlives the loop.
type source struct {
	method string
	stream bool // a stream that may stay open at input-required
	items  chan sourceItem
	cancel context.CancelFunc
	done   chan struct{}
	ended  atomic.Bool // the call has ended; its final item is pending or read
	spent  bool        // the final item was read
}

type sourceItem struct {
	ev  a2a.Event
	err error // io.EOF when the call ended normally
}

// startSource runs call in a goroutine. call emits events and returns nil
// when it ends normally.
func startSource(ctx context.Context, method string, stream bool, call func(ctx context.Context, emit func(a2a.Event) bool) error) *source {
	sctx, cancel := context.WithCancel(ctx)
	s := &source{method: method, stream: stream, items: make(chan sourceItem), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		err := call(sctx, func(ev a2a.Event) bool {
			select {
			case s.items <- sourceItem{ev: ev}:
				return true
			case <-sctx.Done():
				return false
			}
		})
		if err == nil {
			err = io.EOF
		}
		s.ended.Store(true)
		select {
		case s.items <- sourceItem{err: err}:
		case <-sctx.Done():
		}
	}()
	return s
}

// next returns the next event, or the error that ended the call (io.EOF
// for a normal end).
func (s *source) next(ctx context.Context) (a2a.Event, error) {
	if s.spent {
		return nil, io.EOF
	}
	select {
	case it := <-s.items:
		if it.err != nil {
			s.spent = true
		}
		return it.ev, it.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// live says whether this is a stream the server still holds open.
func (s *source) live() bool {
	return s.stream && !s.spent && !s.ended.Load()
}

// close ends the call and waits for its goroutine.
func (s *source) close() {
	if s == nil {
		return
	}
	s.cancel()
	<-s.done
}

// onceSource yields ev and ends.
func onceSource(ctx context.Context, method string, ev a2a.Event) *source {
	return startSource(ctx, method, false, func(ctx context.Context, emit func(a2a.Event) bool) error {
		if !emit(ev) {
			return ctx.Err()
		}
		return nil
	})
}
