package telemetry_test

import (
	"context"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/askpoint/askpoint/telemetry"
)

// batches is an exporter that keeps the names of the spans of each batch
// it is given and signals each export; when hold is set, the first export
// signals started and waits for release.
type batches struct {
	mu       sync.Mutex
	got      [][]string
	shut     bool
	exported chan struct{}
	hold     bool
	started  chan struct{}
	release  chan struct{}
}

func newBatches() *batches {
	return &batches{exported: make(chan struct{}, 16), started: make(chan struct{}), release: make(chan struct{})}
}

func (e *batches) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	hold := e.hold
	e.hold = false
	e.mu.Unlock()
	if hold {
		close(e.started)
		<-e.release
	}
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	e.mu.Lock()
	e.got = append(e.got, names)
	e.mu.Unlock()
	e.exported <- struct{}{}
	return nil
}

func (e *batches) Shutdown(context.Context) error {
	e.mu.Lock()
	e.shut = true
	e.mu.Unlock()
	return nil
}

func (e *batches) state() ([][]string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.got...), e.shut
}

func spanCount(got [][]string) int {
	n := 0
	for _, b := range got {
		n += len(b)
	}
	return n
}

// endSpans ends spans named after names in tp.
func endSpans(tp *sdktrace.TracerProvider, names ...string) {
	tr := tp.Tracer(telemetry.TracerName)
	for _, n := range names {
		_, s := tr.Start(context.Background(), n)
		s.End()
	}
}

// TestBatcherExportsAFullBatchAtOnce: with a schedule delay of an hour, a
// batch of OTEL_BSP_MAX_EXPORT_BATCH_SIZE spans is exported as soon as it
// is full, in the order the spans ended.
func TestBatcherExportsAFullBatchAtOnce(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "3")
	exp := newBatches()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(telemetry.NewBatcher(exp)))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	endSpans(tp, "a", "b", "c")
	<-exp.exported
	got, _ := exp.state()
	if len(got) != 1 || len(got[0]) != 3 || got[0][0] != "a" || got[0][1] != "b" || got[0][2] != "c" {
		t.Fatalf("exported %v, want one batch [a b c]", got)
	}
}

// TestBatcherExportsAtTheScheduleDelay: a span alone is exported when the
// schedule delay (1 ms here) passes, without a flush.
func TestBatcherExportsAtTheScheduleDelay(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "1")
	exp := newBatches()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(telemetry.NewBatcher(exp)))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	endSpans(tp, "alone")
	for {
		<-exp.exported // the timer may fire on an empty queue first
		if got, _ := exp.state(); spanCount(got) == 1 {
			return
		}
	}
}

// TestBatcherFlushesAndShutsDown: ForceFlush exports what ended before
// it; Shutdown exports the rest, shuts the exporter down, and spans that
// end after it are dropped.
func TestBatcherFlushesAndShutsDown(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	exp := newBatches()
	b := telemetry.NewBatcher(exp)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, "first")
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, shut := exp.state(); spanCount(got) != 1 || shut {
		t.Fatalf("after ForceFlush: exported %v (shut down %v), want [first], not shut down", got, shut)
	}
	endSpans(tp, "second")
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, shut := exp.state()
	if spanCount(got) != 2 || got[len(got)-1][0] != "second" || !shut {
		t.Fatalf("after Shutdown: exported %v (shut down %v), want [first] [second], shut down", got, shut)
	}
	if err := b.ForceFlush(context.Background()); err != nil {
		t.Fatalf("ForceFlush after Shutdown: %v", err)
	}
}

// TestBatcherDropsWhenTheQueueIsFull: while an export is under way, spans
// beyond OTEL_BSP_MAX_QUEUE_SIZE are dropped and counted; those kept are
// exported afterwards.
func TestBatcherDropsWhenTheQueueIsFull(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	t.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", "2")
	t.Setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "1")
	exp := newBatches()
	exp.hold = true
	b := telemetry.NewBatcher(exp)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	endSpans(tp, "exporting")
	<-exp.started
	endSpans(tp, "kept 1", "kept 2", "dropped")
	if n := b.Dropped(); n != 1 {
		t.Fatalf("dropped %d spans, want 1", n)
	}
	close(exp.release)
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := exp.state()
	if spanCount(got) != 3 {
		t.Fatalf("exported %v, want [exporting] [kept 1] [kept 2]", got)
	}
	for _, batch := range got {
		for _, n := range batch {
			if n == "dropped" {
				t.Fatalf("exported %v: the span beyond the queue was not dropped", got)
			}
		}
	}
}
