package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	atext "github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/mcpbridge"
	"github.com/askpoint/askpoint/question"
)

// bookSchema is the form the booking tool elicits: a choice with titles,
// an integer with bounds and a boolean.
var bookSchema = map[string]any{
	"type":     "object",
	"required": []any{"class", "nights"},
	"properties": map[string]any{
		"class": map[string]any{"type": "string", "title": "Class", "oneOf": []any{
			map[string]any{"const": "eco", "title": "Economy"},
			map[string]any{"const": "biz", "title": "Business"},
		}},
		"nights": map[string]any{"type": "integer", "title": "Nights", "minimum": 1, "maximum": 14},
		"refund": map[string]any{"type": "boolean", "title": "Refundable"},
	},
}

// toolServer is an MCP server (go-sdk) on 127.0.0.1 whose tools elicit
// with multi round-trip requests. It keeps nothing between calls but what
// it counts: all it needs is in the requestState, as the revision has it.
type toolServer struct {
	url  string
	addr string

	mu       sync.Mutex
	srv      *http.Server
	retries  int              // calls that came with inputResponses
	answers  []map[string]any // the accepted contents, in order
	metas    []mcp.Meta       // the responses' _meta, in order
	declined int
	canceled []mcp.Meta    // the _meta of each call that came with a cancel, in order
	cancels  chan string   // the requestState of each call that came with a cancel
	release  chan struct{} // closed when the test ends: the hanging tool returns
}

func startToolServer(t *testing.T) *toolServer {
	t.Helper()
	ts := &toolServer{release: make(chan struct{}), cancels: make(chan string, 10)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	ts.url = "http://" + ts.addr + "/mcp"
	ts.serve(ln)
	t.Cleanup(ts.stop)
	t.Cleanup(func() { close(ts.release) })
	return ts
}

func (ts *toolServer) serve(ln net.Listener) {
	s := mcp.NewServer(&mcp.Implementation{Name: "travel-tools", Version: "1"}, nil)
	in := map[string]any{"type": "object", "required": []any{"city"}, "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	s.AddTool(&mcp.Tool{Name: "book_trip", Title: "Book a trip", Description: "Books a trip to a city.", InputSchema: in}, ts.book)
	s.AddTool(&mcp.Tool{Name: "nested", InputSchema: in}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{RequestState: "s", InputRequests: mcp.InputRequestMap{"who": &mcp.ElicitParams{Mode: "form", Message: "Who travels?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"traveller": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "hoarder", InputSchema: in}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{RequestState: strings.Repeat("x", mcpbridge.DefaultMaxRequestState+1), InputRequests: mcp.InputRequestMap{"ok": &mcp.ElicitParams{Mode: "form", Message: "OK?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "link", InputSchema: in}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if r, ok := req.Params.InputResponses["signin"].(*mcp.ElicitResult); ok && r.Action == "accept" && req.Params.RequestState == "url-1" {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Linked."}}}, nil
		} else if ok && r.Action == "cancel" {
			ts.cancels <- req.Params.RequestState
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Not linked."}}}, nil
		}
		return &mcp.CallToolResult{RequestState: "url-1", InputRequests: mcp.InputRequestMap{"signin": &mcp.ElicitParams{Mode: "url",
			Message: "Sign in to the airline.", URL: "https://airline.example/signin?s=1", ElicitationID: "e-1"}}}, nil
	})
	s.AddTool(&mcp.Tool{Name: "hang", InputSchema: in}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		select { // never answers, until the test ends
		case <-ctx.Done():
		case <-ts.release:
		}
		return nil, errors.New("gave up")
	})
	s.AddTool(&mcp.Tool{Name: "broken", InputSchema: in}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no flights to Atlantis"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.HandleFunc("/garbage", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"this is": "not JSON-RPC"`))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ts.mu.Lock()
	ts.srv = srv
	ts.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// stop takes the server down; start brings it back on the same address.
func (ts *toolServer) stop() {
	ts.mu.Lock()
	srv := ts.srv
	ts.srv = nil
	ts.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
	}
}

func (ts *toolServer) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", ts.addr)
	if err != nil {
		t.Fatalf("listen on %s again: %v", ts.addr, err)
	}
	ts.serve(ln)
}

func (ts *toolServer) counts() (retries, declined int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.retries, ts.declined
}

// book asks for the travel class, nights and refundability; 13 nights it
// asks again (the tool's own re-ask), a decline books nothing.
func (ts *toolServer) book(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct{ City string }
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.City == "" {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no city"}}}, nil
	}
	ask := func(state, extra string) *mcp.CallToolResult {
		return &mcp.CallToolResult{RequestState: state, InputRequests: mcp.InputRequestMap{"prefs": &mcp.ElicitParams{
			Mode: "form", Message: "How do you want to travel to " + args.City + "?" + extra, RequestedSchema: bookSchema}}}
	}
	if len(req.Params.InputResponses) == 0 {
		return ask("round-1:"+args.City, ""), nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.retries++
	if !strings.HasSuffix(req.Params.RequestState, ":"+args.City) {
		return nil, fmt.Errorf("requestState %q is not this call's", req.Params.RequestState)
	}
	r, ok := req.Params.InputResponses["prefs"].(*mcp.ElicitResult)
	if !ok {
		return nil, errors.New("no response for prefs")
	}
	ts.metas = append(ts.metas, r.Meta)
	switch r.Action {
	case "decline":
		ts.declined++
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Nothing booked: you declined."}}}, nil
	case "cancel":
		ts.canceled = append(ts.canceled, req.Params.Meta)
		ts.cancels <- req.Params.RequestState
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Nothing booked: canceled."}}}, nil
	case "accept":
	default:
		return nil, fmt.Errorf("action %q", r.Action)
	}
	ts.answers = append(ts.answers, r.Content)
	if n, _ := r.Content["nights"].(float64); n == 13 {
		return ask("round-2:"+args.City, " We have no rooms for 13 nights; choose another stay."), nil
	}
	ref := fmt.Sprintf("TRIP-%s-%v-%v", args.City, r.Content["class"], r.Content["nights"])
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "Booked " + ref}},
		StructuredContent: map[string]any{"ref": ref, "refund": r.Content["refund"]},
	}, nil
}

