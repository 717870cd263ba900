package telemetry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/telemetry"
)

// exported tells a test when spans are exported, so that it waits on a
// signal.
type exported struct {
	*tracetest.InMemoryExporter
	ch chan struct{}
}

func (e exported) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.InMemoryExporter.ExportSpans(ctx, spans)
	select {
	case e.ch <- struct{}{}:
	default:
	}
	return err
}

// TestOneRequestIsOneTrace follows one request to the finance assistant
// through its call to the expense agent and the expense agent's push
// notification back to the assistant: every span is in the caller's trace.
// The assistant's first step runs within the caller's request (a quick
// step, no span of its own: decision 0230), the expense agent's after its
// request replied (the relay sends with returnImmediately), as spans of
// their own.
// The answer, sent later in a trace of its own, resumes the assistant's
// step with a link to the trace that asked, and the expense agent's with a
// link to its asking step. Spans are exported as serve exports them
// (telemetry.Tracing), every 10 ms.
func TestOneRequestIsOneTrace(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")
	exp := tracetest.NewInMemoryExporter()
	done := exported{InMemoryExporter: exp, ch: make(chan struct{}, 1)}
	tr := telemetry.NewTracing(done)
	t.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	obs := telemetry.New(newMetrics(t), tr)
	callers := sdktrace.NewTracerProvider() // the caller's own spans: for their IDs, exported nowhere
	t.Cleanup(func() { _ = callers.Shutdown(context.Background()) })
	prev := http.DefaultTransport
	http.DefaultTransport = obs.Transport(prev)
	t.Cleanup(func() { http.DefaultTransport = prev })

	ln, base := apitest.Listen(t, "")
	u, _ := url.Parse(base)
	assistant, err := expense.Assistant(expense.AssistantConfig{ExpenseURL: base + "/expense", SelfURL: base + "/assistant"})
	if err != nil {
		t.Fatal(err)
	}
	apitest.Start(t, apitest.Options{
		Quiet: true, Listener: ln,
		Agents: []askpoint.AgentSpec{{Name: "assistant", Agent: assistant, Card: expense.AssistantCard()}},
		Config: func(c *askpoint.Config) {
			c.WebhookHosts = []string{u.Host}
			c.PushInterval = 50 * time.Millisecond
			c.Observer = obs
		},
	})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(ctx, base+"/assistant")
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: obs.Transport(prev)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	caller := callers.Tracer("caller")

	askCtx, root := caller.Start(ctx, "caller asks")
	res, err := c.SendMessage(askCtx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
	root.End()
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SendMessage = %T %+v, want the assistant's task in input-required", res, res)
	}
	first := root.SpanContext().TraceID()

	// Wait for the expense agent's push of its question to the assistant.
	in := func(id trace.TraceID) map[string]int {
		n := map[string]int{}
		for _, s := range exp.GetSpans() {
			if s.SpanContext.TraceID() == id {
				n[s.Name]++
			}
		}
		return n
	}
	for in(first)["askpoint.push"] == 0 {
		select {
		case <-done.ch:
		case <-ctx.Done():
			t.Fatalf("no push delivery span in the caller's trace; spans there: %v; all: %v", in(first), names(exp.GetSpans()))
		}
	}
	got := in(first)
	for _, want := range []string{"a2a POST /assistant", "a2a POST /expense", "askpoint.step expense", "askpoint.push"} {
		if got[want] == 0 {
			t.Errorf("the caller's trace has no %q span; it has %v (all spans: %v)", want, got, names(exp.GetSpans()))
		}
	}

	// A request's server span has the request and, when the request
	// itself wrote the task (the expense agent's, here), the task's IDs.
	request := func(id trace.TraceID, name string, attrs map[string]string) bool {
		for _, s := range exp.GetSpans() {
			if s.Name != name || s.SpanContext.TraceID() != id || s.SpanKind != trace.SpanKindServer {
				continue
			}
			ok := true
			for k, v := range attrs {
				ok = ok && hasAttr(s, k, v)
			}
			if ok {
				return true
			}
		}
		return false
	}
	// The assistant's step is told on the caller's request's span.
	quick := map[string]string{"askpoint.step": "quick", "askpoint.task_id": string(task.ID), "askpoint.context_id": task.ContextID,
		"askpoint.agent": "assistant"}
	for !request(first, "a2a POST /assistant", quick) {
		select {
		case <-done.ch:
		case <-ctx.Done():
			t.Fatalf("no server span a2a POST /assistant in the caller's trace has %v; server spans: %v", quick, servers(exp.GetSpans()))
		}
	}
	asked := map[string]string{"http.request.method": "POST", "url.path": "/expense/jsonrpc", "http.response.status_code": "200",
		"askpoint.task_id": "*", "askpoint.context_id": "*", "askpoint.agent": "expense"}
	for !request(first, "a2a POST /expense", asked) {
		select {
		case <-done.ch:
		case <-ctx.Done():
			t.Fatalf("no server span a2a POST /expense in the caller's trace has %v; server spans: %v", asked, servers(exp.GetSpans()))
		}
	}

	// The answer comes in a trace of its own; the assistant's step it
	// resumes, on the answer's request span, links back to the asking
	// request, and the expense agent's step the relay resumes to its
	// asking step.
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok {
		t.Fatalf("the assistant's task carries no question: %v", err)
	}
	ans := a2a.NewMessage(a2a.MessageRoleUser, dataPart(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	ans.TaskID = task.ID
	ansCtx, second := caller.Start(ctx, "caller answers")
	_, err = c.SendMessage(ansCtx, &a2a.SendMessageRequest{Message: ans})
	second.End()
	if err != nil {
		t.Fatal(err)
	}
	// linked: a span named name in the answer's trace links to one named
	// to (either of to's names) in the asking trace.
	linked := func(name string, to ...string) bool {
		spans := exp.GetSpans()
		for _, s := range spans {
			if s.Name != name || s.SpanContext.TraceID() != second.SpanContext().TraceID() {
				continue
			}
			for _, l := range s.Links {
				for _, a := range spans {
					if slices.Contains(to, a.Name) && a.SpanContext.TraceID() == first && a.SpanContext.SpanID() == l.SpanContext.SpanID() {
						return true
					}
				}
			}
		}
		return false
	}
	// The assistant asks from its first step (on the caller's request's
	// span) when the expense agent's push came while that step still ran,
	// else from the step the push's wake owed, a worker's span of its own.
	for _, l := range [][]string{{"a2a POST /assistant", "a2a POST /assistant", "askpoint.step assistant"}, {"askpoint.step expense", "askpoint.step expense"}} {
		for !linked(l[0], l[1:]...) {
			select {
			case <-done.ch:
			case <-ctx.Done():
				t.Fatalf("no %s span in the answer's trace links to a %v span of the asking trace; spans: %v", l[0], l[1:], names(exp.GetSpans()))
			}
		}
	}
	answered := map[string]string{"http.response.status_code": "200", "askpoint.agent": "expense", "askpoint.question": "answered"}
	for !request(second.SpanContext().TraceID(), "a2a POST /expense", answered) {
		select {
		case <-done.ch:
		case <-ctx.Done():
			t.Fatalf("no server span a2a POST /expense in the answer's trace has %v; server spans: %v", answered, servers(exp.GetSpans()))
		}
	}
}

func dataPart(v map[string]any) *a2a.Part {
	p := a2a.NewDataPart(v)
	p.MediaType = question.MediaTypeJSON
	return p
}

// hasAttr reports whether s has the attribute key with the value want
// ("*": any value).
func hasAttr(s tracetest.SpanStub, key, want string) bool {
	for _, a := range s.Attributes {
		if string(a.Key) == key && (want == "*" || a.Value.Emit() == want) {
			return true
		}
	}
	return false
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"@"+s.SpanContext.TraceID().String()[:8])
	}
	return out
}

func servers(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		if s.SpanKind == trace.SpanKindServer {
			out = append(out, fmt.Sprintf("%s@%s %v", s.Name, s.SpanContext.TraceID().String()[:8], s.Attributes))
		}
	}
	return out
}
