package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// taskWire mirrors a2a.Task: its artifacts, history and status are the
// mirrors of wire.go (or the SDK values where there is none).
type taskWire struct {
	ID        a2a.TaskID     `json:"id"`
	Artifacts []any          `json:"artifacts,omitempty"`
	ContextID string         `json:"contextId"`
	History   []any          `json:"history,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Status    any            `json:"status"`
}

// taskValue is what encodes as t: its mirror, with the pieces rb holds
// (when rb is t's) as they are.
func taskValue(t *a2a.Task, rb *ReplyBytes) *taskWire {
	if rb != nil && (rb.task != t || len(rb.history) != len(t.History) ||
		(rb.artifacts != nil && len(rb.artifacts) != len(t.Artifacts))) {
		rb = nil
	}
	w := &taskWire{ID: t.ID, ContextID: t.ContextID, Metadata: t.Metadata}
	if rb != nil && rb.status != nil {
		w.Status = rb.status
	} else {
		w.Status = statusValue(&t.Status)
	}
	if len(t.Artifacts) > 0 {
		w.Artifacts = make([]any, len(t.Artifacts))
		for i, a := range t.Artifacts {
			switch {
			case rb != nil && rb.artifacts != nil:
				w.Artifacts[i] = rb.artifacts[i]
			case a != nil: // a nil element stays a nil value: null, as the SDK writes it
				w.Artifacts[i] = artifactValue(a)
			}
		}
	}
	if len(t.History) > 0 {
		w.History = make([]any, len(t.History))
		for i, m := range t.History {
			switch {
			case rb != nil && rb.history[i] != nil:
				w.History[i] = rb.history[i]
			case m != nil:
				w.History[i] = messageValue(m)
			}
		}
	}
	return w
}

// WriteWrappedJSON writes the strings of prefix, the JSON of v, and the
// strings of suffix (at most five each) to w. A task
// or a message (a non-nil *a2a.Task or *a2a.Message) is encoded in one
// pass through the mirrors of wire.go, in the bytes json.Marshal writes for
// it (wirejson_test.go); any other value as encoding/json encodes it. The
// value goes to w in the encoder's one write, not copied into a buffer of
// its own: w is a buffered writer (an HTTP response). The front writes its
// JSON-RPC replies with it (docs/decisions/0022-front-answers-message-send.md).
// Nothing is written when v cannot be encoded.
func WriteWrappedJSON(w io.Writer, prefix []string, v any, suffix []string) error {
	switch x := v.(type) {
	case *a2a.Task:
		if x != nil {
			v = taskValue(x, nil)
		}
	case *a2a.Message:
		if x != nil {
			v = messageValue(x)
		}
	}
	return writeBetween(w, prefix, v, suffix)
}

// writeBetween writes the strings of prefix, the JSON of v, and the
// strings of suffix to w, in the encoder's one write.
func writeBetween(w io.Writer, prefix []string, v any, suffix []string) error {
	if len(prefix) > maxPieces || len(suffix) > maxPieces {
		return errors.New("too many strings around a value")
	}
	var before, after [maxPieces]piece
	for i, s := range prefix {
		before[i] = lit(s)
	}
	for i, s := range suffix {
		after[i] = lit(s)
	}
	_, _, _, err := encodeBetween(w, v, before[:len(prefix)], after[:len(suffix)])
	return err
}

// ReplyBytes are the encoded pieces of the task a call returned that this
// node encoded itself while making it (its log entries): a reply writes
// them as they are instead of encoding their values again. See
// WithReplyBytes and WriteTaskJSON.
type ReplyBytes struct {
	task      *a2a.Task
	status    json.RawMessage   // task.Status encoded, nil when not known
	history   []json.RawMessage // one per task.History message, nil where not known
	artifacts []json.RawMessage // one per task.Artifacts element, nil when not all known
}

type replyBytesKey struct{}

// WithReplyBytes asks the calls made with ctx to keep the encoded pieces of
// the task they return in the ReplyBytes returned. The view of the task
// (toA2A) fills it in the goroutine of the call, before the call returns;
// read it after.
func WithReplyBytes(ctx context.Context) (context.Context, *ReplyBytes) {
	rb := &ReplyBytes{}
	return context.WithValue(ctx, replyBytesKey{}, rb), rb
}

func replyBytesOf(ctx context.Context) *ReplyBytes {
	rb, _ := ctx.Value(replyBytesKey{}).(*ReplyBytes)
	return rb
}

// Where the values sit in the log entries' bodies (statusEntry,
// messageEntry, addArtifact): {"contextId":…,"status":STATUS,"taskId":…},
// STATUS {"message":MESSAGE,"state":…}, {"artifact":ARTIFACT,"contextId":…}.
// A value's own JSON cannot hold the marks that follow it outside a string
// at its own level, so the last mark is the end of the value.
const (
	statusMark        = `,"status":`
	statusMessageMark = `{"message":`
	artifactMark      = `{"artifact":`
)

// statusBytes is the status a status entry this node built holds.
func statusBytes(e store.LogEntry, t *store.Task) json.RawMessage {
	start := len(`{"contextId":`) + quotedLen(t.ContextID) + len(statusMark)
	end := len(e.Body) - len(`,"taskId":`) - quotedLen(t.ID) - len(`}`)
	if e.Kind != store.KindStatus || start >= end || !bytes.HasPrefix(e.Body[start-len(statusMark):], []byte(statusMark)) {
		return nil
	}
	return json.RawMessage(e.Body[start:end:end])
}

// statusIs says whether the encoded status st has state state (the state
// the view of a task takes from its row).
func statusIs(st json.RawMessage, state a2a.TaskState) bool {
	i := bytes.LastIndex(st, []byte(`"state":`))
	if i < 0 {
		return false
	}
	rest := st[i+len(`"state":`):]
	s := state.String()
	return len(rest) > len(s)+1 && rest[0] == '"' && string(rest[1:1+len(s)]) == s && rest[1+len(s)] == '"'
}

// historyBytes is the message of a history entry this node built (with its
// body), nil for one read from the store.
func historyBytes(e store.LogEntry, t *store.Task) json.RawMessage {
	if e.Message == nil || len(e.Body) == 0 {
		return nil
	}
	switch e.Kind {
	case store.KindMessage:
		return e.Body
	case store.KindStatus:
		return statusMessageBytes(statusBytes(e, t))
	}
	return nil
}

// statusMessageBytes is the message of the encoded status st, nil when it
// has none.
func statusMessageBytes(st json.RawMessage) json.RawMessage {
	end := bytes.LastIndex(st, []byte(`,"state":`))
	if !bytes.HasPrefix(st, []byte(statusMessageMark)) || end < len(statusMessageMark) {
		return nil
	}
	return st[len(statusMessageMark):end:end]
}

// WriteTaskJSON is WriteWrappedJSON for a task a call made with rb's
// context returned: the pieces rb holds are written as they are.
func WriteTaskJSON(w io.Writer, prefix []string, t *a2a.Task, rb *ReplyBytes, suffix []string) error {
	if t == nil {
		return WriteWrappedJSON(w, prefix, t, suffix)
	}
	return writeBetween(w, prefix, taskValue(t, rb), suffix)
}
