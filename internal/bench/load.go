package bench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/question"
)

// The load generator: N callers, each doing ask -> answer -> complete in a
// loop over JSON-RPC (or gRPC), sharing one client and its connection pool.

type answerKey struct{}

// tagTransport adds answerHeader to the HTTP request of an answer, so the
// server can time the answer's arrival.
type tagTransport struct{ base http.RoundTripper }

func (t tagTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if id, ok := r.Context().Value(answerKey{}).(string); ok {
		r = r.Clone(r.Context())
		r.Header.Set(answerHeader, id)
	}
	return t.base.RoundTrip(r)
}

// newClient returns a client for the agent at url over binding (JSON-RPC
// or HTTP+JSON) whose pool keeps a connection per caller.
func newClient(ctx context.Context, url string, binding a2a.TransportProtocol, callers int) (*a2aclient.Client, func(), error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = callers+16, callers+16
	hc := &http.Client{Transport: tagTransport{tr}, Timeout: 2 * time.Minute}
	transport := a2aclient.WithJSONRPCTransport(hc)
	if binding == a2a.TransportProtocolHTTPJSON {
		transport = a2aclient.WithRESTTransport(hc)
	}
	c, err := a2aclient.NewFromEndpoints(ctx,
		[]*a2a.AgentInterface{a2a.NewAgentInterface(url, binding)}, transport)
	if err != nil {
		return nil, nil, err
	}
	return c, func() { _ = c.Destroy(); tr.CloseIdleConnections() }, nil
}

// newGRPCClient returns a gRPC client for the expense agent of the server
// at base (http://host:port): one connection, its calls multiplexed, the
// answer's call tagged with answerHeader metadata.
func newGRPCClient(ctx context.Context, base string) (*a2aclient.Client, func(), error) {
	iface := a2a.NewAgentInterface(strings.TrimPrefix(base, "http://"), a2a.TransportProtocolGRPC)
	iface.Tenant = "expense"
	tag := grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if id, ok := ctx.Value(answerKey{}).(string); ok {
			ctx = metadata.AppendToOutgoingContext(ctx, answerHeader, id)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	})
	c, err := a2aclient.NewFromEndpoints(ctx, []*a2a.AgentInterface{iface}, grpcdial.Transport(false, tag))
	if err != nil {
		return nil, nil, err
	}
	return c, func() { _ = c.Destroy() }, nil
}

// roundTrip is one ask -> answer -> complete; it returns each call's
// latency and fails on any state other than the expected one.
func roundTrip(ctx context.Context, c *a2aclient.Client) (ask, answer time.Duration, err error) {
	t0 := time.Now()
	first, err := send(ctx, c, receiptMessage())
	ask = time.Since(t0)
	if err != nil {
		return ask, 0, fmt.Errorf("send the receipt: %w", err)
	}
	if first.Status.State != a2a.TaskStateInputRequired {
		return ask, 0, fmt.Errorf("send the receipt: task %s is %s, want input-required", first.ID, first.Status.State)
	}
	p := a2a.NewDataPart(map[string]any{"costCentre": "CC-4410"})
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = first.ID
	t1 := time.Now()
	done, err := send(context.WithValue(ctx, answerKey{}, string(first.ID)), c, m)
	answer = time.Since(t1)
	if err != nil {
		return ask, answer, fmt.Errorf("answer task %s: %w", first.ID, err)
	}
	if done.Status.State != a2a.TaskStateCompleted || len(done.Artifacts) != 1 {
		return ask, answer, fmt.Errorf("answer task %s: state %s with %d artifacts, want completed with 1", first.ID, done.Status.State, len(done.Artifacts))
	}
	return ask, answer, nil
}

func send(ctx context.Context, c *a2aclient.Client, m *a2a.Message) (*a2a.Task, error) {
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		return nil, err
	}
	t, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("SendMessage returned %T, want a task", res)
	}
	return t, nil
}

type loadResult struct {
	roundTrips  int
	errors      int
	firstErr    error
	elapsed     time.Duration
	ask, answer []time.Duration
}

// runLoad runs callers loops for d; round trips started before d ends are
// finished and counted, and elapsed runs until the last one finishes.
func runLoad(ctx context.Context, c *a2aclient.Client, callers int, d time.Duration) loadResult {
	var (
		mu  sync.Mutex
		res loadResult
		wg  sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for range callers {
		wg.Go(func() {
			var asks, answers []time.Duration
			n, fails := 0, 0
			var firstErr error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				a, b, err := roundTrip(ctx, c)
				if err != nil {
					fails++
					if firstErr == nil {
						firstErr = err
					}
					if fails > 100 && n == 0 {
						break // the server is not working; do not spin
					}
					continue
				}
				n++
				asks, answers = append(asks, a), append(answers, b)
			}
			mu.Lock()
			res.roundTrips += n
			res.errors += fails
			if res.firstErr == nil {
				res.firstErr = firstErr
			}
			res.ask, res.answer = append(res.ask, asks...), append(res.answer, answers...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

// quantile returns the q-quantile (nearest rank) of ds; 0 when empty.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
