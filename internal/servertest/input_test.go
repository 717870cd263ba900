package servertest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// Bad input, the last ones (issue 30, item 11): repeated JSON members, Go
// type names in errors, a body far over the limit, answers nested without
// bound. Each test failed before the front and the question package
// refused them.

// goWords are what the decoder's errors name that a caller never wrote.
var goWords = []string{"Go value", "Go struct", "json:", "a2a.", "map[string]", "interface {", "[]*", "[]string", "struct {"}

// TestRepeatedMembersAreRefusedAndChangeNothing: a JSON-RPC request that
// names a member twice ("method":"GetTask","method":"CancelTask" ran
// CancelTask), or two names of one field in different letter cases, is
// refused naming the member, and changes nothing; in the caller's own JSON
// (metadata, data) names that differ in letter case are two members, and
// are kept. The same on HTTP+JSON. (gRPC's protobuf has no member names.)
func TestRepeatedMembersAreRefusedAndChangeNothing(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	ctx := testCtx(t)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	task := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
	q, _, _ := question.FromMessage(task.Status.Message)
	id := string(task.ID)
	rpcURL := env.AgentURL("script") + "/jsonrpc"
	answer := func(data string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":{"messageId":"m-dup","taskId":%q,"role":"ROLE_USER","parts":[{"mediaType":"application/json","data":%s}]}}}`, id, data)
	}
	for _, tc := range []struct {
		name, body string
		code       int
		mentions   string
	}{
		{"method twice", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"CancelTask","params":{"id":%q}}`, id), -32600, `"method" twice`},
		{"id of the task twice", fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"CancelTask","params":{"id":"no-such-task","id":%q}}`, id), -32602, `params has the member "id" twice`},
		{"id in two letter cases", fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"no-such-task","ID":%q}}`, id), -32602, `"id" and "ID"`},
		{"params in two letter cases", fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"CancelTask","params":{"id":"no-such-task"},"Params":{"id":%q}}`, id), -32600, `"params" and "Params"`},
		{"a field of the answer twice", answer(fmt.Sprintf(`{"questionId":%q,"name":"Ada","name":"Grace"}`, q.ID)), -32602, `params.message.parts[0].data has the member "name" twice`},
		{"the message's taskId twice", fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"SendMessage","params":{"message":{"messageId":"m-dup2","taskId":"no-such-task","taskId":%q,"role":"ROLE_USER","parts":[{"text":"Ada"}]}}}`, id), -32602, `params.message has the member "taskId" twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := edgeDo(t, http.MethodPost, rpcURL, "", tc.body, jsonHeaders...)
			if r.rpcCode() != tc.code || !strings.Contains(errorMessage(r), tc.mentions) {
				t.Errorf("%s\n  got %s\n  want %d mentioning %s", tc.body, r.Raw, tc.code, tc.mentions)
			}
			if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateInputRequired || len(got.History) != len(task.History) {
				t.Fatalf("after the refusal: state %v, %d history entries; want input-required and %d", got.Status.State, len(got.History), len(task.History))
			}
		})
	}
	// A lone member in other letter cases is the member, as the decoder
	// reads it, and checked as such.
	r := edgeDo(t, http.MethodPost, rpcURL, "", `{"jsonrpc":"2.0","id":6,"method":"SendMessage","params":{"message":{"messageId":"m-f","TaskID":"t\u0007","role":"ROLE_USER","parts":[{"text":"Ada"}]}}}`, jsonHeaders...)
	if r.rpcCode() != -32602 || !strings.Contains(errorMessage(r), "control character") {
		t.Errorf("a TaskID with a control character: %s; want -32602 naming the control character", r.Raw)
	}
	// The caller's own JSON keeps letter case: two members.
	r = edgeDo(t, http.MethodPost, rpcURL, "", answer(fmt.Sprintf(`{"questionId":%q,"name":"Ada","Name":"Grace"}`, q.ID)), jsonHeaders...)
	if r.rpcCode() != 0 {
		t.Fatalf("an answer with name and Name: %s; want it taken", r.Raw)
	}
	if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("after the answer: state %v, want completed", got.Status.State)
	}

	restURL := env.AgentURL("script") + "/rest/message:send"
	msg := `{"messageId":"m-rest","role":"ROLE_USER","parts":[{"text":"complete"}]}`
	for _, tc := range []struct{ name, body, mentions string }{
		{"message twice", `{"message":` + msg + `,"message":` + msg + `}`, `body has the member "message" twice`},
		{"messageId in two letter cases", `{"message":{"messageId":"m-a","MessageID":"m-b","role":"ROLE_USER","parts":[{"text":"complete"}]}}`, `body.message has the members "messageId" and "MessageID"`},
	} {
		before := countTasks(t, env)
		r := edgeDo(t, http.MethodPost, restURL, "", tc.body, jsonHeaders...)
		if r.Status != http.StatusBadRequest || !strings.Contains(errorMessage(r), tc.mentions) {
			t.Errorf("HTTP+JSON %s: %d %s; want 400 mentioning %s", tc.name, r.Status, r.Raw, tc.mentions)
		}
		if n := countTasks(t, env); n != before {
			t.Errorf("HTTP+JSON %s: %d tasks after the refusal, want %d", tc.name, n, before)
		}
	}
}

