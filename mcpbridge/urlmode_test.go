package mcpbridge_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/browsertest"
	"github.com/askpoint/askpoint/mcpbridge"
	"github.com/askpoint/askpoint/question"
)

// deskToken is the bridge's token for the agents, and so the inbox login
// of the principal whose tasks they are.
const deskToken = "desk-token-0123456789abcdef"

// tripAgent asks for a trip, an object no MCP form can hold, and
// completes with the city it was given.
func tripAgent() askpoint.AgentSpec {
	schema := json.RawMessage(`{"type":"object","required":["trip"],"properties":{"trip":{"type":"object","required":["city"],"properties":{"city":{"type":"string"}}}}}`)
	type answer struct {
		Trip struct {
			City string `json:"city"`
		} `json:"trip"`
	}
	return askpoint.AgentSpec{Name: "trip", Card: a2a.AgentCard{Name: "Trip", Description: "Plans a trip."},
		Agent: askpoint.Steps[struct{}, answer]{
			OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Which trip?", Schema: schema}, struct{}{}), nil
			},
			OnAnswer: func(_ context.Context, _ *askpoint.Call, _ struct{}, a answer) (askpoint.Outcome, error) {
				return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "trip",
					Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"city": a.Trip.City})}}), nil
			},
		}}
}

// inboxRig is the trip agent on a server whose callers need a token, its
// server page (the web inbox of askpoint serve) on a port of its own, and
// a bridge that calls the agent as desk and knows the page.
type inboxRig struct {
	env   *askpointtest.Env
	inbox string // the server page's base, http://HOST:PORT/inbox
	mcp   string // the bridge's endpoint
}

