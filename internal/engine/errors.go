package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/store"
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

// errTerminal refuses a message to a task that has ended, saying how it
// ended when its final status has a message ("the question q-… expired"),
// so that a caller who answers late learns why.
func errTerminal(t *store.Task) error {
	why := ""
	var st a2a.TaskStatus
	if len(t.Status) > 0 && json.Unmarshal(t.Status, &st) == nil {
		if w := text.FirstLine(text.Of(st.Message)); w != "" {
			if len(w) > maxWhy {
				n := maxWhy
				for n > 0 && !utf8.RuneStart(w[n]) {
					n--
				}
				w = w[:n] + "…"
			}
			why = " (" + w + ")"
		}
	}
	return a2a.NewError(a2a.ErrUnsupportedOperation,
		fmt.Sprintf("task %q is %s%s and takes no more messages; start a new task (send without taskId)", t.ID, text.StateWord(t.State), why))
}

// maxWhy bounds the final status text an error quotes.
const maxWhy = 200

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
// being done and on which task. A request whose context ended (its caller
// went away, or the server ended its stream) failed for no fault of the
// server's: that is a debug line, not an error.
func logInternal(log *slog.Logger, op, task string, err error) {
	var ie *internalError
	if !errors.As(err, &ie) || ie.logged {
		return
	}
	ie.logged = true
	if errors.Is(ie.cause, context.Canceled) || errors.Is(ie.cause, context.DeadlineExceeded) {
		log.Debug("the request ended before its reply: the caller went away", slog.String("op", op), slog.String("task", task), slog.Any("err", ie.cause))
		return
	}
	log.Error("internal error", slog.String("op", op), slog.String("task", task), slog.Any("err", ie.cause))
}