// toolRig is a ToolAgent per tool of the server, on an askpointtest
// server whose step retries are quick.
type toolRig struct {
	env   *askpointtest.Env
	ts    *toolServer
	specs []askpoint.AgentSpec
	seen  chan error // every error the agents' HTTP client meets
}

func newToolRig(t *testing.T) *toolRig { return newToolRigOn(t, nil) }

// newToolRigOn is newToolRig on a clock the test moves (nil: the real
// clock).
func newToolRigOn(t *testing.T, clock *askpointtest.Clock) *toolRig {
	t.Helper()
	r := &toolRig{ts: startToolServer(t), seen: make(chan error, 100)}
	server := &mcpbridge.MCPServer{URL: r.ts.url, HTTPClient: &http.Client{Transport: watchTransport{r.seen}}}
	cfg := mcpbridge.ToolAgentConfig{Expiry: time.Hour}
	if clock != nil {
		cfg.Now = clock.Now
	}
	specs, err := mcpbridge.ToolAgents(t.Context(), server, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.specs = specs
	r.env = askpointtest.StartWith(t, askpointtest.Options{Quiet: true, Clock: clock, Config: func(c *askpoint.Config) {
		c.StepRetries, c.StepRetryMin, c.StepRetryMax = 1000, 5*time.Millisecond, 20*time.Millisecond
	}}, r.specs...)
	return r
}

// watchTransport reports each request that failed (a server that is down).
type watchTransport struct{ seen chan error }

func (w watchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil && req.Method == http.MethodPost { // a request, not a session's end
		select {
		case w.seen <- err:
		default:
		}
	}
	return res, err
}

func wantState(t *testing.T, task *a2a.Task, state a2a.TaskState) {
	t.Helper()
	if task.Status.State != state {
		t.Fatalf("task %s is %s (%q); want %s", task.ID, atext.StateWord(task.Status.State), atext.Of(task.Status.Message), atext.StateWord(state))
	}
}

// The elicitation is an askpoint question: the message, the schema, the
// choice's titles as labelled options, an ID of the runtime's and the
// agent's expiry; the answer goes back as the elicitation's accept with
// the question's ID, and the tool's result is the artifact.
func TestToolAgentAsksTheToolsElicitationAsAQuestion(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Lisbon")
	q := r.env.Question(t, task)
	if q.Text != "How do you want to travel to Lisbon?" || q.ID == "" || q.Expires.IsZero() || time.Until(q.Expires) > time.Hour {
		t.Errorf("question %q id %q expires %v; want the elicitation's message, an ID and an expiry within the hour", q.Text, q.ID, q.Expires)
	}
	if q.OptionsFor != "class" || len(q.Options) != 2 || q.Options[0].Label != "Economy" || q.Options[1].Value != "biz" {
		t.Errorf("options for %q: %+v; want eco/Economy and biz/Business", q.OptionsFor, q.Options)
	}
	var schema map[string]any
	if err := json.Unmarshal(q.Schema, &schema); err != nil || fmt.Sprint(schema["required"]) != "[class nights]" {
		t.Errorf("answerSchema %s; want the requestedSchema", q.Schema)
	}
	done := r.env.Answer(t, task, map[string]any{"class": "biz", "nights": 3, "refund": true})
	wantState(t, done, a2a.TaskStateCompleted)
	art := done.Artifacts[0]
	if got := atext.Parts(art.Parts, "\n"); !strings.Contains(got, "Booked TRIP-Lisbon-biz-3") {
		t.Errorf("artifact text %q; want the tool's text", got)
	}
	if d, ok := art.Parts[len(art.Parts)-1].Content.(a2a.Data); !ok || d.Value.(map[string]any)["ref"] != "TRIP-Lisbon-biz-3" {
		t.Errorf("artifact parts %+v; want structuredContent as a data part", art.Parts)
	}
	if r.ts.metas[0][mcpbridge.MetaQuestionID] != q.ID || r.ts.metas[0][mcpbridge.MetaTaskID] != string(task.ID) {
		t.Errorf("the tool's response _meta %v; want question %s of task %s", r.ts.metas[0], q.ID, task.ID)
	}
}

// A restart of askpoint between the question and the answer: the state
// is in the task's checkpoint.
func TestToolAgentQuestionSurvivesARestart(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Porto")
	r.env.Question(t, task)
	r.env.Restart(t, r.specs...)
	done := r.env.Answer(t, task, map[string]any{"class": "eco", "nights": 2})
	wantState(t, done, a2a.TaskStateCompleted)
	if !strings.Contains(atext.Parts(done.Artifacts[0].Parts, "\n"), "TRIP-Porto-eco-2") {
		t.Errorf("artifact %q; want the booking", atext.Parts(done.Artifacts[0].Parts, "\n"))
	}
}

// An answer that does not fit the schema is re-asked by askpoint and
// never reaches the tool; a tool that asks again is another question of
// the same task.
func TestToolAgentReAsksWhatDoesNotFitAndWhatTheToolRefuses(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Faro")
	first := r.env.Question(t, task)
	again := r.env.Answer(t, task, map[string]any{"class": "first", "nights": 40})
	q := r.env.Question(t, again)
	if q.Attempt != 2 || len(q.Errors) < 2 || q.ID == first.ID {
		t.Fatalf("re-ask attempt %d errors %v id %s; want askpoint's re-ask of both fields", q.Attempt, q.Errors, q.ID)
	}
	if n, _ := r.ts.counts(); n != 0 {
		t.Fatalf("the tool was retried %d times; an invalid answer must never reach it", n)
	}
	toolAsks := r.env.Answer(t, again, map[string]any{"class": "eco", "nights": 13})
	q2 := r.env.Question(t, toolAsks)
	if toolAsks.ID != task.ID || !strings.Contains(q2.Text, "no rooms for 13 nights") || q2.ID == q.ID {
		t.Fatalf("task %s question %q (%s); want the tool's own re-ask in the same task", toolAsks.ID, q2.Text, q2.ID)
	}
	done := r.env.Answer(t, toolAsks, map[string]any{"class": "eco", "nights": 12})
	wantState(t, done, a2a.TaskStateCompleted)
	if n, _ := r.ts.counts(); n != 2 {
		t.Errorf("the tool was retried %d times; want 2 (13 nights, then 12)", n)
	}
}

// askpoint's decline is MCP's decline; the caller's cancel of the
// question ends the task canceled, and the tool hears a cancel.
func TestToolAgentDeclineAndCancel(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Braga")
	done := r.env.Decline(t, task, "changed my mind")
	wantState(t, done, a2a.TaskStateCompleted)
	if _, d := r.ts.counts(); d != 1 || !strings.Contains(atext.Parts(done.Artifacts[0].Parts, ""), "you declined") {
		t.Errorf("declines %d, artifact %q; want the tool's decline", d, atext.Parts(done.Artifacts[0].Parts, ""))
	}
	other := r.env.Send(t, "book-trip", "Evora")
	q := r.env.Question(t, other)
	canceled := r.env.SendMessage(t, "book-trip", a2a.NewMessageForTask(a2a.MessageRoleUser, other,
		dataPartOf(map[string]any{"questionId": q.ID, "action": "cancel"})))
	wantState(t, canceled, a2a.TaskStateCanceled)
	if state := r.ts.waitCancel(t); state != "round-1:Evora" {
		t.Errorf("the cancel came with requestState %q; want the call's round-1:Evora", state)
	}
}

// waitCancel waits for the tool to hear a cancel and returns the
// requestState it came with.
func (ts *toolServer) waitCancel(t *testing.T) string {
	t.Helper()
	select {
	case s := <-ts.cancels:
		return s
	case <-time.After(time.Minute):
		t.Fatal("the tool never heard a cancel")
		return ""
	}
}

func (ts *toolServer) cancelMetas() []mcp.Meta {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return slices.Clone(ts.canceled)
}

// A CancelTask over A2A while the tool's call waits on its elicitation:
// the runtime releases the task's hold, and the tool's call is retried
// once with cancel and the state, under the release's idempotency key.
func TestToolAgentCancelTaskReachesTheTool(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Lagos")
	r.env.Question(t, task)
	got, err := r.env.Client(t, "book-trip").CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, got, a2a.TaskStateCanceled)
	if state := r.ts.waitCancel(t); state != "round-1:Lagos" {
		t.Errorf("the cancel came with requestState %q; want the call's round-1:Lagos", state)
	}
	if err := r.env.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	metas := r.ts.cancelMetas()
	if len(metas) != 1 {
		t.Fatalf("the tool heard %d cancels; want 1", len(metas))
	}
	if key, _ := metas[0][mcpbridge.MetaIdempotencyKey].(string); !strings.HasPrefix(key, string(task.ID)+"/") || !strings.Contains(key, "/hold/") || metas[0][mcpbridge.MetaTaskID] != string(task.ID) {
		t.Errorf("the cancel's _meta %v; want task %s and its release's key", metas[0], task.ID)
	}
	link := r.env.Send(t, "link", "Lisbon") // auth-required (URL mode) holds the call too
	wantState(t, link, a2a.TaskStateAuthRequired)
	if _, err := r.env.Client(t, "link").CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: link.ID}); err != nil {
		t.Fatal(err)
	}
	if state := r.ts.waitCancel(t); state != "url-1" {
		t.Errorf("the URL-mode cancel came with requestState %q; want url-1", state)
	}
}

