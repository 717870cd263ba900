package servertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// recorder is a listener that records what reaches it: what an attacker
// who runs it would receive.
type recorder struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

type recorded struct {
	Method, Path, Token, Auth string
	Body                      string
}

func newRecorder(t *testing.T) *recorder {
	t.Helper()
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{req.Method, req.URL.Path, req.Header.Get("A2A-Notification-Token"), req.Header.Get("Authorization"), string(body)})
		r.mu.Unlock()
		if req.URL.Path == "/first" {
			// A hop on the same host: the SDK's sender keeps the token.
			http.Redirect(w, req, "/second", http.StatusPermanentRedirect)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) got() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.reqs...)
}

// Finding 10 of issue 23: a receiver that redirects must not get the
// notification re-POSTed elsewhere with its token (a chain A -> B -> B kept
// the token, since the SDK strips it only when the host changes).
func TestPushDeliveryDoesNotFollowRedirects(t *testing.T) {
	attacker := newRecorder(t)
	var mu sync.Mutex
	tries := 0
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		mu.Unlock()
		http.Redirect(w, r, attacker.srv.URL+"/first", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)

	env := pushEnv(t, nil)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	sendPushed(t, ctx, c, "File my taxi receipt from Tuesday, 42 euros", a2a.PushConfig{URL: redirector.URL + "/hook", Token: "push-secret-42"})
	// Two attempts at the receiver (the first one's redirects, had they
	// been followed, happened before the second began), or the redirect
	// target reached.
	eventually(t, "a second attempt, or a request at the redirect target", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return tries >= 2 || len(attacker.got()) > 0
	})
	if got := attacker.got(); len(got) != 0 {
		t.Fatalf("the redirect target received %d requests (first: %+v); want none", len(got), got[0])
	}
}

// Finding 9 of issue 23: a webhook URL's query string (a signature, a key)
// is redacted in the url field of the log, and must not reach the log
// through the error text either.
func TestPushFailureLogsNoWebhookQueryString(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there: every delivery fails
	logs := &apitest.SyncBuffer{}
	env := apitest.Start(t, apitest.Options{Config: func(c *askpoint.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		c.AllowPrivateWebhooks = true
		c.PollInterval = 20 * time.Millisecond
		c.PushRetryMin, c.PushRetryMax, c.PushMaxAttempts = 10*time.Millisecond, 20*time.Millisecond, 2
	}})
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	sendPushed(t, ctx, c, "File my taxi receipt from Tuesday, 42 euros", a2a.PushConfig{URL: dead + "/hook?sig=query-secret-99"})
	eventually(t, "the log says the receiver was given up on", func() bool {
		return strings.Contains(logs.String(), "giving up on a push receiver")
	})
	if l := logs.String(); strings.Contains(l, "query-secret-99") {
		t.Fatalf("the log holds the webhook's query string:\n%s", l)
	}
}

// Finding 5 of issue 23: racing creates of push configurations stay
// within Config.MaxPushConfigs (40 concurrent creates stored 25 of 8).
func TestRacingPushConfigCreatesStayWithinTheCap(t *testing.T) {
	env := pushEnv(t, func(c *askpoint.Config) { c.MaxPushConfigs = 8 })
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: userText("ask")})
	hook := newHookReceiver(t)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 40 {
		wg.Go(func() {
			<-start
			_, _ = c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "p" + strings.Repeat("x", i+1), URL: hook.URL()})
		})
	}
	close(start)
	wg.Wait()
	list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 8 {
		t.Fatalf("40 racing creates left %d push configurations; want the cap, 8", len(list))
	}
}

// Finding 4 of issue 23: an answer schema that would make validation
// exponential (a chain of anyOf whose branches each $ref the next) is
// refused when the agent asks, on the server as on the caller's side, so
// no answer is ever checked against it.
func TestAnExponentialAnswerSchemaFailsTheTaskWhenAsked(t *testing.T) {
	var defs []string
	for i := range 18 {
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, `"l18":{"type":"string","minLength":1000}`)
	schema := json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/l0"}},"$defs":{` + strings.Join(defs, ",") + `}}`)
	agent := askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{Text: "x?", Schema: schema}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, a map[string]any) (askpoint.Outcome, error) {
			return askpoint.Complete(), nil
		},
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{{Name: "costly", Agent: agent, Card: a2a.AgentCard{Name: "Costly", Description: "d"}}}})
	c := env.Client(t, "costly", a2a.TransportProtocolJSONRPC)
	got := sendState(t, t.Context(), c, userText("go"), a2a.TaskStateFailed)
	if !strings.Contains(statusText(got), "evaluations per value") {
		t.Errorf("failure message %q does not name the validation budget", statusText(got))
	}
}
