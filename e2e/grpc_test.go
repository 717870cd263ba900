package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// Every test here talks the gRPC binding over a real connection on
// 127.0.0.1, with the a2a-go client (grpcdial.Dial, gRPC preferred, or
// the card narrowed to its gRPC interface).

const grpcReceipt = "File my taxi receipt from Tuesday, 42 euros"

// grpcClient is an a2a-go client for agent over gRPC only.
func grpcClient(t *testing.T, base, agent, token string) *a2aclient.Client {
	t.Helper()
	c, err := grpcdial.Dial(t.Context(), base+"/"+agent, client.DialOptions{Token: token, Preferred: []a2a.TransportProtocol{a2a.TransportProtocolGRPC}})
	if err != nil {
		t.Fatalf("dial %s over gRPC: %v", agent, err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func TestGRPCWorkedExample(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := grpcClient(t, env.URL, "expense", "")
	ctx := t.Context()

	task, err := crashSend(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(grpcReceipt)), false)
	if err != nil {
		t.Fatalf("send the receipt: %v", err)
	}
	q1 := crashWantQuestion(t, task, 1)
	if len(q1.Options) != 2 || q1.Options[0].Value != "CC-4410" || q1.Options[1].Value != "CC-4420" {
		t.Fatalf("question options = %+v, want CC-4410 and CC-4420", q1.Options)
	}

	task, err = crashSend(ctx, c, crashText(task.ID, "engineering"), false)
	if err != nil {
		t.Fatalf("answer engineering: %v", err)
	}
	q2 := crashWantQuestion(t, task, 2)
	if q2.ID == q1.ID {
		t.Fatalf("the re-ask kept question ID %s, want a new one", q1.ID)
	}
	if len(q2.Errors) == 0 || !strings.Contains(q2.Errors[0].Message, "expected one of CC-4410, CC-4420") {
		t.Fatalf("re-ask errors = %+v, want \"expected one of CC-4410, CC-4420\"", q2.Errors)
	}

	task, err = crashSend(ctx, c, crashAnswer(string(task.ID), q2.ID), false)
	if err != nil {
		t.Fatalf("data answer: %v", err)
	}
	crashWantExpense(t, task)
	full, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID})
	if err != nil {
		t.Fatalf("GetTask: %v", err)
	}
	// The request, the question, "engineering", the re-ask, the data
	// answer, the completion.
	crashWantRoles(t, full, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent)
	last2, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: task.ID, HistoryLength: grpcIntPtr(2)})
	if err != nil {
		t.Fatalf("GetTask(historyLength 2): %v", err)
	}
	if len(last2.History) != 2 || last2.History[1].ID != full.History[len(full.History)-1].ID {
		t.Fatalf("GetTask(historyLength 2) history has %d messages, want the last 2", len(last2.History))
	}
}

func TestGRPCStreamsFollowTheInputRequiredSetting(t *testing.T) {
	for _, mode := range []askpoint.InputRequiredStreams{askpoint.CloseStreams, askpoint.KeepStreamsOpen} {
		name := map[askpoint.InputRequiredStreams]string{askpoint.CloseStreams: "close", askpoint.KeepStreamsOpen: "open"}[mode]
		t.Run(name, func(t *testing.T) {
			env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.InputRequiredStreams = mode }})
			c := grpcClient(t, env.URL, "expense", "")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var states []a2a.TaskState
			answered := make(chan error, 1)
			for ev, err := range c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(grpcReceipt))}) {
				if err != nil {
					t.Fatalf("stream failed after %v: %v", states, err)
				}
				st, ok := grpcState(ev)
				if !ok {
					continue
				}
				states = append(states, st.State)
				if st.State == a2a.TaskStateInputRequired && mode == askpoint.KeepStreamsOpen {
					q, ok, _ := question.FromMessage(st.Message)
					if !ok {
						t.Fatalf("input-required without a question: %+v", st.Message)
					}
					// Kept open: the answer, sent on another call, arrives
					// on this stream.
					go func() {
						_, err := crashSend(ctx, c, crashAnswer(string(ev.TaskInfo().TaskID), q.ID), true)
						answered <- err
					}()
				}
			}
			last := states[len(states)-1]
			switch mode {
			case askpoint.CloseStreams:
				if last != a2a.TaskStateInputRequired {
					t.Fatalf("closing stream's states %v, want it to end at input-required", states)
				}
			case askpoint.KeepStreamsOpen:
				if err := <-answered; err != nil {
					t.Fatalf("answer: %v", err)
				}
				if last != a2a.TaskStateCompleted || !slices.Contains(states, a2a.TaskStateInputRequired) {
					t.Fatalf("open stream's states %v, want input-required then completed on one stream", states)
				}
			}
		})
	}
}

