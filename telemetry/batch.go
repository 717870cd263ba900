package telemetry

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Batcher is a span processor that keeps ended spans in a slice under a
// mutex and hands them to its exporter in batches, from one goroutine that
// wakes when a batch is full, at the schedule delay, and for ForceFlush
// and Shutdown (decision 0068). The SDK's batch processor sends every span
// on a channel to its goroutine, which on a server that is mostly waiting
// wakes a thread for each span; this one wakes it once per batch.
//
// It reads the SDK's OTEL_BSP_* variables: OTEL_BSP_SCHEDULE_DELAY and
// OTEL_BSP_EXPORT_TIMEOUT (milliseconds), OTEL_BSP_MAX_QUEUE_SIZE (spans
// kept before new ones are dropped) and OTEL_BSP_MAX_EXPORT_BATCH_SIZE.
type Batcher struct {
	e                 sdktrace.SpanExporter
	delay, timeout    time.Duration
	maxQueue, maxSize int

	mu      sync.Mutex
	spans   []sdktrace.ReadOnlySpan
	stopped bool
	dropped uint64

	full    chan struct{}      // a batch is ready (capacity 1)
	flushes chan chan struct{} // ForceFlush: closed once exported
	stop    chan struct{}
	done    chan struct{} // the goroutine has exported what was left
}

var _ sdktrace.SpanProcessor = (*Batcher)(nil)

// The SDK's defaults for its batch processor.
const (
	defaultScheduleDelay = 5 * time.Second
	defaultExportTimeout = 30 * time.Second
	defaultMaxQueue      = 2048
	defaultMaxBatch      = 512
)

// NewBatcher starts a Batcher exporting to e, configured by the OTEL_BSP_*
// variables (the SDK's defaults for those unset or invalid).
func NewBatcher(e sdktrace.SpanExporter) *Batcher {
	b := &Batcher{
		e:        e,
		delay:    time.Duration(envPositive("OTEL_BSP_SCHEDULE_DELAY", int(defaultScheduleDelay/time.Millisecond))) * time.Millisecond,
		timeout:  envMillis("OTEL_BSP_EXPORT_TIMEOUT", defaultExportTimeout),
		maxQueue: envPositive("OTEL_BSP_MAX_QUEUE_SIZE", defaultMaxQueue),
		maxSize:  envPositive("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", defaultMaxBatch),
		full:     make(chan struct{}, 1),
		flushes:  make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if b.maxSize > b.maxQueue {
		b.maxSize = min(defaultMaxBatch, b.maxQueue) // as the SDK does
	}
	b.spans = make([]sdktrace.ReadOnlySpan, 0, b.maxSize)
	go b.run()
	return b
}

// OnStart does nothing.
func (*Batcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd keeps s for the next batch, or drops it when the queue is full
// or the processor stopped.
func (b *Batcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	b.mu.Lock()
	if b.stopped || len(b.spans) >= b.maxQueue {
		if !b.stopped {
			b.dropped++
		}
		b.mu.Unlock()
		return
	}
	b.spans = append(b.spans, s)
	ready := len(b.spans) >= b.maxSize
	b.mu.Unlock()
	if ready {
		select {
		case b.full <- struct{}{}:
		default: // already signalled
		}
	}
}

// Dropped is how many spans were dropped because the queue was full.
func (b *Batcher) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

func (b *Batcher) run() {
	defer close(b.done)
	timer := time.NewTimer(b.delay)
	defer timer.Stop()
	var out []sdktrace.ReadOnlySpan
	export := func() {
		b.mu.Lock()
		out, b.spans = b.spans, out[:0]
		b.mu.Unlock()
		for rest := out; len(rest) > 0; {
			n := min(len(rest), b.maxSize)
			b.exportBatch(rest[:n])
			rest = rest[n:]
		}
		clear(out) // let the collector have them
		timer.Reset(b.delay)
	}
	for {
		select {
		case <-b.full:
			export()
		case <-timer.C:
			export()
		case done := <-b.flushes:
			export()
			close(done)
		case <-b.stop:
			export()
			return
		}
	}
}

func (b *Batcher) exportBatch(spans []sdktrace.ReadOnlySpan) {
	ctx := context.Background()
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, b.timeout, errors.New("span export timeout"))
		defer cancel()
	}
	if err := b.e.ExportSpans(ctx, spans); err != nil {
		otel.Handle(err)
	}
}

// ForceFlush exports every span ended so far.
func (b *Batcher) ForceFlush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case b.flushes <- done:
	case <-b.done:
		return nil // stopped: everything was exported
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is left, stops the goroutine and shuts the
// exporter down. Spans ended after it are dropped.
func (b *Batcher) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	first := !b.stopped
	b.stopped = true
	b.mu.Unlock()
	if first {
		close(b.stop)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if !first {
		return nil
	}
	return b.e.Shutdown(ctx)
}

// envMillis is the variable name as milliseconds (0: no timeout), def when
// unset or not a non-negative integer.
func envMillis(name string, def time.Duration) time.Duration {
	if n, ok := envInt(name); ok && n >= 0 {
		return time.Duration(n) * time.Millisecond
	}
	return def
}

// envPositive is the variable name as a positive integer, def otherwise.
func envPositive(name string, def int) int {
	if n, ok := envInt(name); ok && n > 0 {
		return n
	}
	return def
}

func envInt(name string) (int, bool) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}
