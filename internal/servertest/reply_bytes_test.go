package servertest_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

// sdkPaths serves /sdk/AGENT with the SDK's own JSON-RPC transport over
// the agent's request handler, beside the front's paths.
func sdkPaths(srv *askpoint.Server) {
	if err := srv.Handle("/sdk/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/sdk/")
		h, _ := srv.RequestHandler(name)
		a2asrv.NewJSONRPCHandler(h).ServeHTTP(w, r)
	})); err != nil {
		panic(err)
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

// bothPaths serves the test agents and, under /sdk/AGENT, the SDK's own
// JSON-RPC transport over the same request handlers. same posts a body to
// the front's path of agent and to the SDK's, fails the test unless both
// write the same bytes (an error's ErrorInfo timestamp aside: the time it
// was written), and returns the SDK's reply.
func bothPaths(t *testing.T) (env *apitest.Env, post func(agent, body string) []byte, same func(agent, what, body string) []byte) {
	t.Helper()
	env = apitest.Start(t, apitest.Options{Quiet: true, Setup: sdkPaths, Agents: []askpoint.AgentSpec{apitest.ReplierSpec()}})
	post = func(agent, body string) []byte { return postRaw(t, env.AgentURL(agent)+"/jsonrpc", body) }
	same = func(agent, what, body string) []byte {
		t.Helper()
		a, b := post(agent, body), postRaw(t, env.URL+"/sdk/"+agent, body)
		if bytes.Contains(b, []byte(`"error":{`)) {
			a, b = errorTimestamp.ReplaceAll(a, []byte(`"timestamp":"T"`)), errorTimestamp.ReplaceAll(b, []byte(`"timestamp":"T"`))
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s:\nfront %s\n  sdk %s", what, a, b)
		}
		return b
	}
	return env, post, same
}

// sendBody is a JSON-RPC SendMessage of a user message with one text part.
func sendBody(id, messageID, taskID, text, config string) string {
	task := ""
	if taskID != "" {
		task = `,"taskId":"` + taskID + `"`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"SendMessage","params":{"message":{"messageId":"` + messageID + `"` + task +
		`,"role":"ROLE_USER","parts":[{"text":"` + text + `"}]}` + config + `}}`
}

var replyTaskID = regexp.MustCompile(`"task":\{"id":"([^"]+)"`)

// TestFrontRepliesAreTheSDKTransportsBytes: what the front writes for the
// JSON-RPC methods it answers itself (SendMessage, GetTask, CancelTask) is
// what the SDK's transport writes for the same request over the same
// handler, byte for byte: tasks with history, a question's data part and
// artifacts, historyLength unset, 0 and 1, a message result, and the
// errors. A first SendMessage's reply (written from the bytes the call
// encoded) is compared with the SDK's reply to the same message sent
// again, which is the task as it then is.
func TestFrontRepliesAreTheSDKTransportsBytes(t *testing.T) {
	_, post, same := bothPaths(t)
	firstIsAgain := func(what, body string) string {
		t.Helper()
		first := post("expense", body)
		if again := same("expense", what+" sent again", body); !bytes.Equal(first, again) {
			t.Errorf("%s:\nfront %s\n  sdk %s (sent again)", what, first, again)
		}
		id := replyTaskID.FindSubmatch(first)
		if id == nil {
			t.Fatalf("%s: reply %s holds no task", what, first)
		}
		return string(id[1])
	}
	receipt := "File my taxi receipt from Tuesday, 42 euros"
	task := firstIsAgain("SendMessage", sendBody(`"a<1>"`, "m-ask", "", receipt, ""))
	firstIsAgain("SendMessage historyLength 0", sendBody("2", "m-ask-0", "", receipt, `,"configuration":{"historyLength":0}`))
	firstIsAgain("SendMessage historyLength 1", sendBody("3", "m-ask-1", "", receipt, `,"configuration":{"historyLength":1}`))
	for _, hl := range []string{``, `,"historyLength":0`, `,"historyLength":1`} {
		same("expense", "GetTask"+hl, `{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"`+task+`"`+hl+`}}`)
	}
	same("expense", "GetTask of no task", `{"jsonrpc":"2.0","id":7.5,"method":"GetTask","params":{"id":"no-such-task"}}`)
	same("expense", "GetTask with its members in other letter cases", `{"JSONRPC":"2.0","Id":1,"Method":"GetTask","Params":{"id":"`+task+`"}}`)
	same("expense", "CancelTask of no task", `{"jsonrpc":"2.0","id":"c","method":"CancelTask","params":{"id":"no-such-task"}}`)
	answer := `{"jsonrpc":"2.0","id":9,"method":"SendMessage","params":{"message":{"messageId":"m-answer","taskId":"` + task +
		`","role":"ROLE_USER","parts":[{"data":{"costCentre":"CC-4410"},"mediaType":"application/json"}]}}}`
	firstIsAgain("SendMessage answer", answer)
	same("expense", "GetTask completed", `{"jsonrpc":"2.0","id":null,"method":"GetTask","params":{"id":"`+task+`"}}`)
	same("expense", "CancelTask completed", `{"jsonrpc":"2.0","id":10,"method":"CancelTask","params":{"id":"`+task+`"}}`)
	same("expense", "SendMessage to a completed task", sendBody("11", "m-late", task, "more", ""))
	cancel := firstIsAgain("SendMessage to cancel", sendBody("12", "m-cancel", "", receipt, ""))
	// The second CancelTask finds the task canceled: the reply to the
	// first is compared with the reply to a GetTask.
	canceled := post("expense", `{"jsonrpc":"2.0","id":13,"method":"CancelTask","params":{"id":"`+cancel+`"}}`)
	if got := same("expense", "GetTask canceled", `{"jsonrpc":"2.0","id":13,"method":"GetTask","params":{"id":"`+cancel+`"}}`); !bytes.Equal(canceled, got) {
		t.Errorf("CancelTask:\nfront %s\n  sdk %s (GetTask)", canceled, got)
	}
	if got := same("replier", "SendMessage answered with a message", sendBody(`"r"`, "m-hello", "", "hello", "")); !bytes.Contains(got, []byte(`"result":{"message":`)) {
		t.Errorf("the replier's reply %s holds no message", got)
	}
}

// TestFrontRefusesParamsTheSDKRefusesInTheProtocolsWords: a SendMessage
// whose params the SDK's decoder refuses (past the front's own checks) is
// refused by the front as invalid params, as the SDK refuses most of them,
// but naming the member and the JSON it must hold where the SDK names Go's
// types (decision 0106).
func TestFrontRefusesParamsTheSDKRefusesInTheProtocolsWords(t *testing.T) {
	_, post, _ := bothPaths(t)
	msg := `"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"complete"}]}`
	for name, tc := range map[string]struct{ params, says string }{
		"historyLength a string":       {msg + `,"configuration":{"historyLength":"x"}`, "params.configuration.historyLength must be an integer, not a string"},
		"returnImmediately a string":   {msg + `,"configuration":{"returnImmediately":"yes"}`, "params.configuration.returnImmediately must be true or false, not a string"},
		"configuration a list":         {msg + `,"configuration":[]`, "params.configuration must be an object, not an array"},
		"acceptedOutputModes a string": {msg + `,"configuration":{"acceptedOutputModes":"text/plain"}`, "params.configuration.acceptedOutputModes must be an array, not a string"},
		"metadata a string":            {msg + `,"metadata":"x"`, "params.metadata must be an object, not a string"},
		"role a number":                {`"message":{"messageId":"m","role":5,"parts":[{"text":"complete"}]}`, "params.message.role must be a string, not a number"},
		"extensions a string":          {`"message":{"messageId":"m","role":"ROLE_USER","extensions":"x","parts":[{"text":"complete"}]}`, "params.message.extensions must be an array, not a string"},
		"part metadata a number":       {`"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"complete","metadata":3}]}`, "params.message.parts.metadata must be an object, not a number"},
		"raw not base64":               {`"message":{"messageId":"m","role":"ROLE_USER","parts":[{"raw":"%%%"}]}`, "params holds a raw part that is not valid base64 (at byte 0)"},
	} {
		got := post("script", `{"jsonrpc":"2.0","id":"`+name+`","method":"SendMessage","params":{`+tc.params+`}}`)
		var r struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(got, &r); err != nil || r.Error.Code != -32602 || r.Error.Message != tc.says {
			t.Errorf("%s: %s; want -32602 saying %q", name, got, tc.says)
		}
	}
}

// TestFrontRefusesABusyTaskAsTheSDKDoes: a message to a task whose step is
// running gets the -32004 refusal, the SDK's bytes.
func TestFrontRefusesABusyTaskAsTheSDKDoes(t *testing.T) {
	_, post, same := bothPaths(t)
	key := apitest.UniqueKey(t)
	started := post("script", sendBody("1", "m-block", "", "block "+key, `,"configuration":{"returnImmediately":true}`))
	id := replyTaskID.FindSubmatch(started)
	if id == nil {
		t.Fatalf("SendMessage reply %s holds no task", started)
	}
	got := same("script", "SendMessage to a busy task", sendBody("2", "m-busy", string(id[1]), "more", ""))
	apitest.Release(key)
	if !bytes.Contains(got, []byte(`"code":-32004`)) {
		t.Errorf("a message to a busy task got %s, want the -32004 refusal", got)
	}
}

// TestFrontWritesInternalErrorsAsTheSDKDoes: with its store closed the
// server answers every call with an internal error, the SDK's bytes.
func TestFrontWritesInternalErrorsAsTheSDKDoes(t *testing.T) {
	env, _, same := bothPaths(t)
	if err := env.Store.Close(); err != nil {
		t.Fatal(err)
	}
	got := same("expense", "GetTask, the store closed", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t"}}`)
	same("expense", "SendMessage, the store closed", sendBody("2", "m", "", "File my receipt", ""))
	same("expense", "CancelTask, the store closed", `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"t"}}`)
	if !bytes.Contains(got, []byte(`"code":-32603`)) {
		t.Errorf("GetTask with the store closed got %s, want -32603", got)
	}
}

// restReply is what an HTTP+JSON call got: status, content type, body.
type restReply struct {
	status int
	ctype  string
	body   []byte
}

func callREST(t *testing.T, method, url, body string) restReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return restReply{resp.StatusCode, resp.Header.Get("Content-Type"), b}
}

// bothRESTPaths serves the test agents and, under /sdkrest/AGENT, the SDK's
// own HTTP+JSON transport over the same request handlers. same makes a call
// on the front's path of agent and on the SDK's, fails the test unless both
// answer with the same status, content type and bytes (an error's ErrorInfo
// timestamp aside), and returns the SDK's body.
func bothRESTPaths(t *testing.T) (call func(agent, method, path, body string) []byte, same func(agent, what, method, path, body string) []byte) {
	t.Helper()
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{apitest.ReplierSpec()}, Setup: func(srv *askpoint.Server) {
		if err := srv.Handle("/sdkrest/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/sdkrest/"), "/")
			h, _ := srv.RequestHandler(name)
			http.StripPrefix("/sdkrest/"+name, a2asrv.NewRESTHandler(h)).ServeHTTP(w, r)
		})); err != nil {
			t.Fatal(err)
		}
	}})
	call = func(agent, method, path, body string) []byte {
		return callREST(t, method, env.AgentURL(agent)+"/rest"+path, body).body
	}
	same = func(agent, what, method, path, body string) []byte {
		t.Helper()
		a, b := callREST(t, method, env.AgentURL(agent)+"/rest"+path, body), callREST(t, method, env.URL+"/sdkrest/"+agent+path, body)
		if bytes.Contains(b.body, []byte(`"error":{`)) {
			a.body, b.body = errorTimestamp.ReplaceAll(a.body, []byte(`"timestamp":"T"`)), errorTimestamp.ReplaceAll(b.body, []byte(`"timestamp":"T"`))
		}
		if a.status != b.status || a.ctype != b.ctype || !bytes.Equal(a.body, b.body) {
			t.Errorf("%s:\nfront %d %s %s\n  sdk %d %s %s", what, a.status, a.ctype, a.body, b.status, b.ctype, b.body)
		}
		return b.body
	}
	return call, same
}

