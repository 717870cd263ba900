package relay_test

// The relay in front of a sub-agent that is not askpoint: an agent served
// by the a2a-go SDK's default handler, which has no push store and so
// refuses every message that carries a push configuration with
// PushNotificationNotSupported. The relay must resend without one and wait
// on the blocking call, both for the request and for the caller's answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

const (
	foreignQID      = "sub-q-1"
	foreignArtifact = "ledger-entry"
)

// foreignLedger asks which cost centre, with the question convention, and
// books to the one it is told. It records every message it receives.
type foreignLedger struct {
	expires time.Time // of its question

	mu       sync.Mutex
	received []*a2a.Message
}

func (l *foreignLedger) messages() []*a2a.Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*a2a.Message(nil), l.received...)
}

func (l *foreignLedger) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		l.mu.Lock()
		l.received = append(l.received, ec.Message)
		l.mu.Unlock()
		if ec.StoredTask == nil {
			if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			q := question.Question{
				ID:      foreignQID,
				Text:    "Which cost centre?",
				Schema:  json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","enum":["CC-4410","CC-4420"]}}}`),
				Expires: l.expires,
			}
			ask := q.Message()
			ask.TaskID, ask.ContextID = ec.TaskID, ec.ContextID
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, ask), nil)
			return
		}
		var cc string
		for _, p := range ec.Message.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if obj, ok := d.Value.(map[string]any); ok && obj["questionId"] == foreignQID {
					cc, _ = obj["costCentre"].(string)
				}
			}
		}
		if cc != "CC-4410" && cc != "CC-4420" {
			fail := a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart("no cost centre in the answer"))
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, fail), nil)
			return
		}
		if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
			return
		}
		art := a2a.NewArtifactEvent(ec, a2a.NewTextPart("Booked to "+cc))
		art.Artifact.Name = foreignArtifact
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (l *foreignLedger) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// sendCall is one SendMessage request as it reached the foreign server.
type sendCall struct {
	messageID string
	taskID    a2a.TaskID
	push      bool // it carried a push configuration
	immediate bool // returnImmediately
}

// wireLog records the JSON-RPC SendMessage requests the foreign server gets.
type wireLog struct {
	mu    sync.Mutex
	sends []sendCall
}

func (w *wireLog) calls() []sendCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]sendCall(nil), w.sends...)
}

func (w *wireLog) wrap(t *testing.T, next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("foreign server: read the request: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "SendMessage" {
			var p a2a.SendMessageRequest
			if err := json.Unmarshal(req.Params, &p); err != nil {
				t.Errorf("foreign server: read SendMessage params %s: %v", req.Params, err)
			} else if p.Message != nil {
				w.mu.Lock()
				w.sends = append(w.sends, sendCall{messageID: p.Message.ID, taskID: p.Message.TaskID, push: p.Config != nil && p.Config.PushConfig != nil, immediate: p.Config != nil && p.Config.ReturnImmediately})
				w.mu.Unlock()
			}
		}
		next.ServeHTTP(rw, r)
	})
}

