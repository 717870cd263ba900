package servertest_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// notification is one push notification a hookReceiver took.
type notification = apitest.Notification

// hookReceiver is a webhook on 127.0.0.1 that records the notifications it
// accepts. While failing it answers 503 and records nothing.
type hookReceiver struct{ *apitest.Webhook }

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	return &hookReceiver{apitest.NewWebhook(t)}
}

func (h *hookReceiver) setFailing(v bool)   { h.SetFailing(v) }
func (h *hookReceiver) all() []notification { return h.All() }
func (h *hookReceiver) attemptCount() int   { return h.Attempts() }

func (h *hookReceiver) waitFor(t *testing.T, what string, cond func([]notification) bool) {
	t.Helper()
	eventually(t, what, func() bool { return cond(h.all()) })
}

// states lists the states of the status notifications, reminders marked.
func states(ns []notification) []string {
	var out []string
	for _, n := range ns {
		switch {
		case n.Artifact:
			out = append(out, "artifact")
		case n.Reminder != nil:
			out = append(out, "reminder")
		default:
			out = append(out, stateWordOf(n.Status.State))
		}
	}
	return out
}

func stateWordOf(s a2a.TaskState) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(string(s), "TASK_STATE_")), "_", "-")
}

func countState(ns []notification, s a2a.TaskState, reminders bool) int {
	n := 0
	for _, x := range ns {
		if !x.Artifact && x.Status.State == s && (x.Reminder != nil) == reminders {
			n++
		}
	}
	return n
}

func countReminders(ns []notification) int {
	n := 0
	for _, x := range ns {
		if x.Reminder != nil {
			n++
		}
	}
	return n
}

func pushEnv(t *testing.T, adjust func(*askpoint.Config)) *apitest.Env {
	t.Helper()
	return apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.AllowPrivateWebhooks = true
		c.PollInterval = 20 * time.Millisecond
		c.PushRetryMin = 10 * time.Millisecond
		c.PushRetryMax = 40 * time.Millisecond
		if adjust != nil {
			adjust(c)
		}
	}})
}

func TestPushNotifiesTheQuestionAndTheEndWithTheConfiguredCredentials(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		env := pushEnv(t, nil)
		hook := newHookReceiver(t)
		c := env.Client(t, "expense", tr)
		ctx := testCtx(t)
		task := sendPushed(t, ctx, c, "File my taxi receipt from Tuesday, 42 euros", a2a.PushConfig{
			URL: hook.URL(), Token: "tok-42", Auth: &a2a.PushAuthInfo{Scheme: "Bearer", Credentials: "receiver-secret"},
		})
		hook.waitFor(t, "the question", func(n []notification) bool { return len(n) >= 1 })
		first := hook.all()[0]
		if first.Token != "tok-42" || first.Auth != "Bearer receiver-secret" || first.TaskID != task.ID {
			t.Fatalf("first notification: token %q, auth %q, task %s; want tok-42, Bearer receiver-secret, %s", first.Token, first.Auth, first.TaskID, task.ID)
		}
		q, ok, err := question.FromMessage(first.Status.Message)
		if first.Status.State != a2a.TaskStateInputRequired || err != nil || !ok || q.ID == "" {
			t.Fatalf("first notification: state %v, question ok=%v err=%v; want input-required with the question", first.Status.State, ok, err)
		}
		sendState(t, ctx, c, followUp(task.ID, userData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"})), a2a.TaskStateCompleted)
		hook.waitFor(t, "the completion", func(n []notification) bool { return countState(n, a2a.TaskStateCompleted, false) == 1 })
		if err := env.Engine.Idle(ctx); err != nil { // every delivery owed has been made
			t.Fatalf("Idle: %v", err)
		}
		if got, want := strings.Join(states(hook.all()), ","), "input-required,completed"; got != want {
			t.Fatalf("notifications = %s, want %s", got, want)
		}
	})
}

