package mcpbridge_test

import (
	"context"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/mcpbridge"
)

// greeter is an agent of no askpoint's, on the a2a-go SDK's default
// handler: it asks for a name in words only (no question extension), then
// greets whoever it was told.
type greeter struct{}

func (greeter) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			if yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				ask := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("What is your name?"))
				yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, ask), nil)
			}
			return
		}
		var words []string
		for _, p := range ec.Message.Parts {
			words = append(words, p.Text())
		}
		if yield(a2a.NewArtifactEvent(ec, a2a.NewTextPart("Hello, "+strings.Join(words, " ")+"!")), nil) {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
		}
	}
}

func (greeter) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// A question in words only is one text field, and its answer goes back
// as text.
func TestAForeignAgentsQuestionInWords(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(greeter{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
		Name: "Greeter", Description: "Asks your name in words.", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface("http://"+srv.Listener.Addr().String(), a2a.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	r := newRig(t, func(c *mcpbridge.Config) { c.Agents = append(c.Agents, mcpbridge.Agent{URL: srv.URL, Name: "greet"}) })
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "greet", "Greet me")
	key, ep := form(t, res)
	if ep.Message != "What is your name?" || dump(ep.RequestedSchema) != `{"properties":{"answer":{"title":"Answer","type":"string"}},"required":["answer"],"type":"object"}` {
		t.Errorf("form %s", dump(ep))
	}
	done, err := retry(t, cs, "greet", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Ada"}}}, res.RequestState)
	if err != nil || done.IsError || text(done) != "Hello, Ada!" {
		t.Fatalf("result %v %s, want the greeting", err, dump(done))
	}
	_, err = retry(t, cs, "greet", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": "Bob"}}}, res.RequestState)
	rpcError(t, err, "no longer open", "completed")
}
