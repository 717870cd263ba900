package front

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/internal/engine"
)

// The front answers the HTTP+JSON SendMessage, GetTask and CancelTask
// itself, as it answers them on JSON-RPC (reply.go): what the SDK's
// transport (a2asrv.NewRESTHandler) does, in its bytes, with the reply
// written in one pass from the pieces the call encoded (writeResult)
// instead of through the SDK's per-part MarshalJSON, and the body decoded
// once (the front's checks decode it already). Every error of the handler
// is written by the SDK's transport, over a handler that returns it, as on
// JSON-RPC; so is every request the front does not read exactly as the
// SDK's router does (other methods, escaped paths, a history length that
// is no integer). See docs/decisions/0170-grpc-replies-from-stored-bytes.md.

// answerREST answers r (its body read, sent decoded when r is a
// SendMessage) with h if it is one of the three, and says whether it did.
func answerREST(w http.ResponseWriter, r *http.Request, h Handler, body []byte, sent *a2a.SendMessageRequest) bool {
	if r.URL.RawPath != "" {
		return false
	}
	var result any
	var err error
	var rb *engine.ReplyBytes
	path := r.URL.Path
	ctx, _ := a2asrv.NewCallContext(r.Context(), a2asrv.NewServiceParams(r.Header))
	switch {
	case r.Method == http.MethodPost && path == "/message:send" && sent != nil:
		ctx, rb = engine.WithReplyBytes(ctx)
		var res a2a.SendMessageResult
		if res, err = h.SendMessage(ctx, sent); err == nil {
			result = a2a.StreamResponse{Event: res}
		}
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/tasks/"):
		id := path[len("/tasks/"):]
		if !plainSegment(id) || strings.HasSuffix(id, ":subscribe") {
			return false
		}
		req := &a2a.GetTaskRequest{ID: a2a.TaskID(id)}
		if v := r.URL.Query().Get("historyLength"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return false
			}
			req.HistoryLength = &n
		}
		result, err = h.GetTask(ctx, req)
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/tasks/") && strings.HasSuffix(path, ":cancel"):
		id := strings.TrimSuffix(path[len("/tasks/"):], ":cancel")
		if !plainSegment(id + ":cancel") {
			return false
		}
		result, err = h.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(id)})
	default:
		return false
	}
	if err != nil {
		// The SDK's transport writes the error, for the same request.
		serveBody(a2asrv.NewRESTHandler(refusal{err: err}), w, r, body)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	if !writeResult(w, nil, "\n", result, rb) {
		_ = json.NewEncoder(w).Encode(result)
	}
	return true
}

// plainSegment says whether s is one path segment the SDK's router takes
// as it is: not empty, no slash, not a dot segment it would clean away.
func plainSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.Contains(s, "/")
}
