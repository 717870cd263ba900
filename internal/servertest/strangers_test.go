package servertest_test

import (
	"context"
	"io"
	"iter"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store/sqlite"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-9876543210ab"
)

func startWithTokens(t *testing.T, cfg func(*askpoint.Config)) *apitest.Env {
	t.Helper()
	return apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
		if cfg != nil {
			cfg(c)
		}
	}})
}

func TestStrangersCannotTouchAnotherPrincipalsTask(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		env := startWithTokens(t, func(c *askpoint.Config) { c.AllowPrivateWebhooks = true })
		alice := env.ClientAs(t, "script", tr, aliceToken)
		bob := env.ClientAs(t, "script", tr, bobToken)
		ctx := testCtx(t)
		task := sendState(t, ctx, alice, userText("ask"), a2a.TaskStateInputRequired)
		q, _, _ := question.FromMessage(task.Status.Message)
		before := getTask(t, ctx, alice, task.ID)

		_, err := bob.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
		wantErr(t, "bob GetTask", err, a2a.ErrTaskNotFound)

		list, err := bob.ListTasks(ctx, &a2a.ListTasksRequest{})
		if err != nil || len(list.Tasks) != 0 || list.TotalSize != 0 {
			t.Errorf("bob ListTasks = %d tasks (total %d), %v; want none", len(list.Tasks), list.TotalSize, err)
		}

		_, err = bob.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"questionId": q.ID, "name": "Mallory"}))})
		wantErr(t, "bob answers", err, a2a.ErrTaskNotFound)

		_, err = bob.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID})
		wantErr(t, "bob CancelTask", err, a2a.ErrTaskNotFound)

		var subErr error
		for _, e := range bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			subErr = e
			break
		}
		wantRefused(t, "bob SubscribeToTask", subErr, a2a.ErrTaskNotFound)

		// Push configuration: alice's is invisible to bob, and bob can
		// neither add one nor delete hers.
		if _, err := alice.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "alices", URL: "http://127.0.0.1:9/alice"}); err != nil {
			t.Fatalf("alice CreateTaskPushConfig: %v", err)
		}
		_, err = bob.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "bobs", URL: "http://127.0.0.1:9/bob"})
		wantErr(t, "bob CreateTaskPushConfig", err, a2a.ErrTaskNotFound)
		_, err = bob.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "alices"})
		wantErr(t, "bob GetTaskPushConfig", err, a2a.ErrTaskNotFound)
		_, err = bob.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
		wantErr(t, "bob ListTaskPushConfigs", err, a2a.ErrTaskNotFound)
		err = bob.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "alices"})
		wantErr(t, "bob DeleteTaskPushConfig", err, a2a.ErrTaskNotFound)
		_, err = bob.SendMessage(ctx, &a2a.SendMessageRequest{
			Message: followUp(task.ID, userData(map[string]any{"name": "Mallory"})),
			Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "http://127.0.0.1:9/bob"}},
		})
		wantErr(t, "bob answers with a push configuration", err, a2a.ErrTaskNotFound)
		configs, err := alice.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
		if err != nil || len(configs) != 1 || configs[0].ID != "alices" {
			t.Fatalf("alice's push configurations after bob's attempts = %+v, %v; want only hers", configs, err)
		}

		after := getTask(t, ctx, alice, task.ID)
		if after.Status.State != a2a.TaskStateInputRequired || len(after.History) != len(before.History) {
			t.Fatalf("alice's task changed: state %v, history %d→%d", after.Status.State, len(before.History), len(after.History))
		}
		done := sendState(t, ctx, alice, followUp(task.ID, userData(map[string]any{"name": "Ada"})), a2a.TaskStateCompleted)
		if txt, _ := artifactText(done, "result"); txt != "hello Ada" {
			t.Errorf("alice's answer gave %q, want %q", txt, "hello Ada")
		}
	})
}

