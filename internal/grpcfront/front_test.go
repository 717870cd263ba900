package grpcfront_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/auth"
)

// raw is a plain gRPC client of the generated stubs, to see the statuses
// exactly as they travel.
func raw(t *testing.T, env *apitest.Env) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(strings.TrimPrefix(env.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

func v1(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "a2a-version", "1.0")
}

func text(id, s string) *a2apb.Message {
	return &a2apb.Message{MessageId: id, Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: s}}}}
}

func wantStatus(t *testing.T, call string, err error, code codes.Code, reason, says string) {
	t.Helper()
	st := status.Convert(err)
	got := ""
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == a2a.ProtocolDomain {
			got = ei.GetReason()
		}
	}
	if st.Code() != code || got != reason || !strings.Contains(st.Message(), says) {
		t.Errorf("%s = %v %q (ErrorInfo %q); want %v %q saying %q", call, st.Code(), st.Message(), got, code, reason, says)
	}
}

func TestVersionIsRequiredInTheMetadata(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := raw(t, env)
	_, err := c.SendMessage(t.Context(), &a2apb.SendMessageRequest{Message: text("m1", "complete")})
	wantStatus(t, "SendMessage without a2a-version", err, codes.Unimplemented, "VERSION_NOT_SUPPORTED", "send the metadata a2a-version: 1.0")
	ctx := metadata.AppendToOutgoingContext(t.Context(), "a2a-version", "0.3")
	_, err = c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "x"})
	wantStatus(t, "GetTask with a2a-version 0.3", err, codes.Unimplemented, "VERSION_NOT_SUPPORTED", `"0.3" is not supported`)
	s, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: "x"})
	if err == nil {
		_, err = s.Recv()
	}
	wantStatus(t, "SubscribeToTask with a2a-version 0.3", err, codes.Unimplemented, "VERSION_NOT_SUPPORTED", "a2a-version: 1.0")
}

func TestTenantNamesTheAgentAndNoTenantIsTheFirst(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := raw(t, env)
	ctx := v1(t.Context())
	res, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m1", "complete")})
	if err != nil || res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("script agent via tenant: %v, %v; want completed", res, err)
	}
	id := res.GetTask().GetId()
	// The task is the script agent's: another tenant does not have it, the
	// same one does, and so do the HTTP bindings at /script.
	_, err = c.GetTask(ctx, &a2apb.GetTaskRequest{Tenant: "expense", Id: id})
	wantStatus(t, "GetTask of the script agent's task under tenant expense", err, codes.NotFound, "TASK_NOT_FOUND", id)
	if _, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Tenant: "script", Id: id}); err != nil {
		t.Errorf("GetTask under tenant script = %v", err)
	}
	if _, err := env.Client(t, "script", a2a.TransportProtocolJSONRPC).GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(id)}); err != nil {
		t.Errorf("JSON-RPC GetTask at /script of the task made over gRPC = %v", err)
	}
	// No tenant: the first agent (expense) asks its question.
	res, err = c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: text("m2", "File my taxi receipt from Tuesday, 42 euros")})
	if err != nil || res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_INPUT_REQUIRED {
		t.Fatalf("no tenant: %v, %v; want the expense agent's question", res, err)
	}
	_, err = c.GetTask(ctx, &a2apb.GetTaskRequest{Tenant: "payroll", Id: id})
	wantStatus(t, "GetTask under an unknown tenant", err, codes.InvalidArgument, "INVALID_PARAMS", `tenant "payroll" names no agent here: use one of expense, script`)
}