// A question that expires unanswered: its task's tool call hears a
// cancel; a task answered before the expiry sends none.
func TestToolAgentExpiryReachesTheToolAndAnAnswerDoesNot(t *testing.T) {
	clock := askpointtest.NewClock(time.Now())
	r := newToolRigOn(t, clock)
	answered := r.env.Send(t, "book-trip", "Beja")
	wantState(t, r.env.Answer(t, answered, map[string]any{"class": "eco", "nights": 2}), a2a.TaskStateCompleted)
	open := r.env.Send(t, "book-trip", "Elvas")
	r.env.Question(t, open)
	clock.Advance(t, 2*time.Hour)
	if state := r.ts.waitCancel(t); state != "round-1:Elvas" {
		t.Errorf("the cancel came with requestState %q; want the expired call's round-1:Elvas", state)
	}
	if err := r.env.Idle(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.ts.cancelMetas()); n != 1 {
		t.Errorf("the tool heard %d cancels; want 1 (the expired task's, not the answered one's)", n)
	}
}

// A tool server that is down when the task is canceled: the release
// fails and the runtime tries it again, so the cancel reaches the tool
// once the server is back.
func TestToolAgentCancelWaitsForTheToolServer(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Viseu")
	r.env.Question(t, task)
	r.ts.stop()
	for len(r.seen) > 0 {
		<-r.seen
	}
	if _, err := r.env.Client(t, "book-trip").CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.seen: // the release met the server down
	case <-time.After(time.Minute):
		t.Fatal("the release never tried the tool server")
	}
	r.ts.start(t)
	if state := r.ts.waitCancel(t); state != "round-1:Viseu" {
		t.Errorf("the cancel came with requestState %q; want round-1:Viseu", state)
	}
}