// errorMessage is the message of a JSON-RPC or HTTP+JSON error reply.
func errorMessage(r *tckResponse) string {
	e, _ := r.JSON["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// countTasks is how many tasks the store holds.
func countTasks(t *testing.T, env *apitest.Env) int {
	t.Helper()
	res, err := env.Store.ListTasks(t.Context(), store.ListParams{PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	return int(res.TotalSize)
}

// TestWrongTypesAreNamedInTheProtocolsWords: a request member of the
// wrong JSON type is refused naming the member and the type it must have,
// never Go's types, on every method of both JSON bindings.
func TestWrongTypesAreNamedInTheProtocolsWords(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	rpcURL := env.AgentURL("script") + "/jsonrpc"
	msg := `{"messageId":"m-t","role":"ROLE_USER","parts":[{"text":"complete"}]}`
	rpc := func(method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":%s}`, method, params)
	}
	for _, tc := range []struct {
		body, mentions string
	}{
		{rpc("SendMessage", `{"message":[]}`), "params.message must be an object, not an array"},
		{rpc("SendMessage", `{"message":{"messageId":"m-t","role":"ROLE_USER","parts":[{"text":"complete"}],"metadata":"x"}}`), "params.message.metadata must be an object, not a string"},
		{rpc("SendMessage", `{"message":`+msg+`,"configuration":{"historyLength":"x"}}`), "params.configuration.historyLength must be an integer, not a string"},
		{rpc("SendMessage", `{"message":{"messageId":"m-t","role":"ROLE_USER","parts":[{"raw":1}]}}`), "params.message.parts.raw must be a base64 string, not a number"},
		{rpc("SendStreamingMessage", `{"message":`+msg+`,"configuration":{"returnImmediately":[]}}`), "params.configuration.returnImmediately must be true or false, not an array"},
		{rpc("SendStreamingMessage", `{"message":{"messageId":"m-t","role":"ROLE_USER","parts":[{"mediaType":[],"text":"x"}]}}`), "params.message.parts.mediaType must be a string, not an array"},
		{rpc("GetTask", `{"id":[]}`), "params.id must be a string, not an array"},
		{rpc("GetTask", `{"id":"t","historyLength":1.5}`), "params.historyLength must be an integer, not the number 1.5"},
		{rpc("CancelTask", `{"id":{}}`), "params.id must be a string, not an object"},
		{rpc("ListTasks", `{"pageSize":"10"}`), "params.pageSize must be an integer, not a string"},
		{rpc("ListTasks", `{"statusTimestampAfter":"yesterday"}`), "not an RFC 3339 time"},
		{rpc("SubscribeToTask", `{"id":5}`), "params.id must be a string, not a number"},
		{rpc("CreateTaskPushNotificationConfig", `{"taskId":"t","url":["x"]}`), "params.url must be a string, not an array"},
		{rpc("GetTaskPushNotificationConfig", `{"taskId":"t","id":true}`), "params.id must be a string, not true or false"},
		{rpc("ListTaskPushNotificationConfigs", `{"taskId":"t","pageSize":"x"}`), "params.pageSize must be an integer, not a string"},
		{rpc("DeleteTaskPushNotificationConfig", `{"taskId":"t","id":[1]}`), "params.id must be a string, not an array"},
	} {
		r := edgeDo(t, http.MethodPost, rpcURL, "", tc.body, jsonHeaders...)
		checkTypeRefusal(t, "JSON-RPC "+tc.body, r, r.rpcCode() == -32602, tc.mentions)
	}
	restURL := env.AgentURL("script") + "/rest"
	for _, tc := range []struct {
		path, body, mentions string
	}{
		{"/message:send", `{"message":1}`, "message must be an object, not a number"},
		{"/message:send", `[]`, "the body must be an object holding message"},
		{"/message:send", `{"message":` + msg + `,"configuration":{"acceptedOutputModes":"text/plain"}}`, "body.configuration.acceptedOutputModes must be an array, not a string"},
		{"/message:send", `{"message":{"messageId":"m-t","role":"ROLE_USER","parts":[{"text":"complete"}],"messageId":{}}}`, `body.message has the member "messageId" twice`},
		{"/message:stream", `{"message":{"messageId":"m-t","role":[],"parts":[{"text":"complete"}]}}`, "body.message.role must be a string, not an array"},
		{"/tasks/t/pushNotificationConfigs", `{"url":1}`, "body.url must be a string, not a number"},
	} {
		r := edgeDo(t, http.MethodPost, restURL+tc.path, "", tc.body, jsonHeaders...)
		checkTypeRefusal(t, "HTTP+JSON "+tc.path+" "+tc.body, r, r.Status == http.StatusBadRequest, tc.mentions)
	}
	requireNoTasks(t, env)
}

func checkTypeRefusal(t *testing.T, call string, r *tckResponse, refused bool, mentions string) {
	t.Helper()
	if !refused || !strings.Contains(errorMessage(r), mentions) {
		t.Errorf("%s\n  got %d %s\n  want it refused as invalid params mentioning %q", call, r.Status, r.Raw, mentions)
	}
	for _, w := range goWords {
		if strings.Contains(string(r.Raw), w) {
			t.Errorf("%s: the reply names Go's types (%q): %s", call, w, r.Raw)
		}
	}
}

// TestABodyFarOverTheLimitGetsItsRefusal: a client that sends its whole
// 10 MB body before it reads the reply (as Python's urllib does) gets the
// refusal, on both JSON bindings, instead of a connection reset: the
// server read 256 KB of it, answered and closed the connection on the
// rest. The same request over gRPC gets RESOURCE_EXHAUSTED.
func TestABodyFarOverTheLimitGetsItsRefusal(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	text := strings.Repeat("x", 10<<20)
	for _, tc := range []struct {
		path, body string
		status     int
	}{
		{"/jsonrpc", edgeSendBody("m-10mb", text), http.StatusOK},
		{"/rest/message:send", fmt.Sprintf(`{"message":{"messageId":"m-10mb","role":"ROLE_USER","parts":[{"text":%q}]}}`, text), http.StatusRequestEntityTooLarge},
	} {
		resp, err := sendWholeThenRead(env.URL, "/script"+tc.path, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.path, err)
			continue
		}
		if resp.StatusCode != tc.status || !strings.Contains(string(resp.body), "limit is 1048576 bytes") {
			t.Errorf("%s: %d %s; want %d naming the limit", tc.path, resp.StatusCode, resp.body, tc.status)
		}
	}
	c := env.Client(t, "script", a2a.TransportProtocolGRPC)
	_, err := c.SendMessage(testCtx(t), &a2a.SendMessageRequest{Message: userText(text)})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("gRPC: %v; want the refusal of a message larger than the limit", err)
	}
	requireNoTasks(t, env)
}

type wholeResponse struct {
	*http.Response
	body []byte
}

// sendWholeThenRead writes a POST of body to path on one connection, all
// of it, and only then reads the response.
func sendWholeThenRead(base, path, body string) (*wholeResponse, error) {
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: %d\r\n\r\n",
		path, strings.TrimPrefix(base, "http://"), len(body))
	if _, err := io.WriteString(conn, head+body); err != nil {
		return nil, fmt.Errorf("writing the body: %w (the server reset the connection instead of answering)", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &wholeResponse{resp, b}, nil
}

// TestAnAnswerNestedTooDeepIsRefusedAndNotKept: an answer whose data
// nests deeper than 32 is refused as invalid params
// on every binding, and nothing of it is kept: the question stays open,
// the history unchanged (500 levels were stored and returned, 9,000 over
// JSON-RPC).
func TestAnAnswerNestedTooDeepIsRefusedAndNotKept(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		c := env.Client(t, "script", tr)
		task := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
		q, _, _ := question.FromMessage(task.Status.Message)
		var deep any = "bottom"
		for range 500 {
			deep = map[string]any{"d": deep}
		}
		_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"questionId": q.ID, "name": "Ada", "extra": deep}))})
		wantErr(t, "SendMessage(an answer 501 levels deep)", err, a2a.ErrInvalidParams)
		if !strings.Contains(err.Error(), fmt.Sprintf("at most %d", question.MaxAnswerDepth)) {
			t.Errorf("error %q does not say how deep an answer may nest", err)
		}
		got, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: intp(100)})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(got)
		if got.Status.State != a2a.TaskStateInputRequired || len(got.History) != 2 || bytes.Contains(raw, []byte(`"extra"`)) {
			t.Fatalf("after the refusal: state %v, %d history entries; want input-required with the request and the question only", got.Status.State, len(got.History))
		}
	})
}
