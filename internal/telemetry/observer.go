package telemetry

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/askpoint/askpoint/internal/engine"
)

// Observer is the engine's observer: metrics when Metrics is set, spans
// when Tracer is set. Either may be nil.
type Observer struct {
	Metrics *Metrics
	Tracer  trace.Tracer

	prop propagation.TraceContext
	// last is the span context of each task's latest traced change, so
	// that its push deliveries join that trace. Bounded: when full, it
	// starts again (a delivery then starts a trace of its own).
	mu   sync.Mutex
	last map[string]trace.SpanContext
}

// stepSpan starts the name of an agent step's span.
const stepSpan = "askpoint.step "

// maxRemembered bounds Observer.last.
const maxRemembered = 10000

var _ engine.Observer = (*Observer)(nil)

// Transition counts a committed change and, when tracing, notes it on the
// span in ctx (the A2A request's or the step's) with the task's IDs.
func (o *Observer) Transition(ctx context.Context, t *engine.Transition) {
	if o.Metrics != nil {
		o.Metrics.transition(t)
	}
	if o.Tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	if ro, ok := span.(interface{ Name() string }); !ok || !strings.HasPrefix(ro.Name(), stepSpan) {
		// A step's span has its task's IDs from its start.
		span.SetAttributes(attribute.String("askpoint.task_id", t.TaskID), attribute.String("askpoint.context_id", t.ContextID),
			attribute.String("askpoint.agent", t.Agent))
	}
	if t.Closed != "" {
		span.SetAttributes(attribute.String("askpoint.question", string(t.Closed)))
	}
	o.mu.Lock()
	if o.last == nil || len(o.last) >= maxRemembered {
		o.last = map[string]trace.SpanContext{}
	}
	o.last[t.TaskID] = span.SpanContext()
	o.mu.Unlock()
}

// Event counts e.
func (o *Observer) Event(_ context.Context, agent string, e engine.Event) {
	if o.Metrics != nil {
		o.Metrics.event(agent, e)
	}
}

// OpenQuestions sets the open-question gauge from the store's count.
func (o *Observer) OpenQuestions(by map[string]int) {
	if o.Metrics != nil {
		o.Metrics.openQuestions(by)
	}
}

func noEnd(error) {}

// StartStep starts the span of an agent step: a child of the request that
// made it owed (s.Parent), linked to the request that asked the question
// it resumes from (s.Link).
func (o *Observer) StartStep(ctx context.Context, s engine.StepInfo) (context.Context, func(error)) {
	if o.Tracer == nil {
		return ctx, noEnd
	}
	if s.Parent != "" && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = o.extract(ctx, s.Parent)
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		attribute.String("askpoint.task_id", s.TaskID), attribute.String("askpoint.context_id", s.ContextID),
		attribute.String("askpoint.agent", s.Agent))}
	if s.Link != "" {
		if sc := trace.SpanContextFromContext(o.extract(context.Background(), s.Link)); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("askpoint.link", "asked")}}))
		}
	}
	ctx, span := o.Tracer.Start(ctx, stepSpan+s.Agent, opts...)
	return ctx, endWith(span)
}

// StartPush starts the span of a push delivery, in the trace of the
// task's latest traced change when this node remembers it.
func (o *Observer) StartPush(ctx context.Context, taskID string) (context.Context, func(error)) {
	if o.Tracer == nil {
		return ctx, noEnd
	}
	o.mu.Lock()
	sc, ok := o.last[taskID]
	o.mu.Unlock()
	if ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, span := o.Tracer.Start(ctx, "askpoint.push", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("askpoint.task_id", taskID)))
	return ctx, endWith(span)
}

func endWith(span trace.Span) func(error) {
	return func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, firstLine(err.Error()))
		}
		span.End()
	}
}

// TraceParent is ctx's span context as a W3C traceparent, "" when tracing
// is off or ctx has none.
func (o *Observer) TraceParent(ctx context.Context) string {
	if o.Tracer == nil {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// extract is ctx with the remote span context of traceparent (one the
// engine kept from TraceParent: version 00, no tracestate), parsed without
// the propagator's carrier; ctx unchanged when it does not parse.
func (o *Observer) extract(ctx context.Context, traceparent string) context.Context {
	// 00-<32 hex trace ID>-<16 hex span ID>-<2 hex flags>
	if len(traceparent) != 55 || traceparent[:3] != "00-" || traceparent[35] != '-' || traceparent[52] != '-' {
		return o.prop.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	}
	tid, err1 := trace.TraceIDFromHex(traceparent[3:35])
	sid, err2 := trace.SpanIDFromHex(traceparent[36:52])
	if err1 != nil || err2 != nil {
		return ctx
	}
	var flags trace.TraceFlags
	if traceparent[53:] == "01" {
		flags = trace.FlagsSampled
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Middleware gives every request a server span, a child of the caller's
// W3C traceparent when it sends one. Without a tracer it returns h.
func (o *Observer) Middleware(h http.Handler) http.Handler {
	if o == nil || o.Tracer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := o.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := o.Tracer.Start(ctx, "a2a "+r.Method+" /"+agentOf(r.URL.Path), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r.WithContext(ctx))
		span.SetAttributes(attribute.Int("http.response.status_code", sw.code))
		if sw.code >= 500 {
			span.SetStatus(codes.Error, http.StatusText(sw.code))
		}
	})
}

// Transport injects the W3C traceparent of the request's context into
// every request base sends (sub-agent calls, push deliveries). Without a
// tracer it returns base.
func (o *Observer) Transport(base http.RoundTripper) http.RoundTripper {
	if o == nil || o.Tracer == nil {
		return base
	}
	return &injecting{o: o, base: base}
}

type injecting struct {
	o    *Observer
	base http.RoundTripper
}

func (t *injecting) RoundTrip(r *http.Request) (*http.Response, error) {
	if !trace.SpanContextFromContext(r.Context()).IsValid() {
		return t.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	t.o.prop.Inject(r.Context(), propagation.HeaderCarrier(r.Header))
	return t.base.RoundTrip(r)
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// agentOf is the first segment of an A2A path (the agent's name): a
// bounded span name, never a task ID.
func agentOf(path string) string {
	seg, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if len(seg) > 40 {
		seg = seg[:40]
	}
	return seg
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