func grpcIntPtr(n int) *int { return &n }

func grpcState(ev a2a.Event) (a2a.TaskStatus, bool) {
	switch v := ev.(type) {
	case *a2a.Task:
		return v.Status, true
	case *a2a.TaskStatusUpdateEvent:
		return v.Status, true
	}
	return a2a.TaskStatus{}, false
}

// TestGRPCResubscribeAfterServerRestart runs the binary: a subscription to
// a paused task ends cleanly (UNAVAILABLE, saying to subscribe again) when
// the server stops on SIGTERM, the process exits at once, and after a
// restart on the same database a new subscription starts with the paused
// task and sees the answer complete it.
func TestGRPCResubscribeAfterServerRestart(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "askpoint.db")
	srv := startCrashServer(t, bin, db)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := grpcClient(t, srv.url, "expense", "")
	task, err := crashSend(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(grpcReceipt)), false)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	q := crashWantQuestion(t, task, 1)

	first := make(chan a2a.Event, 1)
	ended := make(chan error, 1)
	go func() {
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				ended <- err
				return
			}
			select {
			case first <- ev:
			default:
			}
		}
		ended <- nil
	}()
	select {
	case ev := <-first:
		if st, ok := grpcState(ev); !ok || st.State != a2a.TaskStateInputRequired {
			t.Fatalf("first event %T, want the paused task", ev)
		}
	case err := <-ended:
		t.Fatalf("subscription ended before its first event: %v", err)
	}
	stopped := time.Now()
	if err := syscall.Kill(srv.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ended:
		var ae *a2a.Error
		if err == nil || errors.As(err, &ae) || !strings.Contains(err.Error(), "subscribe to the task again") {
			t.Fatalf("stream ended with %v, want a transport error saying to subscribe again", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatalf("the subscription was still open 8s after SIGTERM")
	}
	select {
	case <-srv.done:
	case <-time.After(8 * time.Second):
		t.Fatalf("askpoint did not exit within 8s of SIGTERM")
	}
	if !srv.cmd.ProcessState.Success() || time.Since(stopped) > 8*time.Second {
		t.Fatalf("askpoint exited with %v after %v, want 0 at once:\n%s", srv.cmd.ProcessState, time.Since(stopped), srv.log)
	}

	again := startCrashServer(t, bin, db)
	c2 := grpcClient(t, again.url, "expense", "")
	events := make(chan a2a.Event, 64)
	var err2 error
	go func() {
		defer func() { ended <- err2 }()
		for ev, err := range c2.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: task.ID}) {
			if err != nil {
				err2 = err
				return
			}
			events <- ev
		}
	}()
	select {
	case ev := <-events:
		if st, ok := grpcState(ev); !ok || st.State != a2a.TaskStateInputRequired {
			t.Fatalf("resubscribed: first event %T, want the paused task", ev)
		}
	case err := <-ended:
		t.Fatalf("resubscription ended at once: %v", err)
	}
	if _, err := crashSend(ctx, c2, crashAnswer(string(task.ID), q.ID), true); err != nil {
		t.Fatalf("answer after the restart: %v", err)
	}
	if err := <-ended; err != nil {
		t.Fatalf("resubscription ended with %v, want a clean end at completion", err)
	}
	close(events)
	var last a2a.TaskStatus
	for ev := range events {
		if st, ok := grpcState(ev); ok {
			last = st
		}
	}
	if last.State != a2a.TaskStateCompleted {
		t.Fatalf("resubscription's last state = %v, want completed", last.State)
	}
}

