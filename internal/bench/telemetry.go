package bench

import (
	"context"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/telemetry"
)

// benchObserver is what `askpoint serve` observes with when metrics and
// tracing are on: every metric, the timed store, and every span sampled
// and batched (telemetry.Batcher, as serve does) to an exporter that drops
// them (the cost measured is askpoint's and the SDK's, not a collector's).
func benchObserver() (*telemetry.Observer, func(), error) {
	m, err := telemetry.NewMetrics(nil)
	if err != nil {
		return nil, nil, err
	}
	tp := telemetry.NewTracing(tracetest.NewNoopExporter(), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	return telemetry.New(m, tp), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}, nil
}

// storeObserved is an observer whose store is observed already: the bench
// times the store under its call counter (trackedStore), as serve does.
type storeObserved struct{ *telemetry.Observer }

func (storeObserved) ObserveStore(s store.Store) store.Store { return s }