func TestPushNotifiesEveryReAsk(t *testing.T) {
	env := pushEnv(t, nil)
	hook := newHookReceiver(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendPushed(t, ctx, c, "File my taxi receipt from Tuesday, 42 euros", a2a.PushConfig{URL: hook.URL()})
	sendState(t, ctx, c, followUp(task.ID, userText("engineering")), a2a.TaskStateInputRequired)
	hook.waitFor(t, "the question and its re-ask", func(n []notification) bool { return countState(n, a2a.TaskStateInputRequired, false) == 2 })
	ns := hook.all()
	q1, _, _ := question.FromMessage(ns[0].Status.Message)
	q2, _, _ := question.FromMessage(ns[1].Status.Message)
	if q1 == nil || q2 == nil || q1.ID == q2.ID || len(q2.Errors) == 0 {
		t.Fatalf("re-ask notification does not carry a new question with errors: %+v then %+v", q1, q2)
	}
}

func TestPushRetriesUntilTheReceiverComesBack(t *testing.T) {
	env := pushEnv(t, nil)
	hook := newHookReceiver(t)
	hook.setFailing(true)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendPushed(t, ctx, c, "ask", a2a.PushConfig{URL: hook.URL()})
	sendState(t, ctx, c, followUp(task.ID, userData(map[string]any{"name": "Ada"})), a2a.TaskStateCompleted)
	eventually(t, "three failed attempts", func() bool { return hook.attemptCount() >= 3 })
	hook.setFailing(false)
	hook.waitFor(t, "both notifications", func(n []notification) bool { return len(n) == 2 })
	if got, want := strings.Join(states(hook.all()), ","), "input-required,completed"; got != want {
		t.Fatalf("notifications after recovery = %s, want %s in order", got, want)
	}
}

func TestPushGivesUpOnAReceiverThatKeepsFailing(t *testing.T) {
	env := pushEnv(t, func(c *askpoint.Config) { c.PushMaxAttempts = 3 })
	hook := newHookReceiver(t)
	hook.setFailing(true)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendPushed(t, ctx, c, "ask", a2a.PushConfig{URL: hook.URL()})
	eventually(t, "three attempts", func() bool { return hook.attemptCount() >= 3 })
	// The signal that it gave up: the configuration owes nothing more and
	// nothing is scheduled (a retry owed keeps SentSeq below TargetSeq and
	// DueAt set). A fourth attempt ends the wait too, so that a server that
	// keeps trying fails here at once.
	eventually(t, "the server to give up on the receiver", func() bool {
		if hook.attemptCount() > 3 {
			return true
		}
		cfgs, err := env.Store.ListPushConfigs(ctx, string(task.ID))
		if err != nil {
			t.Fatalf("ListPushConfigs: %v", err)
		}
		return len(cfgs) == 1 && cfgs[0].SentSeq >= cfgs[0].TargetSeq && cfgs[0].DueAt.IsZero()
	})
	if err := env.Engine.Idle(ctx); err != nil { // no delivery under way, the pusher has gone round
		t.Fatalf("Idle: %v", err)
	}
	if n := hook.attemptCount(); n != 3 {
		t.Fatalf("attempts = %d, want exactly PushMaxAttempts (3), then no more", n)
	}
	// Later notifications are tried afresh.
	hook.setFailing(false)
	sendState(t, ctx, c, followUp(task.ID, userData(map[string]any{"name": "Ada"})), a2a.TaskStateCompleted)
	hook.waitFor(t, "the completion", func(n []notification) bool { return len(n) == 1 })
	if got := states(hook.all()); got[0] != "completed" {
		t.Fatalf("after giving up on the question: got %v, want only the completion", got)
	}
}

func TestPushConfigurationsCanBeCreatedReadListedAndDeleted(t *testing.T) {
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		env := pushEnv(t, nil)
		c := env.Client(t, "script", tr)
		ctx := testCtx(t)
		task := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
		made, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, ID: "mine", URL: "http://127.0.0.1:9/hook", Token: "t1"})
		if err != nil {
			t.Fatalf("CreateTaskPushConfig: %v", err)
		}
		if made.ID != "mine" || made.TaskID != task.ID || made.URL != "http://127.0.0.1:9/hook" {
			t.Fatalf("created %+v, want id mine on task %s", made, task.ID)
		}
		got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "mine"})
		if err != nil || got.Token != "t1" {
			t.Fatalf("GetTaskPushConfig = %+v, %v; want the config with token t1", got, err)
		}
		if _, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: task.ID, URL: "http://127.0.0.1:9/other"}); err != nil {
			t.Fatalf("second CreateTaskPushConfig: %v", err)
		}
		list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
		if err != nil || len(list) != 2 {
			t.Fatalf("ListTaskPushConfigs = %+v, %v; want 2 configs", list, err)
		}
		if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "mine"}); err != nil {
			t.Fatalf("DeleteTaskPushConfig: %v", err)
		}
		_, err = c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: task.ID, ID: "mine"})
		wantErr(t, "GetTaskPushConfig after delete", err, a2a.ErrTaskNotFound)
		if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: task.ID, ID: "mine"}); err != nil {
			t.Fatalf("second delete = %v, want nil: deleting is idempotent", err)
		}
		_, err = c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
		if err != nil {
			t.Fatalf("list after deletes: %v", err)
		}
	})
}