// TestGRPCRacingAnswersHaveOneWinner sends eight valid answers to one
// question at once over gRPC: one resumes the task; every other gets the
// task back, or, once the task is completed, UnsupportedOperation (which
// arrives as UNIMPLEMENTED and must still read as that A2A error); never
// another error.
func TestGRPCRacingAnswersHaveOneWinner(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := grpcClient(t, env.URL, "expense", "")
	ctx := t.Context()
	for trial := range 5 {
		task, err := crashSend(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(grpcReceipt)), false)
		if err != nil {
			t.Fatalf("trial %d: send: %v", trial, err)
		}
		q := crashWantQuestion(t, task, 1)
		const n = 8
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make([]*a2a.Task, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				results[i], errs[i] = crashSend(ctx, c, crashAnswer(string(task.ID), q.ID), false)
			}()
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, a2a.ErrUnsupportedOperation) {
				t.Fatalf("trial %d: answer %d failed: %v", trial, i, err)
			}
		}
		done := crashGet(ctx, t, c, string(task.ID))
		crashWantExpense(t, done)
		answers := 0
		for _, m := range done.History {
			if m.Role == a2a.MessageRoleUser {
				answers++
			}
		}
		if answers != 2 {
			t.Fatalf("trial %d: history holds %d user messages, want the request and one winning answer", trial, answers)
		}
	}
}

// TestGRPCStrangersGetNotFound: with tokens required, another caller's
// task is NOT_FOUND on every call (with ErrorInfo TASK_NOT_FOUND), and a
// call without a known token is UNAUTHENTICATED.
func TestGRPCStrangersGetNotFound(t *testing.T) {
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-9876543210ab"
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{aliceToken: "alice", bobToken: "bob"}
	}})
	alice := grpcClient(t, env.URL, "expense", aliceToken)
	ctx := t.Context()
	task, err := crashSend(ctx, alice, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(grpcReceipt)), false)
	if err != nil {
		t.Fatalf("alice sends: %v", err)
	}
	crashWantQuestion(t, task, 1)

	conn, err := grpc.NewClient(strings.TrimPrefix(env.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	raw := a2apb.NewA2AServiceClient(conn)
	as := func(token string) context.Context {
		md := metadata.Pairs("a2a-version", "1.0")
		if token != "" {
			md.Append("authorization", "Bearer "+token)
		}
		return metadata.NewOutgoingContext(ctx, md)
	}
	id := string(task.ID)
	bob := as(bobToken)
	calls := map[string]func() error{
		"GetTask": func() error {
			_, err := raw.GetTask(bob, &a2apb.GetTaskRequest{Tenant: "expense", Id: id})
			return err
		},
		"CancelTask": func() error {
			_, err := raw.CancelTask(bob, &a2apb.CancelTaskRequest{Tenant: "expense", Id: id})
			return err
		},
		"SendMessage (answer)": func() error {
			_, err := raw.SendMessage(bob, &a2apb.SendMessageRequest{Tenant: "expense", Message: &a2apb.Message{
				MessageId: "bob-answer", TaskId: id, Role: a2apb.Role_ROLE_USER,
				Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "CC-4410"}}},
			}})
			return err
		},
		"SubscribeToTask": func() error {
			s, err := raw.SubscribeToTask(bob, &a2apb.SubscribeToTaskRequest{Tenant: "expense", Id: id})
			if err != nil {
				return err
			}
			_, err = s.Recv()
			return err
		},
	}
	for name, call := range calls {
		err := call()
		if st := status.Convert(err); st.Code() != codes.NotFound || grpcReason(st) != "TASK_NOT_FOUND" {
			t.Errorf("bob's %s on alice's task = %v (reason %q), want NOT_FOUND with ErrorInfo TASK_NOT_FOUND", name, err, grpcReason(st))
		}
	}
	for _, token := range []string{"", "not-a-token-anyone-was-given"} {
		_, err := raw.GetTask(as(token), &a2apb.GetTaskRequest{Tenant: "expense", Id: id})
		if st := status.Convert(err); st.Code() != codes.Unauthenticated || grpcReason(st) != "UNAUTHENTICATED" {
			t.Errorf("GetTask with token %q = %v, want UNAUTHENTICATED", token, err)
		}
	}
	// Alice's task is as she left it.
	if got := crashGet(ctx, t, alice, id); got.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("alice's task after the strangers is %v, want still input-required", got.Status.State)
	}
}

