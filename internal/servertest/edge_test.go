package servertest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
)

// The edge (issue 16): what a browser, a slow client or hostile input
// meets. Each test here failed before the edge was built.

// edgeDo sends one raw request; host, when set, replaces the Host header.
func edgeDo(t *testing.T, method, url, host, body string, hdr ...string) *tckResponse {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == "" {
		req.Body, req.ContentLength = http.NoBody, 0
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := &tckResponse{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	_ = json.Unmarshal(raw, &out.JSON)
	return out
}

func edgeSendBody(id, text string) string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%s,"role":"ROLE_USER","parts":[{"text":%s}]}}}`, q(id), q(text))
}

func TestEdgeBrowserCannotCreateATaskWithANoCORSPost(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	// What fetch(url, {mode: "no-cors", method: "POST", body: blob}) sends:
	// no Content-Type, the version in the query.
	r := edgeDo(t, http.MethodPost, env.AgentURL("script")+"/jsonrpc?A2A-Version=1.0", "", edgeSendBody("m-nocors", "complete"))
	if r.rpcCode() != -32005 || !strings.Contains(string(r.Raw), "Content-Type") {
		t.Errorf("no-cors POST: %d %s; want -32005 naming Content-Type", r.Status, r.Raw)
	}
	r = edgeDo(t, http.MethodPost, env.AgentURL("script")+"/rest/message:send?A2A-Version=1.0", "",
		`{"message":{"messageId":"m-nocors2","role":"ROLE_USER","parts":[{"text":"complete"}]}}`)
	if r.Status != http.StatusUnsupportedMediaType {
		t.Errorf("no-cors REST POST: %d %s; want 415", r.Status, r.Raw)
	}
	requireNoTasks(t, env)
}

func TestEdgeDNSRebindingHostIsRefused(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	send(t, testCtx(t), env.Client(t, "script", a2a.TransportProtocolJSONRPC), userText("complete"))
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(env.URL, "http://"))
	r := edgeDo(t, http.MethodGet, env.AgentURL("script")+"/rest/tasks", "attacker.example:"+port, "", "A2A-Version", "1.0")
	if r.Status != http.StatusMisdirectedRequest || strings.Contains(string(r.Raw), `"tasks"`) {
		t.Errorf("list under Host attacker.example: %d %s; want 421 and no tasks", r.Status, r.Raw)
	}
	if r := edgeDo(t, http.MethodGet, env.AgentURL("script")+"/rest/tasks", "localhost:"+port, "", "A2A-Version", "1.0"); r.Status != http.StatusOK {
		t.Errorf("list under Host localhost: %d %s; want 200", r.Status, r.Raw)
	}
	pub := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.PublicURL = "https://agents.example.com" }})
	if r := edgeDo(t, http.MethodGet, pub.AgentURL("script")+"/rest/tasks", "agents.example.com", "", "A2A-Version", "1.0"); r.Status != http.StatusOK {
		t.Errorf("list under the public URL's host: %d %s; want 200", r.Status, r.Raw)
	}
}

func TestEdgeCrossOriginBrowserRequestsAreRefusedUnlessAllowed(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.AllowedOrigins = []string{"https://app.example"} }})
	url := env.AgentURL("script") + "/jsonrpc"
	r := edgeDo(t, http.MethodPost, url, "", edgeSendBody("m-o1", "complete"), append(jsonHeaders, "Origin", "https://evil.example")...)
	if r.Status != http.StatusForbidden || !strings.Contains(string(r.Raw), "cross-origin") {
		t.Errorf("Origin evil.example: %d %s; want 403 naming cross-origin", r.Status, r.Raw)
	}
	r = edgeDo(t, http.MethodPost, url, "", edgeSendBody("m-o2", "complete"), append(jsonHeaders, "Sec-Fetch-Site", "cross-site")...)
	if r.Status != http.StatusForbidden {
		t.Errorf("Sec-Fetch-Site cross-site: %d %s; want 403", r.Status, r.Raw)
	}
	requireNoTasks(t, env)
	r = edgeDo(t, http.MethodPost, url, "", edgeSendBody("m-o3", "complete"), append(jsonHeaders, "Origin", "https://app.example")...)
	if r.Status != http.StatusOK || r.rpcCode() != 0 || r.Header.Get("Access-Control-Allow-Origin") != "https://app.example" {
		t.Errorf("allowed origin: %d %s %v; want the task and CORS headers", r.Status, r.Raw, r.Header)
	}
	// The card stays readable from any page.
	if r := edgeDo(t, http.MethodGet, env.AgentURL("script")+"/.well-known/agent-card.json", "", "", "Origin", "https://evil.example"); r.Status != http.StatusOK {
		t.Errorf("card from another origin: %d; want 200", r.Status)
	}
}

func TestEdgeListTasksReplyIsBoundedAndPagesOnward(t *testing.T) {
	const n, size = 12, 700 << 10 // 12 tasks of ~700 KB first messages
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.MaxReplyBytes = 2 << 20 }})
	big := strings.Repeat("x", size)
	for i := range n {
		r := edgeDo(t, http.MethodPost, env.AgentURL("script")+"/jsonrpc", "", edgeSendBody(fmt.Sprintf("m-big-%d", i), "ask "+big), jsonHeaders...)
		if r.rpcCode() != 0 {
			t.Fatalf("send %d: %s", i, r.Raw[:min(len(r.Raw), 300)])
		}
	}
	seen := map[string]bool{}
	token := ""
	for page := 0; page < n+1; page++ {
		path := "/rest/tasks?pageSize=100&historyLength=5"
		if token != "" {
			path += "&pageToken=" + token
		}
		r := edgeDo(t, http.MethodGet, env.AgentURL("script")+path, "", "", "A2A-Version", "1.0")
		if r.Status != http.StatusOK {
			t.Fatalf("list: %d %s", r.Status, r.Raw[:min(len(r.Raw), 300)])
		}
		if len(r.Raw) > 3<<20 {
			t.Fatalf("a page is %d bytes; the budget is 2 MiB (one task over it may go alone)", len(r.Raw))
		}
		tasks, _ := r.JSON["tasks"].([]any)
		for _, x := range tasks {
			seen[x.(map[string]any)["id"].(string)] = true
		}
		token, _ = r.JSON["nextPageToken"].(string)
		if token == "" {
			break
		}
	}
	if len(seen) != n {
		t.Fatalf("the pages held %d distinct tasks, want %d", len(seen), n)
	}
}

func TestEdgeListTasksBoundsHistoryByDefault(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.ListHistoryLength = 1 }})
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendState(t, ctx, c, userText("File my taxi receipt from Tuesday, 42 euros"), a2a.TaskStateInputRequired)
	sendState(t, ctx, c, followUp(task.ID, userText("engineering")), a2a.TaskStateInputRequired)
	res, err := c.ListTasks(ctx, &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tasks) != 1 || len(res.Tasks[0].History) != 1 {
		t.Fatalf("ListTasks without historyLength: %d tasks, history %d; want 1 message (the default bound)", len(res.Tasks), len(res.Tasks[0].History))
	}
}

// edgeIDCases are identifiers the edge refuses, on every store alike.
func edgeIDCases() []struct{ name, body, field string } {
	long := strings.Repeat("a", 900)
	msg := func(extra string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-ok","role":"ROLE_USER","parts":[{"text":"complete"}]` + extra + `}}}`
	}
	return []struct{ name, body, field string }{
		{"NUL in messageId", edgeSendBody("m\u0000x", "complete"), "params.message.messageId"},
		{"long messageId", edgeSendBody(long, "complete"), "params.message.messageId"},
		{"NUL in contextId", msg(`,"contextId":"c\u0000x"`), "params.message.contextId"},
		{"long contextId", msg(`,"contextId":"` + long + `"`), "params.message.contextId"},
		{"control character in taskId", msg(`,"taskId":"t\u0007x"`), "params.message.taskId"},
		{"NUL in GetTask id", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t\u0000"}}`, "params.id"},
		{"long push config id", `{"jsonrpc":"2.0","id":1,"method":"GetTaskPushNotificationConfig","params":{"taskId":"t1","id":"` + long + `"}}`, "params.id"},
	}
}