// startForeignLedger serves l on the SDK's default handler (no push store)
// over JSON-RPC on 127.0.0.1, with a card that declares no push
// notifications.
func startForeignLedger(t *testing.T, l *foreignLedger, wire *wireLog) string {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	mux.Handle("/", wire.wrap(t, a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(l))))
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewAgentCardHandler(a2asrv.AgentCardProducerFn(func(context.Context) (*a2a.AgentCard, error) {
		return &a2a.AgentCard{
			Name: "Ledger", Description: "Books expenses; asks for the cost centre.", Version: "1.0.0",
			SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(srv.URL, a2a.TransportProtocolJSONRPC)},
			Capabilities:        a2a.AgentCapabilities{PushNotifications: false},
			DefaultInputModes:   []string{"text/plain", "application/json"}, DefaultOutputModes: []string{"text/plain"},
		}, nil
	})))
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestRelayInFrontOfASubAgentWithoutPushNotifications(t *testing.T) {
	subExpires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	ledger := &foreignLedger{expires: subExpires}
	wire := &wireLog{}
	subURL := startForeignLedger(t, ledger, wire)

	ln, topURL := apitest.Listen(t, "")
	a, err := relay.Agent(relay.Config{SubAgentURL: subURL, CallbackURL: topURL + "/relay", SubAgentName: "the ledger"})
	if err != nil {
		t.Fatalf("relay.Agent() = %v", err)
	}
	top := apitest.Start(t, apitest.Options{
		Quiet: true, Listener: ln,
		Config: fast,
		Agents: []askpoint.AgentSpec{{Name: "relay", Agent: a, Card: a2a.AgentCard{Name: "Relay", Description: "Delegates to the ledger."}}},
	})
	ctx := testCtx(t)
	caller := top.Client(t, "relay", a2a.TransportProtocolJSONRPC)

	// The request: the relay asks its own question for the ledger's.
	task := sendState(t, ctx, caller, userText("Book the team dinner, 180 euros"), a2a.TaskStateInputRequired)
	own := questionOf(t, task)
	if own.ID == "" || own.ID == foreignQID {
		t.Fatalf("the relay's question ID is %q; want its own, not the ledger's %q", own.ID, foreignQID)
	}
	if !own.Expires.Before(subExpires) {
		t.Fatalf("the relay's question expires at %s, not before the ledger's %s", own.Expires, subExpires)
	}
	if want := subExpires.Add(-5 * time.Minute); !own.Expires.Equal(want) {
		t.Fatalf("the relay's question expires at %s; want %s (the default 5m margin before the ledger's)", own.Expires, want)
	}
	if own.Text != "Which cost centre?" {
		t.Errorf("the relay asks %q, want the ledger's text kept", own.Text)
	}
	if raw, _ := json.Marshal(questionData(t, task.Status.Message)); strings.Contains(string(raw), subURL) || strings.Contains(string(raw), foreignQID) {
		t.Errorf("the relay's question names the ledger's URL or question ID: %s", raw)
	}
	if n := len(ledger.messages()); n != 1 {
		t.Fatalf("the ledger received %d messages before the answer, want only the request", n)
	}

	// The answer: carried down, and the ledger's artifact comes back up.
	got := send(t, ctx, caller, answer(task.ID, own.ID, map[string]any{"costCentre": "CC-4420"}))
	if got.Status.State != a2a.TaskStateCompleted {
		t.Logf("the answer's reply: state %v (%q); waiting for completed", got.Status.State, statusText(got))
		got = waitState(t, ctx, caller, task.ID, a2a.TaskStateCompleted)
	}
	var booked []string
	for _, art := range got.Artifacts {
		if art.Name != foreignArtifact {
			continue
		}
		for _, p := range art.Parts {
			if s, ok := p.Content.(a2a.Text); ok {
				booked = append(booked, string(s))
			}
		}
	}
	if len(booked) != 1 || booked[0] != "Booked to CC-4420" {
		t.Fatalf("the relay's task has %s artifact text %q (artifacts %d); want the ledger's \"Booked to CC-4420\"", foreignArtifact, booked, len(got.Artifacts))
	}

	// What the ledger received: the request, then exactly one answer.
	msgs := ledger.messages()
	if len(msgs) == 0 || msgs[0].TaskID != "" {
		t.Fatalf("the ledger's messages %v do not start with a new request", describeAll(msgs))
	}
	answers := msgs[1:]
	if len(answers) != 1 {
		t.Fatalf("the ledger received %d answers, want exactly 1: %v", len(answers), describeAll(answers))
	}
	ans := answers[0]
	if len(ans.Parts) != 1 {
		t.Fatalf("the answer has %d parts, want one data part: %s", len(ans.Parts), describeMsg(ans))
	}
	d, ok := ans.Parts[0].Content.(a2a.Data)
	if !ok {
		t.Fatalf("the answer's part is %T, want data: %s", ans.Parts[0].Content, describeMsg(ans))
	}
	if want := map[string]any{"questionId": foreignQID, "costCentre": "CC-4420"}; !reflect.DeepEqual(d.Value, want) {
		t.Fatalf("the answer's data is %#v, want %#v", d.Value, want)
	}
	if by := ans.Metadata[client.MetaAnsweredBy]; by != "caller" {
		t.Errorf("the answer's %s is %v, want caller", client.MetaAnsweredBy, by)
	}

	// On the wire: the request was offered with a push configuration,
	// refused, and resent without one; the relay remembered that, so the
	// answer went once, without one. Only the plain sends reached the
	// ledger's executor.
	calls := wire.calls()
	for i, ran := range []*a2a.Message{msgs[0], ans} {
		var offers []sendCall
		for _, c := range calls {
			if c.messageID == ran.ID {
				offers = append(offers, c)
			}
		}
		wantPushed := 0
		if i == 0 {
			wantPushed = 1
		}
		var plain int
		for _, c := range offers {
			if !c.push {
				plain++
			}
		}
		if plain != 1 || len(offers)-plain != wantPushed || offers[len(offers)-1].push {
			t.Fatalf("message %d (%s) reached the ledger as %+v; want %d offer(s) with a push config, then one send without", i, ran.ID, offers, wantPushed)
		}
	}
	if n := len(calls); n != 3 {
		t.Errorf("the ledger got %d SendMessage requests (%+v), want 3: the request refused with push and resent without, the answer sent once without", n, calls)
	}
}

func describeAll(ms []*a2a.Message) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, describeMsg(m))
	}
	return out
}