func TestPushConfigurationIsRefusedWithAReasonAndNothingStored(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true}) // private webhooks not allowed
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	task := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
	for _, tc := range []struct {
		name string
		cfg  a2a.PushConfig
		want string
	}{
		{"loopback", a2a.PushConfig{URL: "http://127.0.0.1:8080/hook"}, "loopback, private or link-local"},
		{"private", a2a.PushConfig{URL: "http://10.1.2.3/hook"}, "loopback, private or link-local"},
		{"metadata", a2a.PushConfig{URL: "http://169.254.169.254/latest"}, "loopback, private or link-local"},
		{"localhost", a2a.PushConfig{URL: "http://localhost:9/hook"}, "loopback, private or link-local"},
		{"carrier-grade NAT", a2a.PushConfig{URL: "http://100.100.100.200/latest"}, "loopback, private or link-local"},
		{"NAT64", a2a.PushConfig{URL: "http://[64:ff9b::a00:1]/hook"}, "loopback, private or link-local"},
		{"scheme", a2a.PushConfig{URL: "ftp://example.com/hook"}, "not an absolute http or https URL"},
		{"relative", a2a.PushConfig{URL: "/hook"}, "not an absolute http or https URL"},
		{"auth scheme", a2a.PushConfig{URL: "http://127.0.0.1/hook", Auth: &a2a.PushAuthInfo{Scheme: "Digest", Credentials: "x"}}, `scheme "Digest" is not supported`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.TaskID = task.ID
			_, err := c.CreateTaskPushConfig(ctx, &cfg)
			wantErr(t, "CreateTaskPushConfig", err, a2a.ErrInvalidParams)
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to say %q", err, tc.want)
			}
			list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: task.ID})
			if err != nil || len(list) != 0 {
				t.Fatalf("after the refusal: configs = %+v, %v; want none", list, err)
			}
		})
	}
	// The same check guards a configuration sent with a message: the
	// message is refused and no task is created.
	before := listCount(t, c)
	_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("ask"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: "http://127.0.0.1:1/x"}}})
	wantErr(t, "SendMessage with a loopback webhook", err, a2a.ErrInvalidParams)
	if after := listCount(t, c); after != before {
		t.Fatalf("tasks after a refused message = %d, want %d", after, before)
	}
}

func listCount(t *testing.T, c *a2aclient.Client) int {
	t.Helper()
	res, err := c.ListTasks(testCtx(t), &a2a.ListTasksRequest{})
	if err != nil {
		t.Fatalf("ListTasks: %v", err)
	}
	return res.TotalSize
}

func TestAgentCardDeclaresPushNotifications(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	resp, err := http.Get(env.AgentURL("expense") + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if !card.Capabilities.PushNotifications {
		t.Fatalf("card capabilities = %+v, want pushNotifications true", card.Capabilities)
	}
}

// A receiver that hangs does not hold up another receiver's notification:
// the fast receiver hears while the slow one still holds its request.
func TestASlowReceiverDoesNotHoldUpAnother(t *testing.T) {
	env := pushEnv(t, nil)
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	slowHit := make(chan struct{}, 16)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		slowHit <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	defer slow.Close()
	defer once.Do(func() { close(release) })
	fast := newHookReceiver(t)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	ctx := testCtx(t)
	sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: userText("ask"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: slow.URL + "/hook"}}})
	select {
	case <-slowHit:
	case <-ctx.Done():
		t.Fatal("the slow receiver was never called")
	}
	sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: userText("ask"),
		Config: &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: fast.URL()}}})
	fast.waitFor(t, "the fast receiver's notification while the slow one hangs", func(n []notification) bool { return len(n) == 1 })
}
