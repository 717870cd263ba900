package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// Tracing is askpoint's tracer provider and the Batcher that exports its
// spans. The provider has no span processor: an Observer made with New
// hands each span it ends to the Batcher itself, so the SDK makes no copy
// of the span at its end (decision 0083). It is a trace.TracerProvider.
type Tracing struct {
	embedded.TracerProvider
	provider *sdktrace.TracerProvider
	batcher  *Batcher
}

// Tracer is the provider's tracer of name.
func (t *Tracing) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return t.provider.Tracer(name, opts...)
}

// NewTracing starts a Batcher exporting to e (configured by the OTEL_BSP_*
// variables) and a tracer provider built with opts, which should add no
// span processor.
func NewTracing(e sdktrace.SpanExporter, opts ...sdktrace.TracerProviderOption) *Tracing {
	return &Tracing{provider: sdktrace.NewTracerProvider(opts...), batcher: NewBatcher(e)}
}

// ForceFlush exports every span ended so far.
func (t *Tracing) ForceFlush(ctx context.Context) error { return t.batcher.ForceFlush(ctx) }

// Shutdown exports what is left and stops the Batcher and the provider.
func (t *Tracing) Shutdown(ctx context.Context) error {
	return errors.Join(t.batcher.Shutdown(ctx), t.provider.Shutdown(ctx))
}

// TracingFromEnv builds askpoint's tracing from the standard OTEL_*
// environment variables: OTEL_TRACES_EXPORTER (otlp, console or none; otlp
// when unset and an OTLP endpoint is), OTEL_EXPORTER_OTLP_ENDPOINT /
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and the rest of the OTLP exporter's
// variables (HTTP/protobuf), OTEL_SERVICE_NAME, the SDK's sampler
// variables and its OTEL_BSP_* batch variables (read by Batcher). It
// returns nil when none asks for traces: then tracing is off and costs
// nothing.
func TracingFromEnv(ctx context.Context, console io.Writer) (*Tracing, error) {
	exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")))
	if exp == "" && (os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "") {
		exp = "otlp"
	}
	if p := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"); exp == "otlp" && p != "" && p != "http/protobuf" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=%q: askpoint exports traces over http/protobuf only", p)
	} else if p := os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"); exp == "otlp" && p != "" && p != "http/protobuf" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") == "" {
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: askpoint exports traces over http/protobuf only", p)
	}
	var e sdktrace.SpanExporter
	var err error
	switch exp {
	case "", "none":
		return nil, nil
	case "otlp":
		e, err = otlptracehttp.New(ctx)
	case "console":
		e, err = stdouttrace.New(stdouttrace.WithWriter(console))
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: use otlp, console or none", exp)
	}
	if err != nil {
		return nil, fmt.Errorf("trace exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(serviceName())))
	if err != nil {
		res = resource.Default()
	}
	return NewTracing(e, sdktrace.WithResource(res)), nil
}

func serviceName() string {
	if n := os.Getenv("OTEL_SERVICE_NAME"); n != "" {
		return n
	}
	return "askpoint"
}

// TracerName is the instrumentation scope of askpoint's spans.
const TracerName = "github.com/askpoint/askpoint"
