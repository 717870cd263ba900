//go:build unix

package servertest_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/telemetry"
)

// The round-trip benchmarks measure the worked example end to end: an
// a2a-go JSON-RPC client sends "File my taxi receipt from Tuesday, 42
// euros" to the expense agent (blocking: returns input-required), then
// answers {"costCentre": "CC-4410"} on the same task (blocking: returns
// completed). Real HTTP on 127.0.0.1, a real SQLite file. Client and server
// share the process, so allocations and CPU time count both.
//
//	go test -run '^$' -bench RoundTrip -benchtime 3s -count 3 ./internal/servertest/

const benchReceipt = "File my taxi receipt from Tuesday, 42 euros"

// BenchmarkRoundTrip is one caller doing ask -> answer -> complete.
func BenchmarkRoundTrip(b *testing.B) {
	benchSerial(b, benchSetup(b))
}

// benchSerial runs round trips on c one after the other and reports them.
func benchSerial(b *testing.B, c *a2aclient.Client) {
	b.Helper()
	ctx := b.Context()
	b.ReportAllocs()
	cpu := benchCPU()
	b.ResetTimer()
	for range b.N {
		if err := benchRoundTrip(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	benchReport(b, cpu)
}

// BenchmarkRoundTripParallel is the same with 8 and 32 concurrent callers
// sharing one client (and its connection pool).
func BenchmarkRoundTripParallel(b *testing.B) {
	for _, callers := range []int{8, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			benchParallel(b, benchSetup(b), callers)
		})
	}
}

// benchParallel runs round trips on c from about callers concurrent
// goroutines and reports them.
func benchParallel(b *testing.B, c *a2aclient.Client, callers int) {
	b.Helper()
	ctx := b.Context()
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs) // RunParallel starts parallelism × GOMAXPROCS goroutines
	b.ReportAllocs()
	cpu := benchCPU()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := benchRoundTrip(ctx, c); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	benchReport(b, cpu)
}

// BenchmarkQuickSteps is the 32-caller round trip with quick steps (a
// blocking call's step written with its message, docs/decisions/0016) and
// without (the message written first, then the step's outcome):
//
//	go test -run '^$' -bench QuickSteps -benchtime 3s -count 3 ./internal/servertest/
func BenchmarkQuickSteps(b *testing.B) {
	for _, quick := range []bool{true, false} {
		b.Run(fmt.Sprintf("quick=%v", quick), func(b *testing.B) {
			benchParallel(b, benchSetup(b, func(cfg *askpoint.Config) { cfg.DisableQuickSteps = !quick }), 32)
		})
	}
}

// benchSetup starts a quiet server on a new SQLite file and returns a
// JSON-RPC client for the expense agent whose connection pool is large
// enough for every caller (the default keeps 2 idle connections per host,
// which would make the parallel runs dial a new connection per call).
func benchSetup(b *testing.B, config ...func(*askpoint.Config)) *a2aclient.Client {
	b.Helper()
	opts := apitest.Options{Quiet: true}
	if len(config) > 0 {
		opts.Config = config[0]
	}
	return benchSetupWith(b, opts)
}

// benchSetupWith is benchSetup with the server started with opts.
func benchSetupWith(b *testing.B, opts apitest.Options) *a2aclient.Client {
	b.Helper()
	env := apitest.Start(b, opts)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	card, err := agentcard.NewResolver(hc).Resolve(b.Context(), env.AgentURL("expense"))
	if err != nil {
		b.Fatalf("resolve the expense agent's card: %v", err)
	}
	var keep []*a2a.AgentInterface
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolJSONRPC {
			keep = append(keep, iface)
		}
	}
	if len(keep) == 0 {
		b.Fatal("the expense agent offers no JSON-RPC interface")
	}
	card.SupportedInterfaces = keep
	c, err := a2aclient.NewFromCard(b.Context(), card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		b.Fatalf("NewFromCard: %v", err)
	}
	b.Cleanup(func() { _ = c.Destroy() })
	// One round trip before the clock starts: the card, the connection and
	// the schema cache are warm.
	if err := benchRoundTrip(b.Context(), c); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchRoundTrip is one ask -> answer -> complete; it fails on any state
// other than the expected one.
func benchRoundTrip(ctx context.Context, c *a2aclient.Client) error {
	first, err := benchSend(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(benchReceipt)))
	if err != nil {
		return fmt.Errorf("send the receipt: %w", err)
	}
	if first.Status.State != a2a.TaskStateInputRequired {
		return fmt.Errorf("send the receipt: task %s is %s, want %s", first.ID, first.Status.State, a2a.TaskStateInputRequired)
	}
	p := a2a.NewDataPart(map[string]any{"costCentre": "CC-4410"})
	p.MediaType = question.MediaTypeJSON
	answer := a2a.NewMessage(a2a.MessageRoleUser, p)
	answer.TaskID = first.ID
	done, err := benchSend(ctx, c, answer)
	if err != nil {
		return fmt.Errorf("answer task %s: %w", first.ID, err)
	}
	if done.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("answer task %s: state %s, want %s", first.ID, done.Status.State, a2a.TaskStateCompleted)
	}
	if len(done.Artifacts) != 1 {
		return fmt.Errorf("answer task %s: %d artifacts, want 1", first.ID, len(done.Artifacts))
	}
	return nil
}

func benchSend(ctx context.Context, c *a2aclient.Client, m *a2a.Message) (*a2a.Task, error) {
	return apitest.Send(ctx, c, &a2a.SendMessageRequest{Message: m})
}

// benchCPU is the process's user+system CPU time so far (client and
// server together: both run in this process).
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchReport(b *testing.B, cpuBefore time.Duration) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "roundtrips/s")
	}
	if cpu := benchCPU() - cpuBefore; cpu > 0 {
		b.ReportMetric(float64(b.N)/cpu.Seconds(), "roundtrips/cpu-s")
	}
}

// BenchmarkTelemetry is the one-caller round trip with metrics and tracing
// off and on: every metric, the timed store, a server span per request and
// a span per step, every span sampled and batched to an exporter that drops
// them (what `askpoint bench --telemetry` measures). Client and server
// share the process, but the client is the same in both, so the difference
// in B/op and allocs/op is the server's telemetry:
//
//	go test -run '^$' -bench Telemetry -benchtime 2000x -count 5 ./internal/servertest/
func BenchmarkTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("on=%v", on), func(b *testing.B) {
			var c *a2aclient.Client
			if on {
				tp := telemetry.NewTracing(tracetest.NewNoopExporter(), sdktrace.WithSampler(sdktrace.AlwaysSample()))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				m, err := telemetry.NewMetrics(nil)
				if err != nil {
					b.Fatal(err)
				}
				obs := telemetry.New(m, tp)
				c = benchSetupWith(b, apitest.Options{Quiet: true, Config: func(cfg *askpoint.Config) { cfg.Observer = obs }})
			} else {
				c = benchSetupWith(b, apitest.Options{Quiet: true})
			}
			benchSerial(b, c)
		})
	}
}
