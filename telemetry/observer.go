package telemetry

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/store"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Observer is an askpoint.Observer (Config.Observer) that records
// askpoint's Prometheus metrics when Metrics is set and its OpenTelemetry
// spans when Tracer is set; either may be nil, and the zero Observer
// records nothing. Make one with New.
type Observer struct {
	Metrics *Metrics
	Tracer  trace.Tracer
	// batcher, when set, is handed every span the observer ends, the SDK's
	// span itself rather than the copy the SDK makes for span processors
	// (decision 0083): New sets it for a Tracing, whose provider has no
	// span processor of its own. Without it, spans go to the provider's
	// processors as usual.
	batcher *Batcher

	prop propagation.TraceContext
	// last is the span of each task's latest traced change, so that its
	// push deliveries join that trace. Bounded: when full, it starts again
	// (a delivery then starts a trace of its own). Keys and values hold no
	// pointers, so the collector does not scan its thousands of entries;
	// the rare span with a tracestate keeps it in states.
	mu     sync.Mutex
	last   map[taskKey]lastSpan
	states map[taskKey]trace.TraceState

	names spanNames
}

// New returns an observer that records m (nil: no metrics) and spans made
// with tp (nil: no spans), under the instrumentation scope TracerName. A
// *Tracing (TracingFromEnv, NewTracing) exports its spans at less cost
// than another provider (decision 0083).
func New(m *Metrics, tp trace.TracerProvider) *Observer {
	o := &Observer{Metrics: m}
	switch t := tp.(type) {
	case nil:
	case *Tracing:
		if t != nil { // a nil *Tracing, as TracingFromEnv returns without OTEL_*: no spans
			o.Tracer, o.batcher = t.provider.Tracer(TracerName), t.batcher
		}
	default:
		o.Tracer = tp.Tracer(TracerName)
	}
	return o
}

// ObserveStore wraps s so that its operations are timed
// (askpoint_store_operation_seconds) when the observer records metrics.
func (o *Observer) ObserveStore(s store.Store) store.Store {
	if o == nil || o.Metrics == nil {
		return s
	}
	return o.Metrics.TimedStore(s)
}

// stepSpan starts the name of an agent step's span.
const stepSpan = "askpoint.step "

// maxRemembered bounds Observer.last.
const maxRemembered = 10000

// taskKey is a task ID as a map key without a pointer: IDs longer than it
// (askpoint's are 36 characters) are not remembered.
type taskKey struct {
	n  uint8
	id [47]byte
}

func keyOf(taskID string) (taskKey, bool) {
	var k taskKey
	if len(taskID) > len(k.id) {
		return k, false
	}
	k.n = uint8(len(taskID))
	copy(k.id[:], taskID)
	return k, true
}

// lastSpan is the part of a span context that Observer.last keeps.
type lastSpan struct {
	trace trace.TraceID
	span  trace.SpanID
	flags trace.TraceFlags
}

// remember keeps sc as the latest traced change of taskID.
func (o *Observer) remember(taskID string, sc trace.SpanContext) {
	k, ok := keyOf(taskID)
	if !ok {
		return
	}
	ts := sc.TraceState()
	o.mu.Lock()
	switch {
	case o.last == nil:
		o.last = make(map[taskKey]lastSpan, maxRemembered)
	case len(o.last) >= maxRemembered:
		// Emptied in place: the map keeps its table, so it is not grown
		// again, one doubling after another, each time it fills.
		clear(o.last)
		o.states = nil
	}
	o.last[k] = lastSpan{trace: sc.TraceID(), span: sc.SpanID(), flags: sc.TraceFlags()}
	if ts.Len() > 0 {
		if o.states == nil {
			o.states = map[taskKey]trace.TraceState{}
		}
		o.states[k] = ts
	} else if o.states != nil {
		delete(o.states, k)
	}
	o.mu.Unlock()
}

// remembered is the span context of taskID's latest traced change, as a
// remote parent; false when this node does not remember one.
func (o *Observer) remembered(taskID string) (trace.SpanContext, bool) {
	k, ok := keyOf(taskID)
	if !ok {
		return trace.SpanContext{}, false
	}
	o.mu.Lock()
	l, ok := o.last[k]
	ts := o.states[k]
	o.mu.Unlock()
	if !ok {
		return trace.SpanContext{}, false
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: l.trace, SpanID: l.span, TraceFlags: l.flags, TraceState: ts, Remote: true}), true
}