func dataPartOf(v map[string]any) *a2a.Part {
	p := a2a.NewDataPart(v)
	p.MediaType = "application/json"
	return p
}

// A tool server that is down when the answer comes: the step is tried
// again with backoff, and the answer reaches the tool once it is back.
func TestToolAgentKeepsTheAnswerWhileTheToolServerIsDown(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Sintra")
	q := r.env.Question(t, task)
	r.ts.stop()
	for len(r.seen) > 0 {
		<-r.seen
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := r.env.Client(t, "book-trip")
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, task, dataPartOf(map[string]any{"questionId": q.ID, "class": "eco", "nights": 5}))
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.seen: // the step met the server down
	case <-ctx.Done():
		t.Fatal("the answer's step never tried the tool server")
	}
	r.ts.start(t)
	done := r.env.WaitState(t, string(task.ID), a2a.TaskStateCompleted)
	if !strings.Contains(atext.Parts(done.Artifacts[0].Parts, "\n"), "TRIP-Sintra-eco-5") {
		t.Errorf("artifact %q; want the booking with the answer given while the server was down", atext.Parts(done.Artifacts[0].Parts, "\n"))
	}
	if r.env.StepRetries() == 0 {
		t.Error("no step was tried again")
	}
}

// What cannot be asked, kept or done ends the task failed, saying why.
func TestToolAgentFailsClearly(t *testing.T) {
	r := newToolRig(t)
	for _, c := range []struct{ agent, want string }{
		{"nested", `field "traveller" is of type object`},
		{"hoarder", "requestState of 32769 bytes, more than the 32768"},
		{"broken", "The MCP tool broken failed: no flights to Atlantis"},
	} {
		task := r.env.Send(t, c.agent, "Atlantis")
		wantState(t, task, a2a.TaskStateFailed)
		if got := atext.Of(task.Status.Message); !strings.Contains(got, c.want) {
			t.Errorf("%s: reason %q; want it to say %q", c.agent, got, c.want)
		}
	}
}

