package telemetry

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// TracerFromEnv builds a tracer provider from the standard OTEL_*
// environment variables: OTEL_TRACES_EXPORTER (otlp, console or none; otlp
// when unset and an OTLP endpoint is), OTEL_EXPORTER_OTLP_ENDPOINT /
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and the rest of the OTLP exporter's
// variables (HTTP/protobuf), OTEL_SERVICE_NAME, the SDK's sampler
// variables and its OTEL_BSP_* batch variables (read by Batcher). It
// returns nil when none asks for traces: then tracing is off and costs
// nothing.
func TracerFromEnv(ctx context.Context, console io.Writer) (*sdktrace.TracerProvider, error) {
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
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(NewBatcher(e)), sdktrace.WithResource(res)), nil
}

func serviceName() string {
	if n := os.Getenv("OTEL_SERVICE_NAME"); n != "" {
		return n
	}
	return "askpoint"
}

// TracerName is the instrumentation scope of askpoint's spans.
const TracerName = "github.com/askpoint/askpoint"
