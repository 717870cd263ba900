package servertest_test

// What ACTS, the A2A project's declarative conformance suite
// (docs/CONFORMANCE.md), found in the engine and the front: each held here
// over real HTTP, so CI keeps it without the suite.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/internal/apitest"
)

// startACTS serves the conformance agent and two more built on it: one
// whose card declares capabilities.extendedAgentCard, and one that accepts
// only text (and PNG images through a skill).
func startACTS(t *testing.T) *apitest.Env {
	t.Helper()
	declares := conformance.Card()
	declares.Capabilities.ExtendedAgentCard = true
	textOnly := conformance.Card()
	textOnly.DefaultInputModes = []string{"text/plain"}
	textOnly.Skills = []a2a.AgentSkill{{ID: "png", Name: "Pictures", Description: "Takes PNG pictures.", Tags: []string{"png"}, InputModes: []string{"image/png"}}}
	return apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{
		{Name: conformance.Name, Agent: conformance.AgentWith(tckResubscribeDelay), Card: conformance.Card()},
		{Name: "declares", Agent: conformance.Agent(), Card: declares},
		{Name: "textonly", Agent: conformance.Agent(), Card: textOnly},
	}})
}

// restReason is the google.rpc.ErrorInfo reason of an HTTP+JSON error.
func restReason(r *tckResponse) string {
	e, _ := r.JSON["error"].(map[string]any)
	details, _ := e["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && m["@type"] == "type.googleapis.com/google.rpc.ErrorInfo" {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}

func TestACTSExtendedCardIsUnsupportedUnlessTheCardDeclaresIt(t *testing.T) {
	t.Parallel()
	env := startACTS(t)
	for _, c := range []struct {
		agent  string
		code   int
		reason string
	}{
		// The conformance card does not declare the capability: A2A 1.0
		// §3.3.4 says UnsupportedOperationError.
		{conformance.Name, -32004, "UNSUPPORTED_OPERATION"},
		// Declared, but askpoint has no extended card to give.
		{"declares", -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED"},
	} {
		tckRPC(t, env, c.agent, "GetExtendedAgentCard", map[string]any{}).wantRPCError(t, c.agent+" GetExtendedAgentCard", c.code)
		r := tckREST(t, env, c.agent, http.MethodGet, "/extendedAgentCard", nil)
		r.wantRESTError(t, c.agent+" GET /extendedAgentCard", http.StatusBadRequest)
		if got := restReason(r); got != c.reason {
			t.Errorf("%s GET /extendedAgentCard: reason %q, want %q (%s)", c.agent, got, c.reason, r.Raw)
		}
	}
}

func TestACTSHTTPJSONAnswersApplicationA2AJSONToACallerThatNamesIt(t *testing.T) {
	t.Parallel()
	env := startACTS(t)
	send := map[string]any{"message": map[string]any{"role": "ROLE_USER", "messageId": a2a.NewMessageID(), "parts": []any{map[string]any{"text": "tck-complete-task"}}}}
	const a2aJSON = "application/a2a+json"
	for _, c := range []struct {
		name, method, path string
		body               any
		hdr                []string
		status             int
		contentType        string
	}{
		{"send, Accept naming both", http.MethodPost, "/message:send", send, []string{"Accept", "application/a2a+json, application/json"}, 200, a2aJSON},
		{"error, Accept naming both", http.MethodGet, "/tasks/no-such-task", nil, []string{"Accept", "application/a2a+json, application/json"}, 404, a2aJSON},
		{"error before the body is read", http.MethodPost, "/message:send", send, []string{"Accept", a2aJSON, "A2A-Version", "9.9"}, 400, a2aJSON},
		{"request sent as application/a2a+json", http.MethodPost, "/message:send", send, []string{"Content-Type", a2aJSON}, 200, a2aJSON},
		{"a2a+json refused with q=0", http.MethodGet, "/tasks/no-such-task", nil, []string{"Accept", "application/a2a+json;q=0, application/json"}, 404, "application/json"},
		// A2A 1.0.0 clients: the a2a-go v2.4.0 client (Accept:
		// application/json) reads an error of another type as a bare
		// server error; the a2a-tck suite (Accept: */*) requires
		// application/json on errors.
		{"Accept application/json", http.MethodGet, "/tasks/no-such-task", nil, []string{"Accept", "application/json"}, 404, "application/json"},
		{"Accept */*", http.MethodGet, "/tasks/no-such-task", nil, []string{"Accept", "*/*"}, 404, "application/json"},
	} {
		r := tckREST(t, env, conformance.Name, c.method, c.path, c.body, c.hdr...)
		if r.Status != c.status || r.Header.Get("Content-Type") != c.contentType || r.JSON == nil {
			t.Errorf("%s: status %d, Content-Type %q, want %d, %q and a JSON body; body %s", c.name, r.Status, r.Header.Get("Content-Type"), c.status, c.contentType, r.Raw)
		}
	}

	// An event stream stays an event stream.
	r := tckREST(t, env, conformance.Name, http.MethodPost, "/message:stream", send, "Accept", "text/event-stream, application/a2a+json")
	if ct := r.Header.Get("Content-Type"); r.Status != 200 || !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("message:stream: status %d, Content-Type %q, want 200 text/event-stream", r.Status, ct)
	}

	// The a2a-go client still reads typed errors.
	ctx := testCtx(t)
	_, err := env.Client(t, conformance.Name, a2a.TransportProtocolHTTPJSON).GetTask(ctx, &a2a.GetTaskRequest{ID: "no-such-task"})
	wantErr(t, "a2a-go HTTP+JSON GetTask(no-such-task)", err, a2a.ErrTaskNotFound)
}

func TestACTSPartOfAMediaTypeTheAgentDoesNotAcceptIsRefusedBeforeATaskExists(t *testing.T) {
	t.Parallel()
	env := startACTS(t)
	pdf := func() *a2a.Message {
		p := a2a.NewRawPart([]byte("%PDF-1.7"))
		p.MediaType = "application/pdf"
		return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("file this"), p)
	}
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		ctx := testCtx(t)
		c := env.Client(t, "textonly", tr)
		_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: pdf()})
		wantErr(t, "SendMessage(application/pdf part)", err, a2a.ErrUnsupportedContentType)
		if !strings.Contains(err.Error(), "application/pdf") || !strings.Contains(err.Error(), "parts[1]") {
			t.Errorf("error %q does not name the part and its media type", err)
		}
		var streamErr error
		for _, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: pdf()}) {
			if err != nil {
				streamErr = err
				break
			}
		}
		wantRefused(t, "SendStreamingMessage(application/pdf part)", streamErr, a2a.ErrUnsupportedContentType)

		// A follow-up is checked too, and the task it names is unchanged.
		task := sendState(t, ctx, c, conformanceMessage(tckID("tck-input-required"), "start"), a2a.TaskStateInputRequired)
		_, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, pdf())})
		wantErr(t, "SendMessage(follow-up with an application/pdf part)", err, a2a.ErrUnsupportedContentType)
		if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateInputRequired || len(got.History) != len(task.History) {
			t.Errorf("after the refused follow-up: %v with %d history entries, want input-required with %d", got.Status.State, len(got.History), len(task.History))
		}

		// What the card accepts goes through: text, a type named by a
		// skill, a text part whose mediaType has parameters.
		png := a2a.NewRawPart([]byte{0x89, 'P', 'N', 'G'})
		png.MediaType = "IMAGE/PNG"
		plain := a2a.NewTextPart("hello")
		plain.MediaType = "text/plain; charset=utf-8"
		for _, m := range []*a2a.Message{userText("hello"), a2a.NewMessage(a2a.MessageRoleUser, png), a2a.NewMessage(a2a.MessageRoleUser, plain)} {
			sendState(t, ctx, c, m, a2a.TaskStateCompleted)
		}
		// A data part is application/json, which this card does not take.
		_, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userData(map[string]any{"k": "v"})})
		wantErr(t, "SendMessage(data part)", err, a2a.ErrUnsupportedContentType)

		// The conformance card takes everything (*/*).
		sendState(t, ctx, env.Client(t, conformance.Name, tr), pdf(), a2a.TaskStateCompleted)
	})

	// On the wire: -32005, and HTTP 400 as A2A 1.0 §5.4 maps it.
	body := map[string]any{"message": map[string]any{"role": "ROLE_USER", "messageId": a2a.NewMessageID(),
		"parts": []any{map[string]any{"raw": "JVBERg==", "mediaType": "application/pdf"}}}}
	tckRPC(t, env, "textonly", "SendMessage", body).wantRPCError(t, "SendMessage", -32005)
	r := tckREST(t, env, "textonly", http.MethodPost, "/message:send", body)
	r.wantRESTError(t, "POST /message:send", http.StatusBadRequest)
	if got := restReason(r); got != "CONTENT_TYPE_NOT_SUPPORTED" {
		t.Errorf("POST /message:send: reason %q, want CONTENT_TYPE_NOT_SUPPORTED (%s)", got, r.Raw)
	}

	// Nothing refused was stored: only the accepted tasks exist.
	ctx := testCtx(t)
	list, err := env.Client(t, "textonly", a2a.TransportProtocolJSONRPC).ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(apitest.Transports) * 4; len(list.Tasks) != want {
		t.Errorf("ListTasks: %d tasks, want %d (per binding the paused one and three accepted messages)", len(list.Tasks), want)
	}
}
