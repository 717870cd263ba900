package servertest_test

import (
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	_ "modernc.org/sqlite"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
)

// One behaviour per situation, whichever path gets there (issue 15, part 4).

// raceLosersGetTheTask asks the worked example's question through
// clients[0], sends n valid answers to it at once spread over clients, and
// checks that every one gets a task back (never an error) and that one of
// them resumed the agent. Then a late answer to the same question, after
// the task completed, gets the completed task too.
func raceLosersGetTheTask(t *testing.T, clients []*a2aclient.Client, n int) {
	ctx := testCtx(t)
	asked := send(t, ctx, clients[0], userText(receipt))
	q, ok, _ := question.FromMessage(asked.Status.Message)
	if asked.Status.State != a2a.TaskStateInputRequired || !ok {
		t.Fatalf("ask: state %v, want input-required with a question", asked.Status.State)
	}
	answer := func() *a2a.Message {
		return followUp(asked.ID, userData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	got := make([]*a2a.Task, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := answer()
			<-start
			res, err := clients[i%len(clients)].SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
			if err != nil {
				errs[i] = err
				return
			}
			got[i], _ = res.(*a2a.Task)
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("answer %d of %d: %v; want the task back", i+1, n, errs[i])
		} else if got[i] == nil || got[i].ID != asked.ID {
			t.Errorf("answer %d of %d: got %v, want task %s", i+1, n, got[i], asked.ID)
		}
	}
	final := waitState(t, ctx, clients[0], asked.ID, a2a.TaskStateCompleted)
	answers := 0
	for _, m := range final.History {
		if d, ok := dataPart(m.Parts); ok && m.Role == a2a.MessageRoleUser && d["costCentre"] == "CC-4410" {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("history holds %d answers, want exactly the winner's", answers)
	}
	late, err := clients[len(clients)-1].SendMessage(ctx, &a2a.SendMessageRequest{Message: answer()})
	if err != nil {
		t.Fatalf("late answer after completion: %v; want the completed task", err)
	}
	if lt, _ := late.(*a2a.Task); lt == nil || lt.Status.State != a2a.TaskStateCompleted {
		t.Errorf("late answer after completion got %v, want the completed task", late)
	}
}

func TestRaceLosersGetTheTaskOnOneNode(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	var clients []*a2aclient.Client
	for _, tr := range apitest.Transports {
		clients = append(clients, env.Client(t, "expense", tr))
	}
	for range 5 {
		raceLosersGetTheTask(t, clients, 6)
	}
}

func TestRaceLosersGetTheTaskAcrossNodes(t *testing.T) {
	nodes, _, _ := startNodes(t, 2)
	clients := nodeClients(t, nodes)
	for i := range 5 {
		raceLosersGetTheTask(t, []*a2aclient.Client{clients[i%2], clients[(i+1)%2]}, 6)
	}
}

// A message to a task that is working is refused, with an error that says
// when to send it again, and nothing of it is stored.
func TestMessageToABusyTaskIsRefusedAndNotStored(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		ctx := testCtx(t)
		c := env.Client(t, "script", tr)
		key := apitest.UniqueKey(t)
		task := sendTask(t, ctx, c, &a2a.SendMessageRequest{
			Message: userText("block " + key),
			Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
		})
		waitState(t, ctx, c, task.ID, a2a.TaskStateWorking)
		_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userText("are you done?"))})
		wantErr(t, "SendMessage(to a working task)", err, a2a.ErrUnsupportedOperation)
		if err != nil && !strings.Contains(err.Error(), "Send it again when the task asks") {
			t.Errorf("error %q does not say when to send the message again", err)
		}
		apitest.Release(key)
		final := waitState(t, ctx, c, task.ID, a2a.TaskStateCompleted)
		for _, m := range final.History {
			if strings.Contains(messageText(m), "are you done?") {
				t.Errorf("history holds the refused message: %q", messageText(m))
			}
		}
	})
}

// An answer's fields that the question did not ask for never reach the
// agent: the worked example, asked only for the cost centre, files what
// the request said.
func TestAnswerFieldsTheQuestionDidNotAskNeverReachTheAgent(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		ctx := testCtx(t)
		c := env.Client(t, "expense", tr)
		asked := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
		q, _, _ := question.FromMessage(asked.Status.Message)
		done := sendState(t, ctx, c, followUp(asked.ID, userData(map[string]any{
			"questionId": q.ID, "costCentre": "CC-4410",
			"amount": 0.01, "currency": "XXX", "vendor": "<B>XXX</B>", "date": "not-a-date",
		})), a2a.TaskStateCompleted)
		art, ok := artifactText(done, "expense")
		if !ok {
			t.Fatalf("no expense artifact in %v", done.Artifacts)
		}
		for _, bad := range []string{"0.01", "XXX", "not-a-date"} {
			if strings.Contains(art, bad) {
				t.Errorf("expense %s holds %q from a field the question did not ask for", art, bad)
			}
		}
		if !strings.Contains(art, "42.00 EUR") || !strings.Contains(art, "Taxi") {
			t.Errorf("expense %q does not hold the request's 42.00 EUR for Taxi", art)
		}
	})
}

