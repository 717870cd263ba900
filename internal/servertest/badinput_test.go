package servertest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/store"
)

type rpcReply struct {
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
}

func postJSONRPC(t *testing.T, url string, body io.Reader, version string) rpcReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "" {
		req.Header.Set("A2A-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	var r rpcReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("reply is not JSON-RPC: %v", err)
	}
	return r
}

// requireNoTasks asserts a rejected request stored nothing.
func requireNoTasks(t *testing.T, env *apitest.Env) {
	t.Helper()
	res, err := env.Store.ListTasks(t.Context(), store.ListParams{PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalSize != 0 {
		t.Fatalf("store holds %d tasks after a rejected request, want 0", res.TotalSize)
	}
}

func TestBadJSONRPCRequestsGetTheirCodeAndStoreNothing(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("script") + "/jsonrpc"
	send := func(msg string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` + msg + `}}`
	}
	tests := []struct {
		name     string
		body     string
		code     int
		mentions string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,"method":`, -32700, "not valid JSON"},
		{"unknown method", `{"jsonrpc":"2.0","id":1,"method":"tasks/explode","params":{}}`, -32601, ""},
		{"no message", `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}`, -32602, "params.message is required"},
		{"no messageId", send(`{"role":"ROLE_USER","parts":[{"text":"complete"}]}`), -32602, "params.message.messageId"},
		{"no parts", send(`{"messageId":"m1","role":"ROLE_USER"}`), -32602, "params.message.parts"},
		{"empty parts", send(`{"messageId":"m1","role":"ROLE_USER","parts":[]}`), -32602, "params.message.parts"},
		{"part without content", send(`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"complete"},{"mediaType":"text/plain"}]}`), -32602, "params.message.parts[1] has no content"},
		{"part with two contents", send(`{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"a","url":"https://x"}]}`), -32602, "more than one content"},
		{"streaming without parts", `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[]}}}`, -32602, "parts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := postJSONRPC(t, url, strings.NewReader(tt.body), "1.0")
			if r.Error == nil {
				t.Fatalf("reply has no error, want code %d", tt.code)
			}
			if r.Error.Code != tt.code {
				t.Errorf("error code = %d (%s), want %d", r.Error.Code, r.Error.Message, tt.code)
			}
			if !strings.Contains(r.Error.Message, tt.mentions) {
				t.Errorf("error message %q does not mention %q", r.Error.Message, tt.mentions)
			}
			requireNoTasks(t, env)
		})
	}
}

func TestBadRESTRequestsAreRefusedAndStoreNothing(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("script") + "/rest/message:send"
	tests := []struct {
		name     string
		body     string
		mentions string
	}{
		{"malformed JSON", `{"message":`, "not valid JSON"},
		{"no parts", `{"message":{"messageId":"m1","role":"ROLE_USER"}}`, "message.parts"},
		{"part without content", `{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{}]}}`, "message.parts[0] has no content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(tt.body))
			req.Header.Set("A2A-Version", "1.0")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status = %d, want 400", resp.StatusCode)
			}
			if !strings.Contains(string(body), tt.mentions) {
				t.Errorf("body %s does not mention %q", body, tt.mentions)
			}
			requireNoTasks(t, env)
		})
	}
}

// countingReader yields n bytes of a JSON string body and counts what is
// read.
type countingReader struct {
	n, read int64
	prefix  []byte
}

func (r *countingReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(p) && r.read < r.n; i++ {
		if r.read < int64(len(r.prefix)) {
			p[i] = r.prefix[r.read]
		} else {
			p[i] = 'x'
		}
		r.read++
	}
	return i, nil
}

func TestOversizedBodyIsRefusedBeforeItIsReadWhole(t *testing.T) {
	const limit = 64 << 10
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.MaxRequestBytes = limit }})
	url := env.AgentURL("script") + "/jsonrpc"

	t.Run("declared length", func(t *testing.T) {
		body := bytes.Repeat([]byte("x"), 2*limit)
		r := postJSONRPC(t, url, bytes.NewReader(body), "1.0")
		if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "65536") {
			t.Fatalf("reply error = %+v, want -32600 naming the 65536-byte limit", r.Error)
		}
	})
	t.Run("chunked", func(t *testing.T) {
		const total = 64 << 20
		cr := &countingReader{n: total, prefix: []byte(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"`)}
		var read atomic.Int64
		r := postJSONRPC(t, url, io.NopCloser(readerFunc(func(p []byte) (int, error) {
			n, err := cr.Read(p)
			read.Add(int64(n))
			return n, err
		})), "1.0")
		if r.Error == nil || r.Error.Code != -32600 || !strings.Contains(r.Error.Message, "limit") {
			t.Fatalf("reply error = %+v, want -32600 naming the limit", r.Error)
		}
		if got := read.Load(); got >= total {
			t.Errorf("the client sent all %d bytes; the server should have stopped reading near %d", got, limit)
		}
	})
	requireNoTasks(t, env)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestDefaultRequestLimitIsOneMebibyte(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	body := bytes.Repeat([]byte("x"), 1<<20+1)
	r := postJSONRPC(t, env.AgentURL("script")+"/jsonrpc", bytes.NewReader(body), "1.0")
	if r.Error == nil || !strings.Contains(r.Error.Message, "1048576") {
		t.Fatalf("reply error = %+v, want one naming the 1048576-byte limit", r.Error)
	}
}