var restTaskID = regexp.MustCompile(`^\{"task":\{"id":"([^"]+)"`)

// TestRESTRepliesAreTheSDKTransportsBytes: what the front writes for the
// HTTP+JSON methods it answers itself (SendMessage, GetTask, CancelTask) is
// what the SDK's transport writes for the same request over the same
// handler, byte for byte, with the same status and content type: tasks with
// history, a question's data part and artifacts, historyLength unset, 0, 1
// and not a number, a message result, and the errors. A first SendMessage's
// reply (written from the bytes the call encoded) is compared with the
// SDK's reply to the same message sent again, which is the task as it then
// is.
func TestRESTRepliesAreTheSDKTransportsBytes(t *testing.T) {
	call, same := bothRESTPaths(t)
	firstIsAgain := func(what, body string) string {
		t.Helper()
		first := call("expense", http.MethodPost, "/message:send", body)
		if again := same("expense", what+" sent again", http.MethodPost, "/message:send", body); !bytes.Equal(first, again) {
			t.Errorf("%s:\nfront %s\n  sdk %s (sent again)", what, first, again)
		}
		id := restTaskID.FindSubmatch(first)
		if id == nil {
			t.Fatalf("%s: reply %s holds no task", what, first)
		}
		return string(id[1])
	}
	send := func(messageID, taskID, text, config string) string {
		task := ""
		if taskID != "" {
			task = `,"taskId":"` + taskID + `"`
		}
		return `{"message":{"messageId":"` + messageID + `"` + task + `,"role":"ROLE_USER","parts":[{"text":"` + text + `"}]}` + config + `}`
	}
	receipt := "File my taxi receipt from Tuesday, 42 euros"
	task := firstIsAgain("SendMessage", send("m-ask", "", receipt, ""))
	firstIsAgain("SendMessage historyLength 0", send("m-ask-0", "", receipt, `,"configuration":{"historyLength":0}`))
	firstIsAgain("SendMessage historyLength 1", send("m-ask-1", "", receipt, `,"configuration":{"historyLength":1}`))
	for _, q := range []string{"", "?historyLength=0", "?historyLength=1", "?historyLength=x"} {
		same("expense", "GetTask"+q, http.MethodGet, "/tasks/"+task+q, "")
	}
	same("expense", "GetTask of no task", http.MethodGet, "/tasks/no-such-task", "")
	same("expense", "CancelTask of no task", http.MethodPost, "/tasks/no-such-task:cancel", "")
	answer := `{"message":{"messageId":"m-answer","taskId":"` + task +
		`","role":"ROLE_USER","parts":[{"data":{"costCentre":"CC-4410"},"mediaType":"application/json"}]}}`
	firstIsAgain("SendMessage answer", answer)
	same("expense", "GetTask completed", http.MethodGet, "/tasks/"+task, "")
	same("expense", "CancelTask completed", http.MethodPost, "/tasks/"+task+":cancel", "")
	same("expense", "SendMessage to a completed task", http.MethodPost, "/message:send", send("m-late", task, "more", ""))
	cancel := firstIsAgain("SendMessage to cancel", send("m-cancel", "", receipt, ""))
	canceled := call("expense", http.MethodPost, "/tasks/"+cancel+":cancel", "")
	if got := same("expense", "GetTask canceled", http.MethodGet, "/tasks/"+cancel, ""); !bytes.Equal(canceled, got) {
		t.Errorf("CancelTask:\nfront %s\n  sdk %s (GetTask)", canceled, got)
	}
	if got := same("replier", "SendMessage answered with a message", http.MethodPost, "/message:send", send("m-hello", "", "hello", "")); !bytes.HasPrefix(got, []byte(`{"message":`)) {
		t.Errorf("the replier's reply %s holds no message", got)
	}
}