func testEdgeIDs(t *testing.T, env *apitest.Env) {
	for _, tc := range edgeIDCases() {
		t.Run(tc.name, func(t *testing.T) {
			r := edgeDo(t, http.MethodPost, env.AgentURL("script")+"/jsonrpc", "", tc.body, jsonHeaders...)
			if r.rpcCode() != -32602 || !strings.Contains(string(r.Raw), tc.field) || strings.Contains(string(r.Raw), "SQL") {
				t.Errorf("%s: %s; want -32602 naming %s", tc.name, r.Raw[:min(len(r.Raw), 300)], tc.field)
			}
		})
	}
	r := edgeDo(t, http.MethodGet, env.AgentURL("script")+"/rest/tasks/t%00x", "", "", "A2A-Version", "1.0")
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), "task ID") {
		t.Errorf("NUL in the path's task ID: %d %s; want 400 naming the task ID", r.Status, r.Raw)
	}
	requireNoTasks(t, env)
}

func TestEdgeIDsAreValidatedOnSQLite(t *testing.T) {
	testEdgeIDs(t, apitest.Start(t, apitest.Options{Quiet: true}))
}

func TestEdgeIDsAreValidatedOnPostgreSQL(t *testing.T) {
	testEdgeIDs(t, apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: dbtest.Schema(t)}))
}

