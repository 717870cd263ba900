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

	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/telemetry"
)

// BenchmarkObserver is the observer's part of one round trip without the
// rest of the server: two requests through Middleware, each with its
// task's change, and two steps (the second linked to the first), with
// every span sampled and batched to an exporter that drops them, by the
// processor serve uses (batcher=askpoint) or the SDK's (batcher=sdk).
// cpu-ns/op is the process's CPU time (the processor's goroutine
// included):
//
//	go test -run '^$' -bench Observer -benchmem ./internal/telemetry/
func BenchmarkObserver(b *testing.B) {
	for _, p := range []string{"askpoint", "sdk"} {
		b.Run("batcher="+p, func(b *testing.B) {
			var sp sdktrace.SpanProcessor
			if p == "askpoint" {
				sp = telemetry.NewBatcher(tracetest.NewNoopExporter())
			} else {
				sp = sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())
			}
			benchObserver(b, sp)
		})
	}
}

func benchObserver(b *testing.B, sp sdktrace.SpanProcessor) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	obs := &telemetry.Observer{Metrics: telemetry.NewMetrics(), Tracer: tp.Tracer(telemetry.TracerName)}
	var asked string
	h := obs.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		answer := r.Header.Get("X-Answer") != ""
		tr := engine.Transition{TaskID: "0f9a7c2e-5d41-4b7a-9c1e-2a8b3d4e5f60", ContextID: "c1", Agent: "expense", To: "working", Cause: "start"}
		link := ""
		if answer {
			tr.Cause, tr.From, tr.Closed, tr.ClosedKind, tr.Waited = "answer", "input-required", engine.QuestionAnswered, "costCentre", time.Second
			link = asked
		}
		obs.Transition(ctx, tr)
		sctx, end := obs.StartStep(ctx, engine.StepInfo{TaskID: tr.TaskID, ContextID: tr.ContextID, Agent: tr.Agent, Link: link})
		step := engine.Transition{TaskID: tr.TaskID, ContextID: tr.ContextID, Agent: tr.Agent, From: "working", Cause: "step"}
		if answer {
			step.To, step.Ended = "completed", true
		} else {
			step.To, step.Asked, step.Kind = "input-required", true, "costCentre"
			asked = obs.TraceParent(sctx)
		}
		obs.Transition(sctx, step)
		end(nil)
		w.WriteHeader(http.StatusOK)
	}))
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
//	go test -run '^$' -bench SpanProcessorIdle -benchtime 2000x ./internal/telemetry/
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
