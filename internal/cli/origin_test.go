package cli_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/askpoint/askpoint/internal/apitest"
)

// Issue 23, finding 2: the caller's bearer token goes only to the origin
// it was given for. Here the agent at 127.0.0.1 redirects its card to
// localhost (another origin, the same machine), and the card there names
// an interface on localhost too: before, both requests carried the token.
func TestBearerTokenGoesOnlyToTheAgentsOrigin(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	elsewhere := &apitest.AuthLog{}
	other := httptest.NewUnstartedServer(nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	other.Listener = ln
	otherURL := "http://localhost:" + fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
	other.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(r)
		if strings.HasSuffix(r.URL.Path, ".json") {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"name":"elsewhere","description":"d","version":"1","supportedInterfaces":[{"url":%q,"protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"capabilities":{},"defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],"skills":[]}`, otherURL+"/rpc")
			return
		}
		http.Error(w, "no", http.StatusBadRequest)
	})
	other.Start()
	t.Cleanup(other.Close)

	home := &apitest.AuthLog{}
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		home.Add(r)
		http.Redirect(w, r, otherURL+"/card.json", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(agent.Close)

	_, _, _ = exe(t, bin, "", "ask", agent.URL+"/agent", "hello", "--token", "caller-secret-0123",
		"--inbox", filepath.Join(t.TempDir(), "inbox.db"), "--timeout", "20s")
	if h := home.All(); len(h) == 0 || !strings.HasSuffix(h[0], "Bearer caller-secret-0123") {
		t.Errorf("the agent's own origin got %q; want its card request with the token", h)
	}
	got := elsewhere.All()
	if len(got) == 0 {
		t.Fatal("the other origin got no request: the test did not reach it")
	}
	for _, g := range got {
		if strings.Contains(g, "caller-secret-0123") {
			t.Errorf("another origin received the caller's token: %q", g)
		}
	}
}

// Per-agent bearer tokens: with --agent-tokens each agent gets its own,
// and never another's.
func TestEachAgentGetsItsOwnBearerToken(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	logs := map[string]*apitest.AuthLog{}
	urls := map[string]string{}
	for _, name := range []string{"a", "b"} {
		l := &apitest.AuthLog{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			l.Add(r)
			http.Error(w, "no", http.StatusNotFound)
		}))
		t.Cleanup(srv.Close)
		logs[name], urls[name] = l, srv.URL+"/agent"
	}
	file := filepath.Join(t.TempDir(), "agent-tokens.json")
	raw := fmt.Sprintf(`{%q: "token-of-a-0123", %q: "token-of-b-0123"}`, urls["a"], urls["b"])
	if err := os.WriteFile(file, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	for _, name := range []string{"a", "b"} {
		_, _, _ = exe(t, bin, "", "ask", urls[name], "hello", "--agent-tokens", file, "--token", "the-default-0123", "--inbox", inboxPath, "--timeout", "10s")
	}
	for name, l := range logs {
		got := l.All()
		if len(got) == 0 {
			t.Fatalf("agent %s got no request", name)
		}
		for _, g := range got {
			if !strings.HasSuffix(g, "Bearer token-of-"+name+"-0123") {
				t.Errorf("agent %s received %q; want its own token only", name, g)
			}
		}
	}
}
