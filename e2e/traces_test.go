package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/askpoint/askpoint/question"
)

// TestServeExportsTracesOverOTLP runs the real binary with tracing
// configured only by the standard variables (OTEL_EXPORTER_OTLP_ENDPOINT,
// OTEL_SERVICE_NAME, and a schedule delay of an hour, so that nothing is
// exported before the stop), asks and answers the worked example's
// question on each binding, with a caller's traceparent on the ask, and
// stops the server with SIGTERM: by the time it exits, an OTLP/HTTP
// receiver on 127.0.0.1 has every span.
//
// On JSON-RPC and HTTP+JSON the worked example's steps run within their
// requests (quick steps), so they have no spans of their own (decision
// 0230): the ask's request span is in the caller's trace, a child of its
// span, with the task's IDs and askpoint.step=quick; the answer's, in a
// trace of its own, says the question was answered and links to the ask's.
// Over gRPC, which askpoint gives no server span, each step is a span of
// its own, and the answer's step links to the step that asked.
func TestServeExportsTracesOverOTLP(t *testing.T) {
	bin := buildAskpoint(t)
	rcv := startOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.url)
	t.Setenv("OTEL_SERVICE_NAME", "askpoint-e2e")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "3600000")
	srv, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(srv.log.String(), "askpoint: tracing on") {
		t.Fatalf("serve did not say tracing is on:\n%s", srv.log)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	tp := &traceparentTransport{}
	only := func(p a2a.TransportProtocol) a2aclient.FactoryOption {
		return a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{p}})
	}
	bindings := []struct {
		name string
		c    *a2aclient.Client
		// callerSpan is the span of the caller's traceparent on the ask,
		// "" on gRPC (askpoint reads none there); path is the ask's URL
		// path, for the HTTP bindings.
		callerSpan, path string
	}{
		{"JSON-RPC", crashClient(ctx, t, srv.url, a2aclient.WithJSONRPCTransport(&http.Client{Transport: tp}), only(a2a.TransportProtocolJSONRPC)),
			"00f067aa0ba902b7", "/expense/jsonrpc"},
		{"HTTP+JSON", crashClient(ctx, t, srv.url, a2aclient.WithRESTTransport(&http.Client{Transport: tp}), only(a2a.TransportProtocolHTTPJSON)),
			"00f067aa0ba902b8", "/expense/rest/message:send"},
		{"gRPC", grpcClient(t, srv.url, "expense", ""), "", ""},
	}
	tasks := make([]*a2a.Task, len(bindings))
	for i, b := range bindings {
		if b.callerSpan != "" {
			tp.set("00-" + callerTrace + "-" + b.callerSpan + "-01")
		}
		task := crashSendOK(ctx, t, b.c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")), false)
		q, ok, err := question.FromMessage(task.Status.Message)
		if err != nil || !ok {
			t.Fatalf("%s: the task asks no question: %s, %v", b.name, task.Status.State, err)
		}
		tp.set("") // the answer comes later, in a trace of its own
		if done := crashSendOK(ctx, t, b.c, crashAnswer(string(task.ID), q.ID), false); done.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("%s: answered task is %s, want completed", b.name, done.Status.State)
		}
		tasks[i] = task
	}
	if got := len(rcv.all()); got != 0 {
		t.Fatalf("%d spans exported before the stop with a schedule delay of an hour; the test cannot tell the stop's flush from the timer", got)
	}

	if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.done:
	case <-ctx.Done():
		t.Fatalf("askpoint did not exit after SIGTERM:\n%s", srv.log)
	}
	if code := srv.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit status %d after SIGTERM:\n%s", code, srv.log)
	}

	spans := rcv.all()
	if rcv.service() != "askpoint-e2e" {
		t.Errorf("service.name %q, want OTEL_SERVICE_NAME's askpoint-e2e", rcv.service())
	}
	find := func(name string, match func(s *tracepb.Span) bool) *tracepb.Span {
		for _, s := range spans {
			if s.Name == name && match(s) {
				return s
			}
		}
		return nil
	}
	inCaller := func(s *tracepb.Span) bool { return fmt.Sprintf("%x", s.TraceId) == callerTrace }
	linksTo := func(s, to *tracepb.Span) bool {
		return len(s.Links) == 1 && string(s.Links[0].SpanId) == string(to.SpanId) && string(s.Links[0].TraceId) == string(to.TraceId) &&
			len(s.Links[0].Attributes) == 1 && s.Links[0].Attributes[0].Key == "askpoint.link" && s.Links[0].Attributes[0].Value.GetStringValue() == "asked"
	}
	for i, b := range bindings {
		task := tasks[i]
		ofTask := func(s *tracepb.Span) bool { return attr(s, "askpoint.task_id") == string(task.ID) }
		if b.callerSpan == "" {
			askStep := find("askpoint.step expense", func(s *tracepb.Span) bool {
				return ofTask(s) && attr(s, "askpoint.context_id") == task.ContextID && len(s.Links) == 0
			})
			if askStep == nil {
				t.Errorf("%s: no step span of the ask with the task's IDs; spans: %s", b.name, spanList(spans))
				continue
			}
			if find("askpoint.step expense", func(s *tracepb.Span) bool {
				return ofTask(s) && string(s.TraceId) != string(askStep.TraceId) && linksTo(s, askStep)
			}) == nil {
				t.Errorf("%s: no step span of the answer, in a trace of its own, linked to the asking step; spans: %s", b.name, spanList(spans))
			}
			continue
		}
		askReq := find("a2a POST /expense", func(s *tracepb.Span) bool {
			return ofTask(s) && inCaller(s) && fmt.Sprintf("%x", s.ParentSpanId) == b.callerSpan && attr(s, "askpoint.context_id") == task.ContextID &&
				attr(s, "askpoint.step") == "quick" && attr(s, "url.path") == b.path && s.Kind == tracepb.Span_SPAN_KIND_SERVER && len(s.Links) == 0
		})
		if askReq == nil {
			t.Errorf("%s: no server span of the ask (%s) in the caller's trace, child of its span, with the task's IDs and askpoint.step=quick; spans: %s",
				b.name, b.path, spanList(spans))
			continue
		}
		if find("a2a POST /expense", func(s *tracepb.Span) bool {
			return ofTask(s) && !inCaller(s) && attr(s, "askpoint.question") == "answered" && attr(s, "askpoint.step") == "quick" && linksTo(s, askReq)
		}) == nil {
			t.Errorf("%s: no server span of the answer, in a trace of its own, that says the question was answered and links to the ask's; spans: %s",
				b.name, spanList(spans))
		}
		if s := find("askpoint.step expense", ofTask); s != nil {
			t.Errorf("%s: a quick step has a span of its own: %s", b.name, spanList([]*tracepb.Span{s}))
		}
	}
}

