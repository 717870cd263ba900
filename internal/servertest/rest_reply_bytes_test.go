package servertest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

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
	replier := askpoint.Steps[struct{}, map[string]any]{
		OnReply: func(_ context.Context, m *a2a.Message) (*a2a.Message, bool) {
			reply := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("hello <you> & "+m.ID))
			reply.ID, reply.ContextID = "reply-"+m.ID, "ctx-"+m.ID
			return reply, true
		},
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{
		{Name: "replier", Agent: replier, Card: a2a.AgentCard{Name: "Replier", Description: "Answers with a message."}},
	}, Setup: func(srv *askpoint.Server) {
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
