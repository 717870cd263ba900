// Package telemetry gives an askpoint server Prometheus metrics and
// OpenTelemetry traces: an [Observer] for askpoint.Config.Observer, the
// same one `askpoint serve --metrics-addr` and the OTEL_* variables use.
//
//	m, err := telemetry.NewMetrics(prometheus.DefaultRegisterer) // the askpoint_* series
//	tracing, err := telemetry.TracingFromEnv(ctx, os.Stdout)    // nil when no OTEL_* variable asks for traces
//	srv, err := askpoint.NewServer(askpoint.Config{Store: st, Observer: telemetry.New(m, tracing)})
//
// The server then counts every committed task change, question, re-ask,
// expiry, reminder, hold, push delivery and lease takeover; times every
// store operation; and, with a tracer provider, makes a server span for
// each A2A request (a child of the caller's traceparent), a span for each
// agent step (linked to the request that asked the question it resumes
// from) and one for each push delivery (in the task's trace). Labels carry
// agent names, question kinds, states and outcomes, never task IDs; see
// docs/operations.md for each series and span.
//
// Calls to sub-agents and push receivers carry the caller's traceparent
// when their HTTP client's transport is [Observer.Transport]. Neither
// Prometheus nor OpenTelemetry is linked into a program that does not
// import this package: the root package knows only the Observer interface.
package telemetry