// A server that answers with something that is not MCP fails the task,
// naming the server; it is not retried forever.
func TestToolAgentFailsOnGarbage(t *testing.T) {
	ts := startToolServer(t)
	server := &mcpbridge.MCPServer{URL: "http://" + ts.addr + "/garbage"}
	a, err := mcpbridge.NewToolAgent(mcpbridge.ToolAgentConfig{Server: server, Tool: &mcp.Tool{Name: "any", InputSchema: map[string]any{"type": "object"}}})
	if err != nil {
		t.Fatal(err)
	}
	env := askpointtest.StartWith(t, askpointtest.Options{Quiet: true}, askpoint.AgentSpec{Name: "any", Agent: a, Card: a.Card()})
	task := env.SendMessage(t, "any", a2a.NewMessage(a2a.MessageRoleUser, dataPartOf(map[string]any{"x": 1})))
	wantState(t, task, a2a.TaskStateFailed)
	if got := atext.Of(task.Status.Message); !strings.Contains(got, "The call of the MCP tool any failed") || !strings.Contains(got, ts.addr) {
		t.Errorf("reason %q; want the call's failure naming the server", got)
	}
}

// A URL-mode elicitation is an auth-required pause with the URL; the
// caller's follow-up accepts it and the call goes on.
func TestToolAgentSendsTheCallerToAURL(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "link", "Lisbon")
	wantState(t, task, a2a.TaskStateAuthRequired)
	if got := atext.Of(task.Status.Message); !strings.Contains(got, "Sign in to the airline.") || !strings.Contains(got, "https://airline.example/signin?s=1") {
		t.Fatalf("status %q; want the message and the URL", got)
	}
	done := r.env.SendMessage(t, "link", a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("signed in")))
	wantState(t, done, a2a.TaskStateCompleted)
	if got := atext.Parts(done.Artifacts[0].Parts, ""); got != "Linked." {
		t.Errorf("artifact %q; want Linked.", got)
	}
}