func TestEdgeJSONRPCEnvelopeDetails(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("script") + "/jsonrpc"
	for _, tc := range []struct {
		name, body string
		code       int
		mentions   string
	}{
		{"jsonrpc as a number", `{"jsonrpc":2.0,"id":1,"method":"GetTask","params":{"id":"x"}}`, -32600, `jsonrpc must be the string`},
		{"method as a number", `{"jsonrpc":"2.0","id":1,"method":5,"params":{}}`, -32600, "method must be a string"},
		{"a batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]`, -32600, "batch"},
		{"an empty batch", `[]`, -32600, "empty batch"},
		{"GetTask without params", `{"jsonrpc":"2.0","id":1,"method":"GetTask"}`, -32602, "params is required"},
		{"params as a string", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":"x"}`, -32602, "params must be an object"},
		{"not JSON", `{"jsonrpc":`, -32700, "not valid JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := edgeDo(t, http.MethodPost, url, "", tc.body, jsonHeaders...)
			if r.rpcCode() != tc.code || !strings.Contains(string(r.Raw), tc.mentions) {
				t.Errorf("%s: %s; want %d mentioning %q", tc.name, r.Raw, tc.code, tc.mentions)
			}
			if strings.Contains(string(r.Raw), "Go value") || strings.Contains(string(r.Raw), "jsonrpc.") {
				t.Errorf("%s: the message names Go types: %s", tc.name, r.Raw)
			}
		})
	}
	// A notification (no id) gets no reply, and runs nothing.
	r := edgeDo(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","method":"SendMessage","params":{"message":{"messageId":"m-n","role":"ROLE_USER","parts":[{"text":"complete"}]}}}`, jsonHeaders...)
	if r.Status != http.StatusNoContent || len(r.Raw) != 0 {
		t.Errorf("notification: %d %q; want 204 and no body", r.Status, r.Raw)
	}
	requireNoTasks(t, env)
}

func TestEdgeUnknownHTTPJSONPathsAnswerTheBindingsError(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	for _, tc := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/rest/no/such/path", http.StatusNotFound},
		{http.MethodPut, "/rest/message:send", http.StatusMethodNotAllowed},
	} {
		r := edgeDo(t, tc.method, env.AgentURL("script")+tc.path, "", "", "A2A-Version", "1.0")
		e, _ := r.JSON["error"].(map[string]any)
		if r.Status != tc.status || e == nil || e["code"] != float64(tc.status) || e["message"] == "" ||
			!strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s %s: %d %s %q; want %d with a google.rpc.Status JSON error", tc.method, tc.path, r.Status, r.Header.Get("Content-Type"), r.Raw, tc.status)
		}
	}
}

