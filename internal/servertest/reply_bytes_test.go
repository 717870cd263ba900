package servertest_test

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/internal/apitest"
)

// sdkPaths serves /sdk/AGENT with the SDK's own JSON-RPC transport over
// the agent's request handler, beside the front's paths.
func sdkPaths(env **apitest.Env) func(http.Handler) http.Handler {
	return func(front http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if name, ok := strings.CutPrefix(r.URL.Path, "/sdk/"); ok {
				h, _ := (*env).Server.RequestHandler(name)
				a2asrv.NewJSONRPCHandler(h).ServeHTTP(w, r)
				return
			}
			front.ServeHTTP(w, r)
		})
	}
}

func postRaw(t *testing.T, url, body string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var errorTimestamp = regexp.MustCompile(`"timestamp":"[^"]*"`)

// TestFrontRepliesAreTheSDKTransportsBytes: what the front writes for the
// JSON-RPC methods it answers itself is what the SDK's transport writes for
// the same request over the same handler, byte for byte (an error's
// ErrorInfo timestamp aside, which is the time it was written).
func TestFrontRepliesAreTheSDKTransportsBytes(t *testing.T) {
	var env *apitest.Env
	env = apitest.Start(t, apitest.Options{Quiet: true, Wrap: sdkPaths(&env)})
	ours, sdk := env.AgentURL("expense")+"/jsonrpc", env.URL+"/sdk/expense"
	// same posts body to both paths and returns the SDK's reply.
	same := func(what, body string) []byte {
		t.Helper()
		a, b := postRaw(t, ours, body), postRaw(t, sdk, body)
		if bytes.Contains(b, []byte(`"error":{`)) {
			a, b = errorTimestamp.ReplaceAll(a, []byte(`"timestamp":"T"`)), errorTimestamp.ReplaceAll(b, []byte(`"timestamp":"T"`))
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s:\nfront %s\n  sdk %s", what, a, b)
		}
		return b
	}
	ask := `{"jsonrpc":"2.0","id":"a<1>","method":"SendMessage","params":{"message":{"messageId":"m-ask","role":"ROLE_USER","parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}]}}}`
	first := postRaw(t, ours, ask)
	id := regexp.MustCompile(`"task":\{"id":"([^"]+)"`).FindSubmatch(first)
	if id == nil {
		t.Fatalf("SendMessage reply %s holds no task", first)
	}
	task := string(id[1])
	// The reply to a message sent again is the task as it is: what the
	// front wrote the first time, from the bytes the call itself encoded.
	if again := same("SendMessage sent again (the same task)", ask); !bytes.Equal(first, again) {
		t.Errorf("first SendMessage reply:\nfront %s\n  sdk %s (sent again)", first, again)
	}
	for _, hl := range []string{``, `,"historyLength":0`, `,"historyLength":1`} {
		same("GetTask"+hl, `{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"`+task+`"`+hl+`}}`)
	}
	same("GetTask of no task", `{"jsonrpc":"2.0","id":7.5,"method":"GetTask","params":{"id":"no-such-task"}}`)
	same("GetTask with bad params", `{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{"id":1}}`)
	same("SendMessage with bad params", `{"jsonrpc":"2.0","id":8,"method":"SendMessage","params":{"message":{"messageId":"x","role":"ROLE_USER","parts":[{"text":"a"}]},"configuration":{"historyLength":"x"}}}`)
	answer := `{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"m-answer","taskId":"` + task + `","role":"ROLE_USER","parts":[{"data":{"costCentre":"CC-4410"},"mediaType":"application/json"}]}}}`
	answered := postRaw(t, ours, answer)
	if again := same("SendMessage answer sent again", answer); !bytes.Equal(answered, again) {
		t.Errorf("SendMessage answer reply:\nfront %s\n  sdk %s (sent again)", answered, again)
	}
	same("GetTask completed", `{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"`+task+`"}}`)
	same("CancelTask completed", `{"jsonrpc":"2.0","id":10,"method":"CancelTask","params":{"id":"`+task+`"}}`)
	same("SendMessage to a completed task", `{"jsonrpc":"2.0","id":11,"method":"SendMessage","params":{"message":{"messageId":"m-late","taskId":"`+task+`","role":"ROLE_USER","parts":[{"text":"more"}]}}}`)
}