var _ api.Observer = (*Observer)(nil)

// Transition counts a committed change and, when tracing, notes it: on the
// server span of the request that made it (its attributes are set once, as
// it ends), or on the recording span in ctx when no request is (a step run
// by a worker). A step run within its request (a quick step) has no span
// of its own (decision 0230), so the request's span says what the change
// did. Either span is then the task's latest traced change.
func (o *Observer) Transition(ctx context.Context, t api.Transition) {
	if o.Metrics != nil {
		o.Metrics.transition(&t)
	}
	if o.Tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	rs, _ := ctx.Value(servedKey{}).(*served)
	switch {
	case rs != nil && rs.note(&t):
		// The request that made the change says so as its span ends.
		if !span.IsRecording() {
			span = rs.span
		}
		if !span.IsRecording() {
			return // sampled out
		}
	case span.IsRecording():
		// A step's span has its task's IDs from its start.
		if t.Closed != "" {
			span.SetAttributes(attribute.String("askpoint.question", string(t.Closed)))
		}
	default:
		return
	}
	o.remember(t.TaskID, span.SpanContext())
}

// Event counts e.
func (o *Observer) Event(_ context.Context, agent string, e api.Event) {
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
// made it owed (s.Parent, or the span in s.Request), linked to the request
// that asked the question it resumes from (s.Link).
//
// A step run within a request this observer traces (a quick step: it
// starts and ends while its request's span is open) starts no span of its
// own (decision 0230): the request's span carries its attributes, its link
// and its error, and its context has the request's span as the current one,
// so what the step writes and calls is told under the request's span.
func (o *Observer) StartStep(ctx context.Context, s api.StepInfo) (context.Context, func(error)) {
	if o.Tracer == nil {
		return ctx, noEnd
	}
	if rs, _ := ctxValue(s.Request).(*served); rs != nil {
		rs.step(&s, o.linked(s.Link))
		if spanKey == nil { // a trace package that reads the span otherwise
			ctx = trace.ContextWithSpan(ctx, rs.span)
		}
		sb := &servedBy{Context: ctx, rs: rs}
		return sb, sb.end
	}
	switch {
	case trace.SpanContextFromContext(ctx).IsValid():
	case s.Request != nil && trace.SpanContextFromContext(s.Request).IsValid():
		// Within a request no server span of ours traces (a gRPC call, a
		// handler of the program's own): a child of the request's span.
		ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(s.Request))
	case s.Parent != "":
		ctx = o.extract(ctx, s.Parent)
	}
	name := o.names.get("", s.Agent, stepSpan)
	var span trace.Span
	if sc := o.linked(s.Link); sc.IsValid() {
		// The link is given at the start, where a sampler sees it, in a
		// pooled list (the SDK copies it into the span), with attributes
		// every link shares (the SDK keeps them as they are: they need no
		// normalising, and nothing writes to them).
		l := linkPool.Get().(*[1]trace.Link)
		l[0] = trace.Link{SpanContext: sc, Attributes: askedLinkAttrs}
		ctx, span = o.Tracer.Start(ctx, name, internalKind, trace.WithLinks(l[:]...))
		l[0] = trace.Link{}
		linkPool.Put(l)
	} else {
		ctx, span = o.Tracer.Start(ctx, name, internalKind)
	}
	if span.IsRecording() {
		// Set after the start rather than with trace.WithAttributes, which
		// copies them once more (the SDK's samplers do not read them),
		// from a pooled list (the SDK copies what it is given).
		p := attrPool.Get().(*attrList)
		a := append(p[:0], attribute.String("askpoint.task_id", s.TaskID), attribute.String("askpoint.context_id", s.ContextID),
			attribute.String("askpoint.agent", s.Agent))
		span.SetAttributes(a...)
		putAttrs(p, a)
	}
	return ctx, o.endWith(span)
}

// attrList is the attributes a span is given at once: a request's at most
// eight, a step's three.
type attrList [8]attribute.KeyValue

// attrPool keeps the lists spans' attributes are passed in: SetAttributes
// copies them into the span, so one list serves every span in turn.
var attrPool = sync.Pool{New: func() any { return new(attrList) }}

// putAttrs clears what a (a slice of p) held and gives p back to the pool.
func putAttrs(p *attrList, a []attribute.KeyValue) {
	clear(a)
	attrPool.Put(p)
}