func TestRequestsWithoutAValidTokenAreUnauthenticated(t *testing.T) {
	env := startWithTokens(t, nil)
	for _, tt := range []struct{ name, header string }{
		{"no header", ""},
		{"unknown token", "Bearer not-a-token-we-issued"},
		{"wrong scheme", "Basic YWxpY2U6c2VjcmV0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"complete"}]}}}`
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, env.AgentURL("script")+"/jsonrpc", strings.NewReader(body))
			req.Header.Set("A2A-Version", "1.0")
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(raw), `"code":-31401`) || !strings.Contains(string(raw), "Bearer") {
				t.Errorf("JSON-RPC reply %s, want code -31401 saying how to send the bearer token", raw)
			}

			req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, env.AgentURL("script")+"/rest/message:send", strings.NewReader(`{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"complete"}]}}`))
			req.Header.Set("A2A-Version", "1.0")
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err = http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("HTTP+JSON status %d, WWW-Authenticate %q; want 401 with a challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			requireNoTasks(t, env)
		})
	}
}

func TestCardDeclaresTheBearerSchemeWhenTokensAreSet(t *testing.T) {
	env := startWithTokens(t, nil)
	card, _ := getCard(t, env.AgentURL("script")+"/.well-known/agent-card.json")
	scheme, ok := card.SecuritySchemes[askpoint.BearerScheme].(a2a.HTTPAuthSecurityScheme)
	if !ok || !strings.EqualFold(scheme.Scheme, "bearer") {
		t.Fatalf("card security schemes = %#v, want an HTTP bearer scheme", card.SecuritySchemes)
	}
	if len(card.SecurityRequirements) != 1 {
		t.Errorf("card security requirements = %v, want the bearer scheme required", card.SecurityRequirements)
	}
}

func TestShortTokensAreRefusedAtStartup(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = askpoint.NewServer(askpoint.Config{Store: st, Tokens: map[string]string{"short": "alice"}})
	if err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("NewServer(short token) = %v, want an error asking for 16 characters", err)
	}
}

func TestTooManyPartsIsInvalidParams(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.MaxParts = 2 }})
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("complete"), a2a.NewTextPart("x"), a2a.NewTextPart("y"))
	_, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: m})
	wantErr(t, "SendMessage(3 parts, limit 2)", err, a2a.ErrInvalidParams)
	if err != nil && !strings.Contains(err.Error(), "at most 2") {
		t.Errorf("error %q does not name the limit", err)
	}
	requireNoTasks(t, env)
}

func TestStreamsPerPrincipalAreCapped(t *testing.T) {
	env := startWithTokens(t, func(c *askpoint.Config) { c.MaxStreamsPerPrincipal = 1 })
	alice := env.ClientAs(t, "script", a2a.TransportProtocolJSONRPC, aliceToken)
	bob := env.ClientAs(t, "script", a2a.TransportProtocolJSONRPC, bobToken)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	task := sendState(t, ctx, alice, userText("ask"), a2a.TaskStateInputRequired)

	// Alice's first subscription holds her only slot.
	first := openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return alice.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID})
	})
	first.nextEvent(t, ctx)

	var second error
	for _, err := range alice.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		second = err
		break
	}
	wantRefused(t, "alice's second stream", second, a2a.ErrInvalidRequest)
	// The limit's own words, as a raw request shows them.
	body := `{"jsonrpc":"2.0","id":1,"method":"SubscribeToTask","params":{"id":"` + string(task.ID) + `"}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, env.AgentURL("script")+"/jsonrpc", strings.NewReader(body))
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+aliceToken)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(raw), "open streams") {
		t.Fatalf("alice's second stream, raw: status %d, body %s; want 429 naming open streams", resp.StatusCode, raw)
	}
	// Bob's slots are his own.
	bobTask := sendState(t, ctx, bob, userText("ask"), a2a.TaskStateInputRequired)
	for ev, err := range bob.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: bobTask.ID}) {
		if err != nil {
			t.Fatalf("bob's stream: %v, want it to open", err)
		}
		if _, ok := ev.(*a2a.Task); !ok {
			t.Fatalf("bob's first event = %T, want the task", ev)
		}
		break
	}
}