func TestEdgeRoleAndUTF8AreChecked(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("script") + "/jsonrpc"
	r := edgeDo(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-b","role":"banana","parts":[{"text":"complete"}]}}}`, jsonHeaders...)
	if r.rpcCode() != -32602 || !strings.Contains(string(r.Raw), "banana") || !strings.Contains(string(r.Raw), "role") {
		t.Errorf("role banana: %s; want -32602 naming the role", r.Raw)
	}
	r = edgeDo(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m-u","role":"ROLE_USER","parts":[{"text":"complete `+"\xff\xfe"+`"}]}}}`, jsonHeaders...)
	if r.rpcCode() != -32700 || !strings.Contains(string(r.Raw), "UTF-8") {
		t.Errorf("invalid UTF-8: %s; want an error naming UTF-8", r.Raw)
	}
	r = edgeDo(t, http.MethodPost, env.AgentURL("script")+"/rest/message:send", "", `{"message":{"messageId":"m-u2","role":"ROLE_USER","parts":[{"text":"`+"\xc3"+`"}]}}`, jsonHeaders...)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Raw), "UTF-8") {
		t.Errorf("invalid UTF-8 on HTTP+JSON: %d %s; want 400 naming UTF-8", r.Status, r.Raw)
	}
	requireNoTasks(t, env)
}

func TestEdgeAgentCardDoesNotReflectTheHostHeader(t *testing.T) {
	pub := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.PublicURL = "https://agents.example.com" }})
	r := edgeDo(t, http.MethodGet, pub.AgentURL("script")+"/.well-known/agent-card.json", "6.6.6.6", "")
	if r.Status != http.StatusOK || strings.Contains(string(r.Raw), "6.6.6.6") || !strings.Contains(string(r.Raw), "https://agents.example.com/script/jsonrpc") {
		t.Errorf("card under Host 6.6.6.6 with a public URL: %d %s; want the public URL's interfaces", r.Status, r.Raw)
	}
	if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "public") {
		t.Errorf("card with a public URL: Cache-Control %q; want public", cc)
	}
	env := apitest.Start(t, apitest.Options{Quiet: true})
	r = edgeDo(t, http.MethodGet, env.AgentURL("script")+"/.well-known/agent-card.json", "6.6.6.6", "")
	if cc := r.Header.Get("Cache-Control"); strings.Contains(cc, "public") {
		t.Errorf("card built from the request's host: Cache-Control %q; a shared cache must not keep it", cc)
	}
	if r := edgeDo(t, http.MethodGet, env.AgentURL("script")+"/.well-known/agent-card.json", "attacker.example", ""); r.Status != http.StatusMisdirectedRequest {
		t.Errorf("card under Host attacker.example: %d %s; want 421", r.Status, r.Raw)
	}
}

func TestEdgeWebhookGuardRefusesEmbeddedAndReservedAddresses(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendState(t, ctx, c, userText("File my taxi receipt from Tuesday, 42 euros"), a2a.TaskStateInputRequired)
	for _, u := range []string{
		"http://[::127.0.0.1]/", "http://[::169.254.169.254]/", "http://[fec0::1]/", "http://255.255.255.255/",
		"http://[::ffff:127.0.0.1]/", "http://100.64.0.1/", "http://198.18.0.1/", "http://[64:ff9b::a9fe:a9fe]/", "http://[2002:7f00:1::]/",
	} {
		_, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, URL: u})
		if err == nil || !strings.Contains(err.Error(), "address") {
			t.Errorf("push config %s: %v; want it refused", u, err)
		}
	}
}

func TestEdgePushDeliveriesDoNotFollowRedirects(t *testing.T) {
	var reached atomic.Int64
	hit := make(chan struct{}, 1)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		select {
		case hit <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(target.Close)
	attempts := make(chan struct{}, 16)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case attempts <- struct{}{}:
		default:
		}
		http.Redirect(w, r, target.URL+"/metadata", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		// Only the redirector's address is allowed, as the server's own
		// address is in askpoint serve.
		c.WebhookHosts = []string{strings.TrimPrefix(redirector.URL, "http://")}
		c.PushRetryMin, c.PushRetryMax, c.PushInterval = 10*time.Millisecond, 20*time.Millisecond, 20*time.Millisecond
	}})
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	req := &a2a.SendMessageRequest{Message: userText("File my taxi receipt from Tuesday, 42 euros"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: redirector.URL + "/hook"}}}
	sendTask(t, ctx, c, req)
	// Two attempts: the first delivery (and any redirect it followed) is
	// over when the retry arrives.
wait:
	for i := 0; i < 2; i++ {
		select {
		case <-attempts:
		case <-hit:
			break wait
		case <-ctx.Done():
			t.Fatal("no delivery attempt reached the receiver")
		}
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the redirect target was reached %d times; push deliveries must not follow redirects", n)
	}
}
