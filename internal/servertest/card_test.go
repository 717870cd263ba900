package servertest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

func getCard(t *testing.T, url string) (*a2a.AgentCard, *http.Response) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatalf("card is not JSON: %v", err)
	}
	return &card, resp
}

func TestAgentCardDeclaresBindingsStreamingAndTheQuestionExtension(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	card, resp := getCard(t, env.AgentURL("expense")+"/.well-known/agent-card.json")

	want := map[a2a.TransportProtocol]string{
		a2a.TransportProtocolJSONRPC:  env.AgentURL("expense") + "/jsonrpc",
		a2a.TransportProtocolHTTPJSON: env.AgentURL("expense") + "/rest",
		// gRPC shares the port; the tenant names the agent.
		a2a.TransportProtocolGRPC: strings.TrimPrefix(env.URL, "http://"),
	}
	if len(card.SupportedInterfaces) != len(want) {
		t.Fatalf("card has %d interfaces, want %d", len(card.SupportedInterfaces), len(want))
	}
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolGRPC && iface.Tenant != "expense" {
			t.Errorf("gRPC interface tenant = %q, want expense", iface.Tenant)
		}
		if want[iface.ProtocolBinding] != iface.URL || iface.ProtocolVersion != "1.0" {
			t.Errorf("interface %s at %s version %s; want %s version 1.0", iface.ProtocolBinding, iface.URL, iface.ProtocolVersion, want[iface.ProtocolBinding])
		}
	}
	if !card.Capabilities.Streaming {
		t.Errorf("capabilities.streaming = false, want true")
	}
	var ext *a2a.AgentExtension
	for i := range card.Capabilities.Extensions {
		if card.Capabilities.Extensions[i].URI == question.ExtensionURI {
			ext = &card.Capabilities.Extensions[i]
		}
	}
	if ext == nil {
		t.Fatalf("card does not declare %s", question.ExtensionURI)
	}
	if ext.Required || ext.Params["maxAttempts"] != float64(3) || ext.Params["defaultExpiry"] != "24h0m0s" {
		t.Errorf("extension = %+v, want not required with maxAttempts 3 and defaultExpiry 24h0m0s", *ext)
	}
	if resp.Header.Get("ETag") == "" || resp.Header.Get("Cache-Control") == "" {
		t.Errorf("card headers ETag %q, Cache-Control %q; want both set", resp.Header.Get("ETag"), resp.Header.Get("Cache-Control"))
	}
}

func TestRootAgentCardIsTheFirstAgents(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	root, _ := getCard(t, env.URL+"/.well-known/agent-card.json")
	if root.Name != "Expense agent" {
		t.Errorf("root card name = %q, want the expense agent's", root.Name)
	}
}

func TestQuestionMessagesListTheExtension(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	task := sendState(t, t.Context(), env.Client(t, "expense", a2a.TransportProtocolJSONRPC),
		userText("File my taxi receipt from Tuesday, 42 euros"), a2a.TaskStateInputRequired)
	exts := task.Status.Message.Extensions
	if len(exts) != 1 || exts[0] != question.ExtensionURI {
		t.Errorf("question message extensions = %v, want [%s]", exts, question.ExtensionURI)
	}
}