// An internal failure (here the store's log table gone from under the
// server) is logged once with its cause, and the caller gets a plain
// internal error: no SQL, no file path, no store operation.
func TestInternalErrorsAreLoggedWithTheirCauseAndPlainOnTheWire(t *testing.T) {
	logs := &apitest.SyncBuffer{}
	env := apitest.Start(t, apitest.Options{Config: func(c *askpoint.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}})
	ctx := testCtx(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	asked := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)

	db, err := sql.Open("sqlite", "file:"+env.DBPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`ALTER TABLE task_log RENAME TO task_log_gone`); err != nil {
		t.Fatalf("break the store: %v", err)
	}
	_, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: asked.ID})
	wantErr(t, "GetTask(with the log table gone)", err, a2a.ErrInternalError)
	if err == nil {
		return
	}
	for _, leak := range []string{"task_log", "sqlite", "SQL", env.DBPath, "History", "no such table"} {
		if strings.Contains(err.Error(), leak) {
			t.Errorf("error on the wire %q holds %q", err, leak)
		}
	}
	if n := strings.Count(logs.String(), "no such table"); n != 1 {
		t.Errorf("the cause is logged %d times, want once; log:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), string(asked.ID)) {
		t.Errorf("the log line does not name the task %s; log:\n%s", asked.ID, logs.String())
	}
}

// A first message delivered again (same messageId, same content) lands
// where the first delivery did, as long as the caller has not acted on that
// task; the README says the same.
func TestRedeliveredFirstMessageLandsOnItsTaskUntilTheCallerActs(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	ctx := testCtx(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	first := userText(receipt)
	asked := sendState(t, ctx, c, first, a2a.TaskStateInputRequired)
	again := send(t, ctx, c, first)
	if again.ID != asked.ID {
		t.Fatalf("redelivery made task %s, want the first delivery's %s", again.ID, asked.ID)
	}
	q, _, _ := question.FromMessage(asked.Status.Message)
	sendState(t, ctx, c, followUp(asked.ID, userData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"})), a2a.TaskStateCompleted)
	after := send(t, ctx, c, first)
	if after.ID == asked.ID {
		t.Errorf("the same first message after the caller answered landed on the answered task %s; want a new task", asked.ID)
	}
}

func TestQuestionIDsNameTheirTask(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	ctx := testCtx(t)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	one := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
	two := sendState(t, ctx, c, userText(receipt+" "), a2a.TaskStateInputRequired)
	q1, _, _ := question.FromMessage(one.Status.Message)
	// Task two answered with task one's question ID: not a question of
	// task two, so it is a stale answer, refused as before.
	_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(two.ID, userData(map[string]any{"questionId": q1.ID, "costCentre": "CC-4410"}))})
	wantErr(t, "SendMessage(another task's question ID)", err, a2a.ErrInvalidParams)
	if errors.Is(err, a2a.ErrInvalidParams) && !strings.Contains(err.Error(), q1.ID) {
		t.Errorf("error %q does not name the question that was sent", err)
	}
}

// A reply is built from what the transition wrote instead of reading the
// task back; it must be what GetTask reads back, history included, with and
// without quick steps, on a first answer and after a re-ask.
func TestRepliesAreWhatGetTaskReadsBack(t *testing.T) {
	for _, store := range []string{"sqlite-quick", "sqlite", "postgres-quick", "postgres"} {
		quick := strings.HasSuffix(store, "-quick")
		opts := apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.DisableQuickSteps = !quick }}
		if strings.HasPrefix(store, "postgres") {
			opts.PostgresURL = dbtest.Schema(t)
		}
		env := apitest.Start(t, opts)
		eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
			ctx := testCtx(t)
			c := env.Client(t, "expense", tr)
			check := func(what string, got *a2a.Task) {
				t.Helper()
				want := getTask(t, ctx, c, got.ID)
				g, _ := json.Marshal(got)
				w, _ := json.Marshal(want)
				if string(g) != string(w) {
					t.Errorf("%s %s: the reply differs from GetTask:\nreply  %s\nGetTask %s", store, what, g, w)
				}
			}
			asked := sendState(t, ctx, c, userText(receipt), a2a.TaskStateInputRequired)
			check("ask", asked)
			reasked := sendState(t, ctx, c, followUp(asked.ID, userText("engineering")), a2a.TaskStateInputRequired)
			check("re-ask", reasked)
			q, _, _ := question.FromMessage(reasked.Status.Message)
			done := sendState(t, ctx, c, followUp(asked.ID, userData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"})), a2a.TaskStateCompleted)
			check("answer after a re-ask", done)
			if n := len(done.History); n != 6 {
				t.Errorf("%s: history of %d messages, want request, question, answer, question, answer, and the agent's closing message", store, n)
			}

			first := sendState(t, ctx, c, userText(receipt+" (2)"), a2a.TaskStateInputRequired)
			q1, _, _ := question.FromMessage(first.Status.Message)
			done1 := sendState(t, ctx, c, followUp(first.ID, userData(map[string]any{"questionId": q1.ID, "costCentre": "CC-4420"})), a2a.TaskStateCompleted)
			check("first answer", done1)
		})
	}
}
