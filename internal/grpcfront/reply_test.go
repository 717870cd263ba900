package grpcfront_test

import (
	"context"
	"net"
	"testing"

	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
)

// sdkGRPC serves the SDK's own gRPC transport (a2agrpc) over agent's
// request handler on a listener of its own, and returns a client of it.
func sdkGRPC(t *testing.T, env *apitest.Env, agent string) a2apb.A2AServiceClient {
	t.Helper()
	h, ok := env.Server.RequestHandler(agent)
	if !ok {
		t.Fatalf("no agent %s", agent)
	}
	gs := grpc.NewServer()
	a2agrpc.NewHandler(h).RegisterWith(gs)
	return serveGRPC(t, gs)
}

// serveGRPC serves gs on a listener of its own on 127.0.0.1 until the
// test ends, and returns a client of it.
func serveGRPC(t *testing.T, gs *grpc.Server) a2apb.A2AServiceClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { _ = gs.Serve(ln); close(served) }()
	t.Cleanup(func() { gs.Stop(); <-served })
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// sameReply fails t unless the front's reply and the SDK's to the same
// call are the same message, field by field, with the same trailer.
func sameReply[M proto.Message](t *testing.T, what string, call func(a2apb.A2AServiceClient, context.Context, ...grpc.CallOption) (M, error), front, sdk a2apb.A2AServiceClient) M {
	t.Helper()
	ctx := v1(t.Context())
	var ft, st metadata.MD
	f, err := call(front, ctx, grpc.Trailer(&ft))
	if err != nil {
		t.Fatalf("%s on the front: %v", what, err)
	}
	s, err := call(sdk, ctx, grpc.Trailer(&st))
	if err != nil {
		t.Fatalf("%s on the SDK's transport: %v", what, err)
	}
	if !proto.Equal(f, s) {
		t.Errorf("%s:\nfront %s\n  sdk %s", what, prototext.Format(f), prototext.Format(s))
	}
	if len(ft.Get("a2a-extensions")) != len(st.Get("a2a-extensions")) {
		t.Errorf("%s: trailer %v, the SDK's %v", what, ft, st)
	}
	return f
}

// TestGRPCRepliesAreTheSDKTransportsMessages: what the front sends for the
// methods it answers from the task's JSON (SendMessage, GetTask,
// CancelTask) is what the SDK's gRPC transport sends for the same call over
// the same handler: the question with its data part, the completed task
// with its artifact, historyLength unset, 0 and 1, a canceled task, a
// message result. A first SendMessage's reply (written from the bytes the
// call encoded) is compared with the SDK's reply to the same message sent
// again, which is the task as it then is.
func TestGRPCRepliesAreTheSDKTransportsMessages(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{apitest.ReplierSpec()}})
	front, sdk := raw(t, env), sdkGRPC(t, env, "expense")
	send := func(tenant string, m *a2apb.Message, hl *int32) func(c a2apb.A2AServiceClient, ctx context.Context, o ...grpc.CallOption) (*a2apb.SendMessageResponse, error) {
		return func(c a2apb.A2AServiceClient, ctx context.Context, o ...grpc.CallOption) (*a2apb.SendMessageResponse, error) {
			req := &a2apb.SendMessageRequest{Message: m}
			if hl != nil {
				req.Configuration = &a2apb.SendMessageConfiguration{HistoryLength: hl}
			}
			if c == front {
				req.Tenant = tenant
			}
			return c.SendMessage(ctx, req, o...)
		}
	}
	get := func(id string, hl *int32) func(c a2apb.A2AServiceClient, ctx context.Context, o ...grpc.CallOption) (*a2apb.Task, error) {
		return func(c a2apb.A2AServiceClient, ctx context.Context, o ...grpc.CallOption) (*a2apb.Task, error) {
			return c.GetTask(ctx, &a2apb.GetTaskRequest{Id: id, HistoryLength: hl}, o...)
		}
	}
	zero, one := int32(0), int32(1)
	receipt := text("m-ask", "File my taxi receipt from Tuesday, 42 euros")
	asked := sameReply(t, "SendMessage", send("expense", receipt, nil), front, sdk).GetTask()
	if asked.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_INPUT_REQUIRED || len(asked.GetStatus().GetMessage().GetParts()) != 2 {
		t.Fatalf("SendMessage = %s; want input-required with the question's text and data parts", prototext.Format(asked))
	}
	sameReply(t, "SendMessage historyLength 0", send("expense", text("m-ask-0", "File my taxi receipt from Tuesday, 42 euros"), &zero), front, sdk)
	sameReply(t, "SendMessage historyLength 1", send("expense", text("m-ask-1", "File my taxi receipt from Tuesday, 42 euros"), &one), front, sdk)
	for _, hl := range []*int32{nil, &zero, &one} {
		sameReply(t, "GetTask", get(asked.GetId(), hl), front, sdk)
	}
	data, err := structpb.NewStruct(map[string]any{"costCentre": "CC-4410"})
	if err != nil {
		t.Fatal(err)
	}
	answer := &a2apb.Message{MessageId: "m-answer", TaskId: asked.GetId(), Role: a2apb.Role_ROLE_USER,
		Parts: []*a2apb.Part{{Content: &a2apb.Part_Data{Data: structpb.NewStructValue(data)}, MediaType: "application/json"}}}
	done := sameReply(t, "SendMessage answer", send("expense", answer, nil), front, sdk).GetTask()
	if done.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_COMPLETED || len(done.GetArtifacts()) != 1 {
		t.Fatalf("the answer's reply = %s; want completed with the expense artifact", prototext.Format(done))
	}
	sameReply(t, "GetTask completed", get(asked.GetId(), nil), front, sdk)

	// CancelTask: the front's reply against the SDK's GetTask of the
	// canceled task (a second CancelTask finds it canceled).
	toCancel := sameReply(t, "SendMessage to cancel", send("expense", text("m-cancel", "File my taxi receipt from Tuesday, 42 euros"), nil), front, sdk).GetTask()
	canceled, err := front.CancelTask(v1(t.Context()), &a2apb.CancelTaskRequest{Id: toCancel.GetId()})
	if err != nil {
		t.Fatalf("CancelTask: %v", err)
	}
	if got, err := sdk.GetTask(v1(t.Context()), &a2apb.GetTaskRequest{Id: toCancel.GetId()}); err != nil || !proto.Equal(canceled, got) {
		t.Errorf("CancelTask:\nfront %s\n  sdk %s (GetTask), %v", prototext.Format(canceled), prototext.Format(got), err)
	}
	if canceled.GetStatus().GetState() != a2apb.TaskState_TASK_STATE_CANCELED {
		t.Errorf("CancelTask = %s; want canceled", prototext.Format(canceled))
	}

	sdkReplier := sdkGRPC(t, env, "replier")
	msg := sameReply(t, "SendMessage with a message result", send("replier", text("m-hello", "hello"), nil), front, sdkReplier).GetMessage()
	if msg.GetMessageId() != "reply-m-hello" {
		t.Errorf("the replier's reply = %s; want its message", prototext.Format(msg))
	}
}
