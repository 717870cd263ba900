package front

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/jsonwrite"
)

// The front answers the JSON-RPC methods whose reply is a task (or, for
// SendMessage, a message) itself, in the bytes the SDK's transport
// (a2asrv.NewJSONRPCHandler) writes for them: the envelope the front has
// read is not decoded a second time, the params are decoded once into the
// SDK's request type, and the reply is encoded in one pass
// (engine.WrappedJSON) instead of through the SDK's per-part MarshalJSON.
// What the front does not answer itself goes to the SDK's transport as
// before: the other methods, streaming, and every error of the handler,
// which the SDK's transport writes as it always did. The front reads the
// envelope as the SDK's decoder does (members in any letter case, a
// member named twice refused: members.go), and params that do not decode
// are refused in the protocol's words (decode.go). See
// docs/decisions/0022-front-answers-message-send.md and 0106.

// answersHere are the methods the front answers itself.
var answersHere = map[string]bool{"SendMessage": true, "GetTask": true, "CancelTask": true}

// answerJSONRPC answers env (one of answersHere) with h, as the SDK's
// transport would: the call context made as it makes it, h called as it
// calls it.
func (f *Front) answerJSONRPC(w http.ResponseWriter, r *http.Request, h Handler, next http.Handler, body []byte, env *jsonrpcEnvelope) {
	ctx, _ := a2asrv.NewCallContext(r.Context(), a2asrv.NewServiceParams(r.Header))
	var result any
	var err error
	var rb *engine.ReplyBytes
	switch env.Method {
	case "SendMessage":
		ctx, rb = engine.WithReplyBytes(ctx)
		var req a2a.SendMessageRequest
		if err := decodeSendMessage(env.Params, &req, "params"); err != nil {
			writeJSONRPCError(w, env.ID, err)
			return
		}
		var res a2a.SendMessageResult
		if res, err = h.SendMessage(ctx, &req); err == nil {
			result = a2a.StreamResponse{Event: res}
		}
	case "GetTask":
		var req a2a.GetTaskRequest
		if err := decodeParams(env.Params, &req, "params"); err != nil {
			writeJSONRPCError(w, env.ID, err)
			return
		}
		result, err = h.GetTask(ctx, &req)
	case "CancelTask":
		var req a2a.CancelTaskRequest
		if err := decodeParams(env.Params, &req, "params"); err != nil {
			writeJSONRPCError(w, env.ID, err)
			return
		}
		result, err = h.CancelTask(ctx, &req)
	}
	if err != nil {
		// The SDK's transport writes the error: it decodes the request
		// again (as the front did, without a fault) and gets err from
		// the call.
		serveBody(a2asrv.NewJSONRPCHandler(refusal{err: err}), w, r, body)
		return
	}
	writeJSONRPCResult(w, env.ID, result, rb)
}

// writeJSONRPCResult writes the success response the SDK's transport writes
// for result: jsonrpc.ServerResponse encoded by json.Encoder (with its
// newline), through writeResult, or the SDK's way when that writes nothing.
func writeJSONRPCResult(w http.ResponseWriter, id any, result any, rb *engine.ReplyBytes) {
	w.Header().Set("Content-Type", "application/json")
	var idBuf [64]byte
	idJSON, err := jsonwrite.Value(idBuf[:0], id) // a string, a number or null (checkEnvelope)
	if err == nil && writeResult(w, []string{`{"jsonrpc":"2.0","id":`, string(idJSON), `,"result":`}, "}\n", result, rb) {
		return
	}
	// The SDK's way, failures included: an encoding that fails writes
	// nothing.
	_ = json.NewEncoder(w).Encode(sdkResponse{JSONRPC: "2.0", ID: id, Result: result})
}

// writeResult writes result between prefix and suffix as encoding/json
// writes it, and says whether it did: a task, or a stream response holding
// a task or a message, encoded in one pass, with the pieces rb holds (what
// the call encoded of the task) as they are. Anything else (a nil result)
// it leaves to the caller, having written nothing. The JSON-RPC and the
// HTTP+JSON replies are written with it.
func writeResult(w io.Writer, prefix []string, suffix string, result any, rb *engine.ReplyBytes) bool {
	var v any
	// At most five strings on either side (engine.WriteWrappedJSON).
	prefix, after := append(make([]string, 0, 5), prefix...), append(make([]string, 0, 5), suffix)
	switch x := result.(type) {
	case *a2a.Task:
		v = nilIfNil(x)
	case a2a.StreamResponse:
		switch ev := x.Event.(type) {
		case *a2a.Task:
			prefix, after, v = append(prefix, `{"task":`), append(after[:0], "}", suffix), nilIfNil(ev)
		case *a2a.Message:
			prefix, after, v = append(prefix, `{"message":`), append(after[:0], "}", suffix), nilIfNil(ev)
		}
	}
	if t, ok := v.(*a2a.Task); ok {
		return engine.WriteTaskJSON(w, prefix, t, rb, after) == nil
	}
	return v != nil && engine.WriteWrappedJSON(w, prefix, v, after) == nil
}

// nilIfNil is p as a value, nil when p is a nil pointer.
func nilIfNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return p
}

// sdkResponse is a success response of the SDK's transport (its
// jsonrpc.ServerResponse without the error member, which a success leaves
// out).
type sdkResponse struct {
	JSONRPC string `json:"jsonrpc"`
	ID      any    `json:"id"`
	Result  any    `json:"result,omitempty"`
}

// refusal is a handler whose calls the front answers itself fail with err.
type refusal struct {
	a2asrv.RequestHandler
	err error
}

func (r refusal) SendMessage(context.Context, *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	return nil, r.err
}

func (r refusal) GetTask(context.Context, *a2a.GetTaskRequest) (*a2a.Task, error) {
	return nil, r.err
}

func (r refusal) CancelTask(context.Context, *a2a.CancelTaskRequest) (*a2a.Task, error) {
	return nil, r.err
}
