package telemetry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/askpoint/askpoint/internal/api"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askpoint/askpoint/telemetry"
)

// TestPushJoinsTheTaskLatestTrace: a push delivery's span is a child of
// the span of its task's latest traced change, with that span's
// tracestate (taken from the caller's request); a task this node has not
// seen gets a trace of its own.
func TestPushJoinsTheTaskLatestTrace(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	obs := &telemetry.Observer{Tracer: tp.Tracer(telemetry.TracerName)}
	const taskID = "019ad7a4-3c2e-7b41-9a5e-2f1c3d4e5f60"
	h := obs.ObserveHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		obs.Transition(r.Context(), api.Transition{TaskID: taskID, ContextID: "c", Agent: "expense", To: "working", Cause: "start"})
	}))
	r := httptest.NewRequest(http.MethodPost, "/expense/jsonrpc", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	r.Header.Set("Tracestate", "vendor=value")
	h.ServeHTTP(httptest.NewRecorder(), r)

	_, end := obs.StartPush(context.Background(), taskID)
	end(nil)
	_, end = obs.StartPush(context.Background(), "unseen")
	end(nil)
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want the request's and two pushes'", len(spans))
	}
	req, push, alone := spans[0], spans[1], spans[2]
	if push.Parent.SpanID() != req.SpanContext.SpanID() || push.SpanContext.TraceID() != req.SpanContext.TraceID() {
		t.Errorf("push span's parent %v, want the request's span %v", push.Parent, req.SpanContext)
	}
	if got := push.Parent.TraceState().Get("vendor"); got != "value" {
		t.Errorf("push span's parent tracestate vendor=%q, want value", got)
	}
	if alone.Parent.IsValid() || alone.SpanContext.TraceID() == req.SpanContext.TraceID() {
		t.Errorf("push of an unseen task: parent %v, trace %v; want a trace of its own", alone.Parent, alone.SpanContext.TraceID())
	}
}
