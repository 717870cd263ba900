package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/askpoint/askpoint/telemetry"
)

// startTelemetry starts what serve observes with: Prometheus metrics on
// their own listener when addr is set, and traces when the OTEL_*
// variables ask for them. It returns nil when neither is on (the engine
// then observes nothing), and a close that stops both.
func startTelemetry(ctx context.Context, addr string, stdout io.Writer, logger *slog.Logger) (*telemetry.Observer, func(), error) {
	tp, err := telemetry.TracingFromEnv(ctx, stdout)
	if err != nil {
		return nil, nil, err
	}
	if addr == "" && tp == nil {
		return nil, func() {}, nil
	}
	var m *telemetry.Metrics
	if addr != "" {
		if m, err = telemetry.NewMetrics(nil); err != nil {
			return nil, nil, err
		}
	}
	o := telemetry.New(m, tp)
	var closers []func()
	if tp != nil {
		// Sub-agent calls (relays, workflows) and push deliveries to the
		// hosts that skip the SSRF guard go through the default
		// transport: they carry the caller's traceparent.
		prev := http.DefaultTransport
		http.DefaultTransport = o.Transport(prev)
		closers = append(closers, func() {
			http.DefaultTransport = prev
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				logger.Warn("flush traces at shutdown", slog.Any("err", err))
			}
		})
		fmt.Fprintln(stdout, "askpoint: tracing on (OTEL_* environment)")
	}
	if addr != "" {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, c := range closers {
				c()
			}
			return nil, nil, fmt.Errorf("--metrics-addr: listen on %s: %v", addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", o.Metrics.Handler())
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("metrics listener stopped", slog.Any("err", err))
			}
		}()
		closers = append(closers, func() { _ = hs.Close() })
		fmt.Fprintf(stdout, "askpoint: metrics on http://%s/metrics\n", ln.Addr())
	}
	return o, func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}, nil
}