func grpcReason(st *status.Status) string {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == a2a.ProtocolDomain {
			return ei.GetReason()
		}
	}
	return ""
}

// TestGRPCRelayReachesAGRPCOnlySubAgent puts the finance assistant in front
// of an expense agent whose card offers gRPC and nothing else: the
// assistant's caller (over gRPC too) gets the relayed question and its
// answer files the expense.
func TestGRPCRelayReachesAGRPCOnlySubAgent(t *testing.T) {
	sub := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.AllowPrivateWebhooks = true }})
	card, err := sub.Server.Card("expense", sub.URL)
	if err != nil {
		t.Fatal(err)
	}
	var only []*a2a.AgentInterface
	for _, iface := range card.SupportedInterfaces {
		if iface.ProtocolBinding == a2a.TransportProtocolGRPC {
			only = append(only, iface)
		}
	}
	card.SupportedInterfaces = only
	cardLn, cardURL := apitest.Listen(t, "")
	cardSrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/expense/.well-known/agent-card.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(card)
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = cardSrv.Serve(cardLn) }()
	t.Cleanup(func() { _ = cardSrv.Close() })

	ln, base := apitest.Listen(t, "")
	assistant, err := expense.Assistant(expense.AssistantConfig{ExpenseURL: cardURL + "/expense", SelfURL: base + "/assistant"})
	if err != nil {
		t.Fatal(err)
	}
	top := apitest.Start(t, apitest.Options{Quiet: true, Listener: ln, Agents: []askpoint.AgentSpec{{Name: "assistant", Agent: assistant, Card: expense.AssistantCard()}}})
	c := grpcClient(t, top.URL, "assistant", "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	task, err := crashSend(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(grpcReceipt)), false)
	if err != nil {
		t.Fatalf("send to the assistant: %v", err)
	}
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("assistant's task is %v (%s), want input-required with the relayed question", task.Status.State, crashStatusText(task))
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if !ok || err != nil || len(q.Options) != 2 {
		t.Fatalf("relayed question = %+v (ok=%v, err=%v), want the two cost centres", q, ok, err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, crashData(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	m.TaskID = task.ID
	task, err = crashSend(ctx, c, m, false)
	if err != nil {
		t.Fatalf("answer the assistant: %v", err)
	}
	for task.Status.State != a2a.TaskStateCompleted {
		if task.Status.State.Terminal() {
			t.Fatalf("assistant's task ended %v (%s), want completed", task.Status.State, crashStatusText(task))
		}
		task = crashWaitState(ctx, t, c, string(task.ID), a2a.TaskStateCompleted)
	}
	if got := crashPartsText(task.Artifacts[0].Parts); !strings.Contains(got, "CC-4410") {
		t.Fatalf("assistant's artifact = %q, want the expense charged to CC-4410", got)
	}
	// The expense agent has the sub-task, made over gRPC (its card offered
	// nothing else).
	list, ok := sub.Server.RequestHandler("expense")
	if !ok {
		t.Fatal("no expense handler")
	}
	res, lerr := list.ListTasks(ctx, &a2a.ListTasksRequest{})
	if lerr != nil || len(res.Tasks) != 1 || res.Tasks[0].Status.State != a2a.TaskStateCompleted {
		t.Fatalf("expense agent's tasks = %+v (%v), want the one completed sub-task", res, lerr)
	}
}
