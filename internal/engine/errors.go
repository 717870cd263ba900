package engine

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/text"
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
		fmt.Sprintf("task %q is %s and takes no more messages; start a new task (send without taskId)", id, text.StateWord(state)))
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