func newInboxRig(t *testing.T) *inboxRig {
	t.Helper()
	env := askpointtest.StartWith(t, askpointtest.Options{Tokens: map[string]string{deskToken: "desk"}}, tripAgent())
	hs := httptest.NewUnstartedServer(nil)
	base := "http://" + hs.Listener.Addr().String()
	sp, err := web.NewServerPage(web.ServerPageConfig{
		Base: "/inbox", PublicURL: base, Tokens: map[string]string{"desk": deskToken},
		Agents: env.Server.Agents, Handler: env.Server.RequestHandler, WithPrincipal: askpoint.WithPrincipal,
	})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = sp.Handler()
	hs.Start()
	t.Cleanup(func() { sp.Close(); hs.Close() })
	pages, err := mcpbridge.ServeInbox(base+"/inbox", env.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mcpbridge.New(t.Context(), mcpbridge.Config{Key: testKey(t), Token: deskToken, InboxURL: pages,
		Agents: []mcpbridge.Agent{{URL: env.AgentURL("trip")}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	t.Cleanup(srv.Close)
	return &inboxRig{env: env, inbox: base + "/inbox", mcp: srv.URL + "/mcp"}
}

// client connects a go-sdk client of revision 2026-07-28; url says whether
// it declares URL-mode elicitation. With a nil elicit the test retries by
// hand.
func (r *inboxRig) client(t *testing.T, url bool, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	if url {
		caps.Elicitation.URL = &mcp.URLElicitationCapabilities{}
	}
	opts := &mcp.ClientOptions{ElicitationHandler: elicit, Capabilities: caps}
	if elicit == nil {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "url-test", Version: "1"}, opts).Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.mcp}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// A question no form can ask is a URL-mode elicitation of the inbox's page
// for its task, a link with no secret in it; a retry before the person
// answered there is the same round again, and changes nothing; a client
// that does not declare URL mode gets the refusal it got before.
func TestAQuestionNoFormCanAskIsAskedAtTheInbox(t *testing.T) {
	r := newInboxRig(t)
	cs := r.client(t, true, nil)
	res := call(t, cs, "trip", "a trip")
	key, ep := form(t, res)
	task := res.Meta["dev.askpoint/taskId"].(string)
	if ep.Mode != "url" || ep.URL != r.inbox+"/t/trip/"+task || ep.RequestedSchema != nil || ep.ElicitationID == "" {
		t.Fatalf("elicitation %s; want mode url at %s/t/trip/%s", dump(ep), r.inbox, task)
	}
	if !strings.Contains(ep.Message, "Which trip?") || !strings.Contains(ep.Message, "web inbox") {
		t.Errorf("message %q; want the question and where to answer it", ep.Message)
	}
	before := snapshot(r.task(t, task))
	again, err := retry(t, cs, "trip", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}, res.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	if k, ep2 := form(t, again); k != key || ep2.Mode != "url" || ep2.URL != ep.URL {
		t.Errorf("retry before the answer: %s; want the same URL round", dump(again))
	}
	if after := snapshot(r.task(t, task)); after != before {
		t.Errorf("the task changed: %s -> %s", before, after)
	}

	// Answered there (here over A2A, as the page does), the retry with the
	// same state follows the task to its end; a replay of it only reads
	// the task again.
	r.env.Answer(t, r.task(t, task), map[string]any{"trip": map[string]any{"city": "Bergen"}})
	for _, what := range []string{"the retry", "a replay"} {
		done, err := retry(t, cs, "trip", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept"}}, res.RequestState)
		if err != nil || done.IsError || dump(done.StructuredContent) != `{"city":"Bergen"}` {
			t.Fatalf("%s after the answer: %s (%v); want the trip to Bergen", what, dump(done), err)
		}
	}
	if n := len(r.task(t, task).History); n != 3 {
		t.Errorf("history has %d messages; want 3 (request, question, the one answer)", n)
	}

	plain := r.client(t, false, nil)
	refused := call(t, plain, "trip", "a trip")
	if !refused.IsError || !strings.Contains(text(refused), `field "trip" is of type object`) {
		t.Errorf("a client without URL mode: %s; want the refusal naming the field", dump(refused))
	}
}

func (r *inboxRig) task(t *testing.T, id string) *a2a.Task {
	t.Helper()
	task, err := r.env.Client(t, "trip").GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// The whole path in a real browser: the go-sdk client's own loop gets the
// URL, Chromium opens it, is sent to the inbox's login, signs in as the
// bridge's principal, answers the question there, and the client's retry
// completes the call with what the agent made of the answer.
func TestTheInboxAnswersAURLModeQuestionInABrowser(t *testing.T) {
	r := newInboxRig(t)
	ctx := browsertest.New(t, 1280, 900)
	var opened []string
	cs := r.client(t, true, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req.Params.Mode != "url" {
			t.Errorf("asked %s; want a URL", dump(req.Params))
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
		opened = append(opened, req.Params.URL)
		browsertest.Do(t, ctx, "sign in and answer at "+req.Params.URL,
			chromedp.Navigate(req.Params.URL),
			chromedp.WaitVisible(chromedp.CSS("#token")),
			chromedp.SendKeys(chromedp.CSS("#token"), deskToken),
			chromedp.Submit(chromedp.CSS("#login")),
			chromedp.WaitVisible(chromedp.CSS("#answer textarea")),
			chromedp.SendKeys(chromedp.CSS("#answer textarea"), `{"city": "Oslo"}`),
			chromedp.Click(chromedp.CSS("#send")),
			chromedp.WaitNotPresent(chromedp.CSS("#answer")),
		)
		return &mcp.ElicitResult{Action: "accept"}, nil
	})
	res := call(t, cs, "trip", "a trip")
	if res.IsError || len(opened) != 1 {
		t.Fatalf("result %s after %d URLs; want the trip after one", dump(res), len(opened))
	}
	if got := dump(res.StructuredContent); got != `{"city":"Oslo"}` {
		t.Errorf("the agent made %s of the answer; want Oslo", got)
	}
	if res.Meta["dev.askpoint/taskState"] != string(a2a.TaskStateCompleted) {
		t.Errorf("meta %v; want the task completed", res.Meta)
	}
}

// ServeInbox links the agents of one askpoint serve, by name, to its
// inbox's page for the task, and no other agent; a URL that is not an
// inbox's base is refused.
func TestServeInboxLinksOnlyItsServersAgents(t *testing.T) {
	pages, err := mcpbridge.ServeInbox("http://127.0.0.1:8420/inbox/", "")
	if err != nil {
		t.Fatal(err)
	}
	for agent, want := range map[string]string{
		"http://127.0.0.1:8420/expense":                             "http://127.0.0.1:8420/inbox/t/expense/t-1",
		"http://127.0.0.1:8420/expense/.well-known/agent-card.json": "http://127.0.0.1:8420/inbox/t/expense/t-1",
		"http://127.0.0.1:9999/expense":                             "",
		"http://127.0.0.1:8420/":                                    "",
		"http://127.0.0.1:8420/a/b":                                 "",
	} {
		if got := pages(agent, "t-1"); got != want {
			t.Errorf("%s: %q, want %q", agent, got, want)
		}
	}
	for _, bad := range []string{"127.0.0.1:8420/inbox", "ftp://x/inbox", "http://x/inbox?token=1"} {
		if _, err := mcpbridge.ServeInbox(bad, ""); err == nil || !strings.Contains(err.Error(), "web inbox's base") {
			t.Errorf("ServeInbox(%q) = %v; want it refused", bad, err)
		}
	}
}
