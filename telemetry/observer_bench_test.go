//go:build unix

package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askpoint/askpoint/telemetry"
)

// BenchmarkObserver is the observer's part of one round trip without the
// rest of the server: two requests through ObserveHTTP, each running a
// quick step (the second linked to the first) and writing its change, with
// every span sampled and exported to an exporter that drops them: as serve
// does (spans=askpoint: telemetry.Tracing, the ended span handed to the
// Batcher, decision 0083), through the Batcher as the provider's span
// processor (spans=batcher, decision 0068), or through the SDK's batch
// processor (spans=sdk). cpu-ns/op is the process's CPU time (the
// processor's goroutine included):
//
//	go test -run '^$' -bench Observer -benchmem ./telemetry/
func BenchmarkObserver(b *testing.B) {
	for _, p := range []string{"askpoint", "batcher", "sdk"} {
		b.Run("spans="+p, func(b *testing.B) {
			var obs *telemetry.Observer
			switch p {
			case "askpoint":
				tr := telemetry.NewTracing(tracetest.NewNoopExporter(), sdktrace.WithSampler(sdktrace.AlwaysSample()))
				b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
				obs = telemetry.New(newMetrics(b), tr)
			default:
				// Only the processor measured is made: one made and dropped
				// would leave its goroutine running past the benchmark.
				var sp sdktrace.SpanProcessor
				if p == "batcher" {
					sp = telemetry.NewBatcher(tracetest.NewNoopExporter())
				} else {
					sp = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				obs = telemetry.New(newMetrics(b), tp)
			}
			benchObserver(b, obs)
		})
	}
}

func benchObserver(b *testing.B, obs *telemetry.Observer) {
	h := quickSteps(obs)
	ask := httptest.NewRequest(http.MethodPost, "/expense/jsonrpc", nil)
	ans := httptest.NewRequest(http.MethodPost, "/expense/jsonrpc", nil)
	ans.Header.Set("X-Answer", "1")
	w := httptest.NewRecorder()
	b.ReportAllocs()
	cpu := processCPU()
	b.ResetTimer()
	for range b.N {
		h.ServeHTTP(w, ask)
		h.ServeHTTP(w, ans)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSpanProcessorIdle is what ending a span costs a process that
// is otherwise idle between spans, as a server waiting on its callers and
// its disk is: four spans per op, each followed by a short sleep, ended
// into no processor, into the SDK's batch processor (one channel send per
// span, which wakes its goroutine and with it a thread), and into Batcher
// (decision 0068). cpu-ns/op is the process's CPU time, the sleeps' own
// included (the "none" row):
//
//	go test -run '^$' -bench SpanProcessorIdle -benchtime 2000x ./telemetry/
func BenchmarkSpanProcessorIdle(b *testing.B) {
	for _, p := range []string{"none", "sdk", "askpoint"} {
		b.Run("batcher="+p, func(b *testing.B) {
			opts := []sdktrace.TracerProviderOption{sdktrace.WithSampler(sdktrace.AlwaysSample())}
			switch p {
			case "sdk":
				opts = append(opts, sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())))
			case "askpoint":
				opts = append(opts, sdktrace.WithSpanProcessor(telemetry.NewBatcher(tracetest.NewNoopExporter())))
			}
			tp := sdktrace.NewTracerProvider(opts...)
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr := tp.Tracer(telemetry.TracerName)
			ctx := context.Background()
			cpu := processCPU()
			b.ResetTimer()
			for range b.N {
				for range 4 {
					_, span := tr.Start(ctx, "askpoint.step expense")
					span.End()
					time.Sleep(50 * time.Microsecond)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}
