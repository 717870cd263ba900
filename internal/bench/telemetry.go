package bench

import (
	"context"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askpoint/askpoint/internal/telemetry"
)

// benchObserver is what `askpoint serve` observes with when metrics and
// tracing are on: every metric, the timed store, and every span sampled
// and batched (telemetry.Batcher, as serve does) to an exporter that drops
// them (the cost measured is askpoint's and the SDK's, not a collector's).
func benchObserver() (*telemetry.Observer, func()) {
	tp := telemetry.NewTracing(tracetest.NewNoopExporter(), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	o := tp.Observer(telemetry.NewMetrics())
	return o, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}
}