var (
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
	serverKind   = trace.WithSpanKind(trace.SpanKindServer)
	clientKind   = trace.WithSpanKind(trace.SpanKindClient)
	// askedLinkAttrs are the attributes of a step's link to the request
	// that asked the question it resumes from.
	askedLinkAttrs = []attribute.KeyValue{attribute.String("askpoint.link", "asked")}
	// quickStepAttr marks a request's span as that of a step run within
	// the request too (decision 0230).
	quickStepAttr = attribute.String("askpoint.step", "quick")
)

// linkPool keeps the one-link lists a resumed step's span starts with.
var linkPool = sync.Pool{New: func() any { return new([1]trace.Link) }}

// linked is the span context of a kept traceparent, invalid when there is
// none or it does not parse.
func (o *Observer) linked(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	if sc, ok := parseTraceParent(traceparent); ok {
		return sc
	}
	return trace.SpanContextFromContext(o.prop.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent}))
}

// StartPush starts the span of a push delivery, in the trace of the
// task's latest traced change when this node remembers it.
func (o *Observer) StartPush(ctx context.Context, taskID string) (context.Context, func(error)) {
	if o.Tracer == nil {
		return ctx, noEnd
	}
	if sc, ok := o.remembered(taskID); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	ctx, span := o.Tracer.Start(ctx, "askpoint.push", clientKind,
		trace.WithAttributes(attribute.String("askpoint.task_id", taskID)))
	return ctx, o.endWith(span)
}

func (o *Observer) endWith(span trace.Span) func(error) {
	return func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, firstLine(err.Error()))
		}
		o.end(span)
	}
}