// traceparentTransport sends the traceparent it was last given (none when
// empty) on every request.
type traceparentTransport struct {
	mu sync.Mutex
	tp string
}

func (t *traceparentTransport) set(tp string) { t.mu.Lock(); t.tp = tp; t.mu.Unlock() }

func (t *traceparentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.mu.Lock()
	tp := t.tp
	t.mu.Unlock()
	if tp != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Traceparent", tp)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// otlpReceiver is an OTLP/HTTP trace receiver (protobuf) on 127.0.0.1.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	reqs  []*coltrace.ExportTraceServiceRequest
	fails []string
}

func startOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &otlpReceiver{url: "http://" + ln.Addr().String()}
	hs := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		m := &coltrace.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, m)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			r.fails = append(r.fails, fmt.Sprintf("%s %s (%s): %v", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err))
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		r.reqs = append(r.reqs, m)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		_ = hs.Close()
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, f := range r.fails {
			t.Errorf("the OTLP receiver refused %s", f)
		}
	})
	return r
}

func (r *otlpReceiver) all() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, m := range r.reqs {
		for _, rs := range m.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// service is the service.name of the first export's resource.
func (r *otlpReceiver) service() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.reqs {
		for _, rs := range m.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					return a.Value.GetStringValue()
				}
			}
		}
	}
	return ""
}

// attr is the string attribute key of s, "" when it has none.
func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

func spanList(spans []*tracepb.Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s trace=%x span=%x parent=%x links=%d", s.Name, s.TraceId, s.SpanId, s.ParentSpanId, len(s.Links))
		for _, l := range s.Links {
			fmt.Fprintf(&b, " ->%x", l.SpanId)
		}
		for _, a := range s.Attributes {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value.GetValue())
		}
	}
	return b.String()
}
