package grpcfront

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1/pbconv"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/askpoint/askpoint/internal/engine"
)

// The front answers SendMessage, GetTask and CancelTask itself, as the
// SDK's gRPC transport (a2agrpc) does, step for step: the request
// converted by pbconv, the call context made from the metadata, the
// handler called, the activated extensions in the trailer, the SDK's
// words for a request or reply it cannot convert. Only the reply is
// written differently: from the task's JSON (engine.WriteTaskJSON, with
// the pieces the call encoded for its log entries as they are: the bytes
// the JSON-RPC front writes), turned into protobuf wire bytes by wire.go
// and handed to gRPC as they are by the front's codec. A reply that
// reading cannot write goes out as the SDK makes it. The other methods are
// a2agrpc's. See docs/decisions/0170-grpc-replies-from-stored-bytes.md.

// service is the A2AService the front registers: a2agrpc's Handler over
// the router, with the three methods above answered here.
type service struct {
	*a2agrpc.Handler
	r router
}

// serviceDesc is a2apb's service description with the three methods
// handled by s, the service registered with it, and every unary method
// admitted by f before the server's interceptors are called.
func serviceDesc(f *Front, s *service) *grpc.ServiceDesc {
	desc := a2apb.A2AService_ServiceDesc
	desc.Methods = append([]grpc.MethodDesc(nil), desc.Methods...)
	for i, m := range desc.Methods {
		switch m.MethodName {
		case "SendMessage":
			desc.Methods[i].Handler = unary(f, s, a2apb.A2AService_SendMessage_FullMethodName, (*service).sendMessage)
		case "GetTask":
			desc.Methods[i].Handler = unary(f, s, a2apb.A2AService_GetTask_FullMethodName, (*service).getTask)
		case "CancelTask":
			desc.Methods[i].Handler = unary(f, s, a2apb.A2AService_CancelTask_FullMethodName, (*service).cancelTask)
		default:
			desc.Methods[i].Handler = f.admitted(m.Handler)
		}
	}
	return &desc
}

// unary is a method handler as protoc-gen-go-grpc writes them, calling fn
// on s, whose reply may be a *wireReply, with the request admitted by f
// before the interceptors. The handler the interceptors are given is made
// once, not per call.
func unary[Req any](f *Front, s *service, method string, fn func(*service, context.Context, *Req) (any, error)) grpc.MethodHandler {
	handler := func(ctx context.Context, req any) (any, error) { return fn(s, ctx, req.(*Req)) }
	// The server grpc-go hands the method is s, which is registered with
	// the description: the info the interceptors get is the same for every
	// call.
	info := &grpc.UnaryServerInfo{Server: s, FullMethod: method}
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(Req)
		if err := dec(in); err != nil {
			return nil, err
		}
		ctx, err := f.admitUnary(ctx, in)
		if err != nil {
			return nil, err
		}
		if interceptor == nil {
			return fn(s, ctx, in)
		}
		if srv != any(s) {
			return interceptor(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: method}, handler)
		}
		return interceptor(ctx, in, info, handler)
	}
}

func (s *service) sendMessage(ctx context.Context, pbReq *a2apb.SendMessageRequest) (any, error) {
	req, err := pbconv.FromProtoSendMessageRequest(pbReq)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "failed to convert request: %v", err)
	}
	ctx, callCtx := withCallContext(ctx)
	ctx, rb := engine.WithReplyBytes(ctx)
	res, err := s.r.SendMessage(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := setTrailer(ctx, callCtx); err != nil {
		return nil, err
	}
	switch x := res.(type) {
	case *a2a.Task:
		if x != nil {
			if r := writeReply(replySentTask, func(b *bytes.Buffer) error { return engine.WriteTaskJSON(b, nil, x, rb, nil) }); r != nil {
				return r, nil
			}
		}
	case *a2a.Message:
		if x != nil {
			if r := writeReply(replySentMessage, func(b *bytes.Buffer) error { return engine.WriteWrappedJSON(b, nil, x, nil) }); r != nil {
				return r, nil
			}
		}
	}
	pbRes, err := pbconv.ToProtoSendMessageResponse(res)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "failed to convert response: %v", err)
	}
	return pbRes, nil
}

func (s *service) getTask(ctx context.Context, pbReq *a2apb.GetTaskRequest) (any, error) {
	req, err := pbconv.FromProtoGetTaskRequest(pbReq)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "failed to convert request: %v", err)
	}
	ctx, callCtx := withCallContext(ctx)
	task, err := s.r.GetTask(ctx, req)
	if err != nil {
		return nil, err
	}
	if err := setTrailer(ctx, callCtx); err != nil {
		return nil, err
	}
	return taskReply(task)
}

func (s *service) cancelTask(ctx context.Context, pbReq *a2apb.CancelTaskRequest) (any, error) {
	// As a2agrpc reads it: the ID alone.
	ctx, callCtx := withCallContext(ctx)
	task, err := s.r.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(pbReq.GetId())})
	if err != nil {
		return nil, err
	}
	if err := setTrailer(ctx, callCtx); err != nil {
		return nil, err
	}
	return taskReply(task)
}

// taskReply is the Task reply of GetTask and CancelTask.
func taskReply(task *a2a.Task) (any, error) {
	if task != nil {
		if r := writeReply(replyTask, func(b *bytes.Buffer) error { return engine.WriteTaskJSON(b, nil, task, nil, nil) }); r != nil {
			return r, nil
		}
	}
	pbTask, err := pbconv.ToProtoTask(task)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "failed to convert task: %v", err)
	}
	return pbTask, nil
}