func TestMalformedMessagesAreRefusedBeforeAnythingIsStored(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.MaxParts = 2; c.MaxRequestBytes = 4096 }})
	c := raw(t, env)
	ctx := v1(t.Context())
	part := &a2apb.Part{Content: &a2apb.Part_Text{Text: "x"}}
	cases := []struct {
		name string
		msg  *a2apb.Message
		code codes.Code
		says string
	}{
		{"no message", nil, codes.InvalidArgument, "message is required"},
		{"no messageId", &a2apb.Message{Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{part}}, codes.InvalidArgument, "message.message_id is required"},
		{"no parts", &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER}, codes.InvalidArgument, "message.parts must hold at least one part"},
		{"part without content", &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{part, {}}}, codes.InvalidArgument, "message.parts[1] has no content"},
		{"too many parts", &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{part, part, part}}, codes.InvalidArgument, "holds 3 parts; the server takes at most 2"},
	}
	for _, tc := range cases {
		_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: tc.msg})
		wantStatus(t, "SendMessage with "+tc.name, err, tc.code, "INVALID_PARAMS", tc.says)
		s, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: tc.msg})
		if err == nil {
			_, err = s.Recv()
		}
		wantStatus(t, "SendStreamingMessage with "+tc.name, err, tc.code, "INVALID_PARAMS", tc.says)
	}
	_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: text("big", strings.Repeat("x", 8192))})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("SendMessage over MaxRequestBytes = %v, want RESOURCE_EXHAUSTED", err)
	}
	_, err = c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: text("m", "complete"), Configuration: &a2apb.SendMessageConfiguration{HistoryLength: new(int32(-1))}})
	wantStatus(t, "SendMessage with history_length -1", err, codes.InvalidArgument, "INVALID_PARAMS", "history_length must be 0 or more, got -1")
	list, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{})
	if err != nil || len(list.GetTasks()) != 0 {
		t.Errorf("tasks after the refusals = %d (%v), want none", len(list.GetTasks()), err)
	}
}

func TestStreamsCountAgainstTheLimitSharedWithHTTP(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.MaxStreamsPerPrincipal = 1 }})
	c := raw(t, env)
	ctx, cancel := context.WithCancel(v1(t.Context()))
	defer cancel()
	res, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m1", "ask")})
	if err != nil {
		t.Fatal(err)
	}
	id := res.GetTask().GetId()
	s, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Tenant: "script", Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatalf("first subscription: %v", err)
	}
	s2, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Tenant: "script", Id: id})
	if err == nil {
		_, err = s2.Recv()
	}
	wantStatus(t, "second gRPC subscription over a limit of 1", err, codes.ResourceExhausted, "INVALID_REQUEST", "open streams")
	// The HTTP bindings count the same slots.
	hc := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	for _, err := range hc.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(id)}) {
		if err == nil || !strings.Contains(err.Error(), "open streams") && !strings.Contains(err.Error(), "429") {
			t.Errorf("JSON-RPC subscription while the gRPC one is open = %v, want the limit", err)
		}
		break
	}
}

func TestSubscribeToAFinishedTaskIsUnsupportedOperation(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := raw(t, env)
	ctx := v1(t.Context())
	res, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m1", "complete")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Tenant: "script", Id: res.GetTask().GetId()})
	if err == nil {
		_, err = s.Recv()
	}
	wantStatus(t, "SubscribeToTask on a completed task", err, codes.Unimplemented, "UNSUPPORTED_OPERATION", "already completed")
	// askpoint's client reads the specification's code as the A2A error.
	ac := env.Client(t, "script", a2a.TransportProtocolGRPC)
	for _, err := range ac.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: a2a.TaskID(res.GetTask().GetId())}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Errorf("a2a-go client's SubscribeToTask on a completed task = %v, want ErrUnsupportedOperation", err)
		}
		break
	}
}

func TestPushConfigurationsOverGRPC(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.AllowPrivateWebhooks = true }})
	c := env.Client(t, "script", a2a.TransportProtocolGRPC)
	ctx := t.Context()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("ask"))})
	if err != nil {
		t.Fatal(err)
	}
	id := res.(*a2a.Task).ID
	made, err := c.CreateTaskPushConfig(ctx, &a2a.PushConfig{TaskID: id, URL: "http://127.0.0.1:1/hook", Token: "t"})
	if err != nil || made.ID == "" {
		t.Fatalf("CreateTaskPushConfig = %+v, %v", made, err)
	}
	got, err := c.GetTaskPushConfig(ctx, &a2a.GetTaskPushConfigRequest{TaskID: id, ID: made.ID})
	if err != nil || got.URL != "http://127.0.0.1:1/hook" {
		t.Fatalf("GetTaskPushConfig = %+v, %v", got, err)
	}
	list, err := c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: id})
	if err != nil || len(list) != 1 {
		t.Fatalf("ListTaskPushConfigs = %+v, %v; want 1", list, err)
	}
	if err := c.DeleteTaskPushConfig(ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: id, ID: made.ID}); err != nil {
		t.Fatalf("DeleteTaskPushConfig = %v", err)
	}
	list, err = c.ListTaskPushConfigs(ctx, &a2a.ListTaskPushConfigRequest{TaskID: id})
	if err != nil || len(list) != 0 {
		t.Fatalf("ListTaskPushConfigs after delete = %+v, %v; want none", list, err)
	}
}

