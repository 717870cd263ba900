package client_test

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/client"
)

// textAsker is an agent on the a2a-go SDK's default handler that asks for
// a name in text only (no question extension) and greets.
type textAsker struct {
	mu       sync.Mutex
	received []*a2a.Message // the answers it got
}

func (a *textAsker) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			ask := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("What is your name?"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, ask), nil)
			return
		}
		a.mu.Lock()
		a.received = append(a.received, ec.Message)
		a.mu.Unlock()
		var name []string
		for _, p := range ec.Message.Parts {
			if s, ok := p.Content.(a2a.Text); ok {
				name = append(name, string(s))
			}
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		art := a2a.NewArtifactEvent(ec, a2a.NewTextPart("hello "+strings.Join(name, " ")))
		art.Artifact.Name = "result"
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (a *textAsker) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// startForeign serves the text asker with the SDK's default handler and
// JSON-RPC transport on 127.0.0.1.
func startForeign(t *testing.T, agent *textAsker) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(agent)))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		return &a2a.AgentCard{
			Name: "Greeter", Description: "Asks your name in text.", Version: "1.0.0",
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)},
			Capabilities:        a2a.AgentCapabilities{Streaming: true},
			DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		}, nil
	})))
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestTheLoopWorksAgainstAnAgentOnTheSDKsDefaultHandler(t *testing.T) {
	t.Parallel()
	policy, err := client.ParsePolicy([]byte(`{"rules":[{"name":"my-name","when":{"text":"your name"},"answer":"Ada"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			agent := &textAsker{}
			url := startForeign(t, agent)
			res, err := client.Run(ctx(t), dial(t, url, nil), textMessage("Greet me"),
				client.WithStreaming(streaming), client.WithAgentURL(url), client.WithPollInterval(20*time.Millisecond),
				client.WithResolvers(client.Facts(map[string]any{"name": "Bob"}), policy))
			if err != nil {
				t.Fatalf("Run = %v (calls %v)", err, res.Calls)
			}
			t.Logf("calls: %v", res.Calls)
			if got := artifactText(res, "result"); got != "hello Ada" {
				t.Errorf("result %q, want hello Ada", got)
			}
			if len(res.Answers) != 1 || res.Answers[0].By != client.ByPolicy || res.Answers[0].QuestionID != "" {
				t.Errorf("answers %+v; want one text answer by policy", res.Answers)
			}
			agent.mu.Lock()
			defer agent.mu.Unlock()
			if len(agent.received) != 1 {
				t.Fatalf("the agent received %d answers, want 1", len(agent.received))
			}
			got := agent.received[0]
			if len(got.Parts) != 1 || got.Parts[0].Text() != "Ada" || len(got.Extensions) != 0 {
				t.Errorf("answer parts %s; want one text part (the question had no data part)", dump(got))
			}
			if got.Metadata[client.MetaAnsweredBy] != client.ByPolicy || got.TaskID != res.Task.ID || got.ContextID != res.Task.ContextID {
				t.Errorf("answer %s; want answeredBy policy on the task and its context", dump(got))
			}
		})
	}
}

// replier answers every message with a message and makes no task.
type replier struct{}

func (replier) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("pong")), nil)
	}
}

func (replier) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

func TestAMessageReplyIsTheResult(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	mux.Handle("/", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(replier{})))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		return &a2a.AgentCard{Name: "Pong", Description: "Replies.", Version: "1",
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)},
			Capabilities:        a2a.AgentCapabilities{Streaming: true}}, nil
	})))
	srv.Start()
	t.Cleanup(srv.Close)
	for _, streaming := range []bool{false, true} {
		res, err := client.Run(ctx(t), dial(t, srv.URL, nil), textMessage("ping"), client.WithStreaming(streaming))
		if err != nil {
			t.Fatalf("streaming=%v: Run = %v", streaming, err)
		}
		if res.Task != nil || res.Message == nil || res.Message.Parts[0].Text() != "pong" {
			t.Errorf("streaming=%v: result %+v; want the message reply and no task", streaming, res)
		}
	}
}