// withCallContext is a2agrpc's: the call context with the call's metadata
// as its service parameters (NewServiceParams copies the metadata, its
// keys in lower case, as a2agrpc's copy from FromIncomingContext was).
func withCallContext(ctx context.Context) (context.Context, *a2asrv.CallContext) {
	var params *a2asrv.ServiceParams
	if md, ok := incoming(ctx); ok {
		params = a2asrv.NewServiceParams(md)
	}
	return a2asrv.NewCallContext(ctx, params)
}

// setTrailer sends the extensions the call activated, as a2agrpc does (its
// empty metadata when there are none sends nothing: grpc.SetTrailer
// ignores empty metadata).
func setTrailer(ctx context.Context, callCtx *a2asrv.CallContext) error {
	var md metadata.MD
	if activated := callCtx.Extensions().ActivatedURIs(); len(activated) > 0 {
		md = metadata.MD{strings.ToLower(a2a.SvcParamExtensions): activated}
	}
	if err := grpc.SetTrailer(ctx, md); err != nil {
		return status.Errorf(codes.Internal, "failed to send active extensions: %v", err)
	}
	return nil
}

// The kinds of reply written from JSON.
const (
	replyTask        = iota // lf.a2a.v1.Task
	replySentTask           // lf.a2a.v1.SendMessageResponse holding a task (task = 1)
	replySentMessage        // lf.a2a.v1.SendMessageResponse holding a message (message = 2)
)

// writeReply writes the reply of kind from the JSON encode writes (a task,
// or for replySentMessage a message), or returns nil when it cannot (see
// wire.go).
func writeReply(kind int, encode func(*bytes.Buffer) error) *wireReply {
	jb := getJSONBuffer()
	defer putJSONBuffer(jb)
	if encode(jb) != nil {
		return nil
	}
	js := jb.Bytes()
	var r *wireReply
	if kind == replyTask {
		x := new(taskWireReply)
		r = x.bind(&x.m)
	} else {
		x := new(sentWireReply)
		r = x.bind(&x.m)
	}
	out := buffers.Get(len(js) + 64)
	w := &r.w
	w.b = (*out)[:0]
	var err error
	switch kind {
	case replyTask:
		err = w.Task(js)
	case replySentTask:
		m := w.open(1)
		if err = w.Task(js); err == nil {
			w.close(m)
		}
	case replySentMessage:
		m := w.open(2)
		if err = w.Message(js); err == nil {
			w.close(m)
		}
	}
	if err != nil {
		buffers.Put(out)
		return nil
	}
	*out = w.b
	w.b = nil
	r.buf = out
	r.ProtoReflect().SetUnknown(*out)
	return r
}

// taskWireReply and sentWireReply are a wireReply and its message in one
// allocation.
type (
	taskWireReply struct {
		wireReply
		m a2apb.Task
	}
	sentWireReply struct {
		wireReply
		m a2apb.SendMessageResponse
	}
)

// bind makes m the message of r, and returns r.
func (r *wireReply) bind(m proto.Message) *wireReply {
	r.Message = m
	return r
}

// wireReply is a reply written ahead: the codec sends buf as it is. It is
// also the message it encodes (its type, with buf as unknown fields), for
// interceptors and stats handlers that read a reply: its bytes are the
// same until the reply has been sent.
type wireReply struct {
	proto.Message
	buf *[]byte
	w   wireBuf // what wrote buf, in the reply's allocation
}

// codec is the server's: proto's, except that a wireReply goes out as it
// was written, its buffer back to the pool once gRPC has sent it.
type codec struct{ encoding.CodecV2 }

func newCodec() codec { return codec{encoding.GetCodecV2(encproto.Name)} }

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*wireReply); ok {
		return mem.BufferSlice{mem.NewBuffer(r.buf, buffers)}, nil
	}
	return c.CodecV2.Marshal(v)
}

// buffers hold replies' wire bytes.
var buffers = &bufferPool{}

// bufferPool is a mem.BufferPool of growable buffers: Get gives a buffer
// of at least length bytes (a kept one, grown when it is smaller), Put
// takes any buffer back unless it is large.
type bufferPool struct{ k kept[*[]byte] }

func (p *bufferPool) Get(length int) *[]byte {
	b, ok := p.k.get()
	if !ok {
		b = new([]byte)
	}
	if cap(*b) < length {
		*b = slices.Grow((*b)[:0], max(length, 4096))
	}
	*b = (*b)[:length]
	return b
}

func (p *bufferPool) Put(b *[]byte) { p.k.put(b, cap(*b)) }

// jsonBuffers hold the JSON a reply is written from.
var jsonBuffers kept[*bytes.Buffer]

func getJSONBuffer() *bytes.Buffer {
	if b, ok := jsonBuffers.get(); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func putJSONBuffer(b *bytes.Buffer) { jsonBuffers.put(b, b.Cap()) }

// kept is a free list of buffers that outlives garbage collections, which
// empty a sync.Pool (every reply's buffers were allocated again after
// each): up to keptBuffers of at most keptBytes each are kept, at most
// 512 KB, and the others up to maxPooled go to a sync.Pool.
type kept[T any] struct {
	once sync.Once
	list chan T
	p    sync.Pool
}

const (
	keptBuffers = 32
	keptBytes   = 16 << 10
	maxPooled   = 1 << 20
)

func (k *kept[T]) get() (T, bool) {
	k.once.Do(k.init)
	select {
	case b := <-k.list:
		return b, true
	default:
	}
	b, ok := k.p.Get().(T)
	return b, ok
}

func (k *kept[T]) put(b T, capacity int) {
	k.once.Do(k.init)
	if capacity <= keptBytes {
		select {
		case k.list <- b:
			return
		default:
		}
	}
	if capacity <= maxPooled {
		k.p.Put(b)
	}
}

func (k *kept[T]) init() { k.list = make(chan T, keptBuffers) }