func TestStopEndsOpenStreamsSayingToSubscribeAgain(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := raw(t, env)
	ctx := v1(t.Context())
	res, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m1", "ask")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Tenant: "script", Id: res.GetTask().GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- env.Shutdown() }()
	_, err = s.Recv()
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "subscribe to the task again") {
		t.Fatalf("open stream at Stop = %v, want UNAVAILABLE saying to subscribe again", err)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop = %v, want a graceful stop within its deadline", err)
	}
}

func TestHTTPStillServedOnTheSharedPort(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	resp, err := http.Get(env.AgentURL("expense") + "/.well-known/agent-card.json")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card over HTTP/1.1 on the shared port: %v %v", resp, err)
	}
	resp.Body.Close()
	// A request shorter than the HTTP/2 preface is answered, not held.
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprint(conn, "GET / HTTP/1.0\r\n\r\n")
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) || !strings.HasPrefix(line, "HTTP/1.") {
		t.Fatalf("short HTTP/1.0 request: %q, %v; want an HTTP answer", line, err)
	}
}

// An interceptor given to Server.GRPC sees a unary call only once the
// front has admitted it, on the methods the front answers and on
// a2agrpc's: a call without a valid token or without a2a-version never
// reaches it, an admitted one reaches it with its caller named and the
// tenant taken, and what it returns is what the caller gets.
func TestExtraInterceptorsSeeOnlyAdmittedCalls(t *testing.T) {
	const token = "alice-token-0123456789"
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.Tokens = map[string]string{token: "alice"} }})
	type seen struct{ method, principal, tenant string }
	calls := make(chan seen, 16)
	gs, err := env.Server.GRPC(grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
		tenant := ""
		if r, ok := req.(interface{ GetTenant() string }); ok {
			tenant = r.GetTenant()
		}
		calls <- seen{info.FullMethod, auth.Principal(ctx), tenant}
		return next(ctx, req)
	}))
	if err != nil {
		t.Fatal(err)
	}
	c := serveGRPC(t, gs)

	// Refused: no token, a wrong one, no version; on a method the front
	// answers and on one of a2agrpc's.
	noVersion := metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
	wrong := metadata.AppendToOutgoingContext(v1(t.Context()), "authorization", "Bearer not-alice-token-000000")
	_, err = c.SendMessage(v1(t.Context()), &a2apb.SendMessageRequest{Message: text("m1", "complete")})
	wantStatus(t, "SendMessage without a token", err, codes.Unauthenticated, "UNAUTHENTICATED", "requires a bearer token")
	_, err = c.ListTasks(wrong, &a2apb.ListTasksRequest{})
	wantStatus(t, "ListTasks with a wrong token", err, codes.Unauthenticated, "UNAUTHENTICATED", "not one this server knows")
	_, err = c.GetTask(noVersion, &a2apb.GetTaskRequest{Id: "x"})
	wantStatus(t, "GetTask without a2a-version", err, codes.Unimplemented, "VERSION_NOT_SUPPORTED", "a2a-version")

	// Admitted: the interceptor sees each, after the front.
	ctx := metadata.AppendToOutgoingContext(v1(t.Context()), "authorization", "Bearer "+token)
	res, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m2", "complete")})
	if err != nil || res.GetTask().GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED {
		t.Fatalf("SendMessage = %v, %v; want completed", res, err)
	}
	if _, err := c.ListTasks(ctx, &a2apb.ListTasksRequest{Tenant: "script"}); err != nil {
		t.Fatalf("ListTasks = %v", err)
	}
	want := []seen{
		{a2apb.A2AService_SendMessage_FullMethodName, "alice", ""},
		{a2apb.A2AService_ListTasks_FullMethodName, "alice", ""},
	}
	for _, w := range want {
		if got := <-calls; got != w {
			t.Errorf("the interceptor saw %+v, want %+v", got, w)
		}
	}
	select {
	case got := <-calls:
		t.Errorf("the interceptor also saw %+v", got)
	default:
	}
}
