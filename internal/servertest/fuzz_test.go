package servertest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/askpoint/askpoint/internal/apitest"
)

// FuzzJSONRPCRequest throws arbitrary bodies at a real server's JSON-RPC
// endpoint: every reply is a JSON-RPC response (a result or an error with
// a code), never a server error or a dropped connection, and the server
// keeps answering.
func FuzzJSONRPCRequest(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"complete"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"ask"}]},"configuration":{"returnImmediately":true}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"nope","historyLength":-1}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{"pageSize":1000,"pageToken":"%%%"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":""}}`,
		`{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m3","taskId":"t","parts":[{"data":{"questionId":"q"}}]}}}`,
		`{"jsonrpc":"1.0","id":{},"method":7}`,
		`{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m4","parts":[{"raw":"!!"}]}}}`,
		`{`, `[]`, `null`, ``,
		`{"jsonrpc":"2.0","method":"0"}`, // a notification: no reply
	} {
		f.Add([]byte(seed))
	}
	env := apitest.Start(f, apitest.Options{Quiet: true})
	url := env.AgentURL("script") + "/jsonrpc"
	post := func(t *testing.T, body []byte) (int, []byte) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %q: %v", body, err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 {
			t.Fatalf("POST %q: status %d: %s", body, resp.StatusCode, raw)
		}
		return resp.StatusCode, raw
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		code, raw := post(t, body)
		if code == http.StatusNoContent {
			// A notification (a request object without an id): JSON-RPC 2.0
			// sends no reply at all.
			var env map[string]json.RawMessage
			if json.Unmarshal(body, &env) != nil || len(raw) != 0 {
				t.Fatalf("POST %q: 204 with body %q, or for a body that is not a request object", body, raw)
			}
			if _, hasID := env["id"]; hasID {
				t.Fatalf("POST %q: 204 (no reply) for a request that has an id", body)
			}
			return
		}
		var reply struct {
			JSONRPC string          `json:"jsonrpc"`
			Result  json.RawMessage `json:"result"`
			Error   *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil {
			t.Fatalf("POST %q: reply is not JSON-RPC: %v: %s", body, err, raw)
		}
		if (reply.Error == nil) == (reply.Result == nil) {
			t.Fatalf("POST %q: reply must hold exactly one of result and error: %s", body, raw)
		}
		if reply.Error != nil && (reply.Error.Code == -32603 || reply.Error.Message == "") {
			t.Fatalf("POST %q: internal or unexplained error: %s", body, raw)
		}
	})
}
