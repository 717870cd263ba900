package relay_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/relay"
)

const relayToken = "relay-internal-token-0123"

// bearerHeader sends a bearer token with every request.
type bearerHeader struct{ token string }

func (b bearerHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 23, finding 11: through a relay, the sub-agent acts for the real
// caller, not for the relay's own principal, and only the relay's
// principal may say whom it calls for.
func TestTheSubAgentActsForTheRelaysCallerNotTheRelay(t *testing.T) {
	// The directory knows alice (one cost centre: no question) and the
	// relay's principal (two: a question).
	dir := expense.Fixture{ByPrincipal: map[string][]string{
		"alice":          {"CC-1111"},
		"relay-internal": {"CC-4410", "CC-4420"},
		"mallory":        {"CC-6666"},
	}}
	const malloryToken = "mallory-token-0123456789"
	sub := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		fast(c)
		c.AllowPrivateWebhooks = true
		c.Tokens = map[string]string{relayToken: "relay-internal", malloryToken: "mallory"}
		c.OnBehalfOfPrincipals = []string{"relay-internal"}
	}, Agents: []askpoint.AgentSpec{{Name: "expenses", Agent: expense.Agent(dir, expense.IDLedger{}, nil), Card: expense.Card()}}})

	ln, topURL := apitest.Listen(t, "")
	hc := &http.Client{Transport: bearerHeader{relayToken}}
	a, err := relay.Agent(relay.Config{
		SubAgentURL: sub.AgentURL("expenses"), CallbackURL: topURL + "/assistant", SubAgentName: "the expense agent",
		Dial: func(ctx context.Context, u string) (*a2aclient.Client, error) { return client.Dial(ctx, u, hc) },
	})
	if err != nil {
		t.Fatal(err)
	}
	top := apitest.Start(t, apitest.Options{Quiet: true, Listener: ln, Config: func(c *askpoint.Config) {
		fast(c)
		c.Tokens = callers
	}, Agents: []askpoint.AgentSpec{{Name: "assistant", Agent: a, Card: a2a.AgentCard{Name: "Relay", Description: "d"}}}})

	ctx := testCtx(t)
	alice := top.ClientAs(t, "assistant", a2a.TransportProtocolJSONRPC, aliceToken)
	task := send(t, ctx, alice, userText(receipt))
	for i := 0; i < 50 && !task.Status.State.Terminal() && task.Status.State != a2a.TaskStateInputRequired; i++ {
		task = getTask(t, ctx, alice, task.ID)
	}
	if task.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactsJSON(task), "CC-1111") {
		t.Fatalf("alice's expense through the relay: %s %q, artifacts %s; want completed on alice's CC-1111",
			task.Status.State, statusText(task), artifactsJSON(task))
	}

	// Anyone else naming a caller in the metadata is not believed.
	mallory := sub.ClientAs(t, "expenses", a2a.TransportProtocolJSONRPC, malloryToken)
	m := userText(receipt)
	m.Metadata = map[string]any{askpoint.OnBehalfOfKey: "alice"}
	got := send(t, ctx, mallory, m)
	if strings.Contains(artifactsJSON(got), "CC-1111") || !strings.Contains(artifactsJSON(got), "CC-6666") {
		t.Fatalf("mallory naming alice: %s, artifacts %s; want mallory's own CC-6666", got.Status.State, artifactsJSON(got))
	}
}

func artifactsJSON(task *a2a.Task) string {
	raw, _ := json.Marshal(task.Artifacts)
	return string(raw)
}