// Relayed through askpoint mcp (part 1), the tool's question goes MCP ->
// A2A -> MCP: the form keeps its fields and choices, keyed by the
// question's ID, and the answer reaches the tool.
func TestToolAgentRelayedThroughTheBridge(t *testing.T) {
	r := newToolRig(t)
	b, err := mcpbridge.New(t.Context(), mcpbridge.Config{Key: testKey(t), Agents: []mcpbridge.Agent{{URL: r.env.AgentURL("book-trip")}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "relay-test", Version: "1"}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	tool := b.Tools()[0].Name
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "Coimbra"}})
	if err != nil || len(res.InputRequests) != 1 {
		t.Fatalf("first call: %v %+v; want one input request", err, res)
	}
	taskID, _ := res.Meta[mcpbridge.MetaTaskID].(string)
	q := r.env.WaitQuestion(t, taskID)
	ep, ok := res.InputRequests[q.ID].(*mcp.ElicitParams)
	if !ok {
		t.Fatalf("input requests %v; want one keyed by question %s", res.InputRequests, q.ID)
	}
	schema, _ := json.Marshal(ep.RequestedSchema)
	for _, want := range []string{`"const":"eco"`, `"title":"Economy"`, `"maximum":14`, `"minimum":1`, `"refund":{"title":"Refundable","type":"boolean"}`, `"required":["class","nights"]`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("relayed form %s lacks %s", schema, want)
		}
	}
	if ep.Message != "How do you want to travel to Coimbra?" {
		t.Errorf("relayed message %q", ep.Message)
	}
	done, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, RequestState: res.RequestState,
		InputResponses: mcp.InputResponseMap{q.ID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"class": "eco", "nights": 4, "refund": false}}}})
	if err != nil || done.IsError {
		t.Fatalf("answer: %v %+v", err, done)
	}
	if got, _ := json.Marshal(done.StructuredContent); !strings.Contains(string(got), "TRIP-Coimbra-eco-4") {
		t.Errorf("relayed result %s; want the tool's booking", got)
	}
	if r.ts.metas[0][mcpbridge.MetaQuestionID] != q.ID {
		t.Errorf("the tool saw question %v; want %s", r.ts.metas[0][mcpbridge.MetaQuestionID], q.ID)
	}
}

// A tool that never answers: the call is bounded by MCPServer.Timeout,
// and the task ends failed saying so.
func TestToolAgentFailsWhenTheToolNeverAnswers(t *testing.T) {
	ts := startToolServer(t)
	server := &mcpbridge.MCPServer{URL: ts.url, Timeout: 200 * time.Millisecond}
	a, err := mcpbridge.NewToolAgent(mcpbridge.ToolAgentConfig{Server: server, Tool: &mcp.Tool{Name: "hang", InputSchema: map[string]any{"type": "object"}}})
	if err != nil {
		t.Fatal(err)
	}
	env := askpointtest.StartWith(t, askpointtest.Options{Quiet: true}, askpoint.AgentSpec{Name: "hang", Agent: a, Card: a.Card()})
	task := env.SendMessage(t, "hang", a2a.NewMessage(a2a.MessageRoleUser, dataPartOf(map[string]any{"city": "Nowhere"})))
	wantState(t, task, a2a.TaskStateFailed)
	if got := atext.Of(task.Status.Message); !strings.Contains(got, "gave no answer within 200ms") {
		t.Errorf("reason %q; want the call's bound", got)
	}
}

// The answer's decision record reaches the tool's retry, in the
// response's _meta, beside the question's ID.
func TestToolAgentSendsTheDecisionRecordToTheTool(t *testing.T) {
	r := newToolRig(t)
	task := r.env.Send(t, "book-trip", "Tavira")
	q := r.env.Question(t, task)
	d := question.Decision{Version: question.DecisionVersion, QuestionID: q.ID, Decision: question.DecisionAnswered,
		By: question.Decider{Kind: question.DeciderPerson, Name: "erin", Via: "test"}, QuestionDigest: question.Digest(q), At: time.Now().UTC()}
	m := a2a.NewMessageForTask(a2a.MessageRoleUser, task, dataPartOf(map[string]any{"questionId": q.ID, "class": "eco", "nights": 1}))
	m.Metadata = map[string]any{question.DecisionKey: d.Metadata()}
	wantState(t, r.env.SendMessage(t, "book-trip", m), a2a.TaskStateCompleted)
	got, _ := r.ts.metas[0][mcpbridge.MetaDecision].(map[string]any)
	by, _ := got["by"].(map[string]any)
	if got["questionId"] != q.ID || by["name"] != "erin" || got["decision"] != question.DecisionAnswered {
		t.Errorf("the tool's _meta %v; want erin's decision on question %s", r.ts.metas[0], q.ID)
	}
}