// end ends span and hands it to o.batcher when there is one: the SDK's
// span, which after End is only read (its methods take its lock), goes to
// the exporter as it is (decision 0083).
func (o *Observer) end(span trace.Span) {
	span.End()
	if o.batcher == nil {
		return
	}
	if ro, ok := span.(sdktrace.ReadOnlySpan); ok {
		o.batcher.OnEnd(ro)
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
	// 00-<32 hex trace ID>-<16 hex span ID>-<2 hex flags>, built in one
	// buffer (the IDs' String methods allocate one string each).
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// extract is ctx with the remote span context of traceparent (one the
// engine kept from TraceParent), ctx unchanged when it does not parse.
func (o *Observer) extract(ctx context.Context, traceparent string) context.Context {
	if sc, ok := parseTraceParent(traceparent); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return o.prop.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// parseTraceParent parses a traceparent as TraceParent writes it (version
// 00, no tracestate) without the propagator's carrier; false when it is not
// of that form (the propagator then reads it).
func parseTraceParent(traceparent string) (trace.SpanContext, bool) {
	// 00-<32 hex trace ID>-<16 hex span ID>-<2 hex flags>
	if len(traceparent) != 55 || traceparent[:3] != "00-" || traceparent[35] != '-' || traceparent[52] != '-' {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(traceparent[3:35])
	sid, err2 := trace.SpanIDFromHex(traceparent[36:52])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if traceparent[53:] == "01" {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}

// ObserveHTTP gives every request a server span, a child of the caller's
// W3C traceparent when it sends one. Without a tracer it returns h.
//
// The span's attributes (method, path, status, and the task's IDs that the
// engine tells Transition) are set once, when it ends: one write of the
// span's attribute list instead of one per change.
func (o *Observer) ObserveHTTP(h http.Handler) http.Handler {
	if o == nil || o.Tracer == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if _, ok := r.Header["Traceparent"]; ok { // the server's header keys are canonical
			ctx = o.prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
		}
		sv := &served{statusWriter: statusWriter{ResponseWriter: w, code: http.StatusOK}}
		sv.Context, sv.span = o.Tracer.Start(ctx, o.names.get(r.Method, agentOf(r.URL.Path), "a2a "), serverKind)
		defer o.endRequest(sv, r)
		h.ServeHTTP(&sv.statusWriter, r.WithContext(sv))
	})
}

// served is one request under Middleware: its response's status and its
// server span, with what the engine told of the request's task, kept until
// the span ends. It is the handler's context too: the span's context, with
// itself under servedKey (one allocation less than context.WithValue).
type served struct {
	context.Context
	statusWriter
	span trace.Span

	mu                       sync.Mutex
	ended                    bool
	taskID, contextID, agent string
	question                 string
	// quick: a step ran within the request (decision 0230); linked: its
	// link to the asking span is on the request's span.
	quick, linked bool
}

type servedKey struct{}

// servedBy is a context that has the request rs under servedKey and its
// span as the current span, for a step run within that request from a
// context of the engine's own: one allocation where the span's own context
// and this would be two.
type servedBy struct {
	context.Context
	rs *served
}

// end ends a step run within its request: its error, if any, is told on
// the request's span, as the step's own span would have told it.
func (c *servedBy) end(err error) {
	if err != nil {
		c.rs.span.RecordError(err)
		c.rs.span.SetStatus(codes.Error, firstLine(err.Error()))
	}
}

func (c *servedBy) Value(key any) any {
	if _, ok := key.(servedKey); ok {
		return c.rs
	}
	if key == spanKey && spanKey != nil {
		return c.rs.span
	}
	return c.Context.Value(key)
}

// spanKey is the key under which the trace package keeps a context's span,
// read by asking trace.SpanFromContext of a context that notes the key it
// is asked for (nil if it asks for none: servedBy then wraps the span's
// own context).
var spanKey = func() any {
	p := &keyProbe{Context: context.Background()}
	trace.SpanFromContext(p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(key any) any {
	p.key = key
	return nil
}

// ctxValue is ctx's servedKey value, nil without a ctx.
func ctxValue(ctx context.Context) any {
	if ctx == nil {
		return nil
	}
	return ctx.Value(servedKey{})
}

// Value is s for servedKey, else the span context's value.
func (s *served) Value(key any) any {
	if _, ok := key.(servedKey); ok {
		return s
	}
	return s.Context.Value(key)
}

// note keeps what t tells of the request's task; false when the span ended.
func (s *served) note(t *api.Transition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false
	}
	s.taskID, s.contextID, s.agent = t.TaskID, t.ContextID, t.Agent
	if t.Closed != "" {
		s.question = string(t.Closed)
	}
	return true
}

// step keeps what the span of a step run within the request would have
// said: the task's IDs (a change the step writes tells the same) and,
// once, the link to the span that asked the question it resumes from,
// added to the request's span at once.
func (s *served) step(st *api.StepInfo, link trace.SpanContext) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.quick = true
	s.taskID, s.contextID, s.agent = st.TaskID, st.ContextID, st.Agent
	addLink := link.IsValid() && !s.linked
	if addLink {
		s.linked = true
	}
	s.mu.Unlock()
	if addLink {
		s.span.AddLink(trace.Link{SpanContext: link, Attributes: askedLinkAttrs})
	}
}

// endRequest sets the request's attributes on its span and ends it.
func (o *Observer) endRequest(s *served, r *http.Request) {
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	if s.span.IsRecording() {
		p := attrPool.Get().(*attrList)
		a := append(p[:0], attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path),
			attribute.Int("http.response.status_code", s.code))
		if s.taskID != "" {
			a = append(a, attribute.String("askpoint.task_id", s.taskID), attribute.String("askpoint.context_id", s.contextID),
				attribute.String("askpoint.agent", s.agent))
		}
		if s.question != "" {
			a = append(a, attribute.String("askpoint.question", s.question))
		}
		if s.quick {
			a = append(a, quickStepAttr)
		}
		s.span.SetAttributes(a...)
		putAttrs(p, a)
	}
	if s.code >= 500 {
		s.span.SetStatus(codes.Error, http.StatusText(s.code))
	}
	o.end(s.span)
}

// spanNames keeps span names by method and agent, so that a request's or a
// step's name is not built again each time. Bounded (a path's first
// segment is the caller's to choose): when full, names are built and not
// kept.
type spanNames struct {
	mu sync.RWMutex
	m  map[[2]string]string
}

const maxSpanNames = 256

// get is prefix+agent for a step (method ""), prefix+method+" /"+agent for
// a request.
func (n *spanNames) get(method, agent, prefix string) string {
	key := [2]string{method, agent}
	n.mu.RLock()
	name, ok := n.m[key]
	n.mu.RUnlock()
	if ok {
		return name
	}
	if method == "" {
		name = prefix + agent
	} else {
		name = prefix + method + " /" + agent
	}
	n.mu.Lock()
	if n.m == nil {
		n.m = make(map[[2]string]string)
	}
	if len(n.m) < maxSpanNames {
		n.m[key] = name
	}
	n.mu.Unlock()
	return name
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

// WriteString writes str as the server's writer does, without the copy
// io.WriteString makes of it for a writer that has no WriteString (the
// engine writes its replies so).
func (s *statusWriter) WriteString(str string) (int, error) {
	return io.WriteString(s.ResponseWriter, str)
}

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
