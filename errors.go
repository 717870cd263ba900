package askpoint

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Errors a caller can get. Each wraps one a2a sentinel, so the SDK's
// transports map it to the protocol's code, and carries a message that
// names what was wrong.

func errInvalidParams(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

func errTaskNotFound(id string) error {
	return a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %q not found", id))
}

func errTerminal(id string, state a2a.TaskState) error {
	return a2a.NewError(a2a.ErrUnsupportedOperation,
		fmt.Sprintf("task %q is %s and takes no more messages; start a new task (send without taskId)", id, stateWord(state)))
}

// internalError is a failure of the server itself (the store, an encoding).
// The caller gets a plain internal error; the cause goes to the log once,
// where the request handler answers (handler.logged), never on the wire:
// it may hold SQL, file paths or store operation names.
type internalError struct {
	cause  error
	logged bool
}

func (e *internalError) Error() string {
	return "internal error: the server could not complete the request (the cause is in its log); try again later"
}

// Unwrap makes the error the protocol's internal error, and nothing else:
// the cause's sentinels (a store conflict) must not leak into decisions.
func (e *internalError) Unwrap() error { return a2a.ErrInternalError }

func errInternal(err error) error {
	var ie *internalError
	if errors.As(err, &ie) {
		return err
	}
	return &internalError{cause: err}
}

// logInternal logs the cause of an internal error once, with what was
// being done and on which task.
func logInternal(log *slog.Logger, op, task string, err error) {
	var ie *internalError
	if !errors.As(err, &ie) || ie.logged {
		return
	}
	ie.logged = true
	log.Error("internal error", slog.String("op", op), slog.String("task", task), slog.Any("err", ie.cause))
}

// protocolError describes how one sentinel travels on each binding.
type protocolError struct {
	err        error
	code       int // JSON-RPC
	httpStatus int // HTTP+JSON
	status     string
}

var protocolErrors = []protocolError{
	{a2a.ErrParseError, -32700, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrInvalidRequest, -32600, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrMethodNotFound, -32601, http.StatusNotImplemented, "UNIMPLEMENTED"},
	{a2a.ErrInvalidParams, -32602, http.StatusBadRequest, "INVALID_ARGUMENT"},
	{a2a.ErrTaskNotFound, -32001, http.StatusNotFound, "NOT_FOUND"},
	{a2a.ErrTaskNotCancelable, -32002, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrPushNotificationNotSupported, -32003, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrUnsupportedOperation, -32004, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrUnsupportedContentType, -32005, http.StatusUnsupportedMediaType, "INVALID_ARGUMENT"},
	{a2a.ErrVersionNotSupported, -32009, http.StatusBadRequest, "FAILED_PRECONDITION"},
	{a2a.ErrUnauthenticated, -31401, http.StatusUnauthorized, "UNAUTHENTICATED"},
	{a2a.ErrUnauthorized, -31403, http.StatusForbidden, "PERMISSION_DENIED"},
}

func lookupProtocolError(err error) protocolError {
	var le *limitError
	if errors.As(err, &le) {
		return protocolError{a2a.ErrInvalidRequest, -32600, http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"}
	}
	for _, pe := range protocolErrors {
		if errors.Is(err, pe.err) {
			return pe
		}
	}
	return protocolError{a2a.ErrInternalError, -32603, http.StatusInternalServerError, "INTERNAL"}
}
