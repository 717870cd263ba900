package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/jsonwrite"
	"github.com/askpoint/askpoint/store"
)

// appendTask appends t as json.Marshal writes it, with the pieces rb holds
// (when rb is t's) as they are: they are this node's own encoding of those
// values, compact and escaped as encoding/json writes them, which is what
// encoding/json's compacting of them would give again.
func appendTask(b []byte, t *a2a.Task, rb *ReplyBytes) ([]byte, error) {
	if t == nil {
		return append(b, "null"...), nil
	}
	if rb != nil && (rb.task != t || len(rb.history) != len(t.History) ||
		(rb.artifacts != nil && len(rb.artifacts) != len(t.Artifacts))) {
		rb = nil
	}
	var err error
	b = jsonwrite.String(append(b, `{"id":`...), string(t.ID))
	if len(t.Artifacts) > 0 {
		b = append(b, `,"artifacts":[`...)
		for i, a := range t.Artifacts {
			if i > 0 {
				b = append(b, ',')
			}
			if rb != nil && rb.artifacts != nil {
				b = append(b, rb.artifacts[i]...)
			} else if b, err = appendArtifact(b, a); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	b = jsonwrite.String(append(b, `,"contextId":`...), t.ContextID)
	if len(t.History) > 0 {
		b = append(b, `,"history":[`...)
		for i, m := range t.History {
			if i > 0 {
				b = append(b, ',')
			}
			if rb != nil && rb.history[i] != nil {
				b = append(b, rb.history[i]...)
			} else if b, err = appendMessage(b, m, nil); err != nil {
				return b, err
			}
		}
		b = append(b, ']')
	}
	if len(t.Metadata) > 0 {
		if b, err = jsonwrite.Object(append(b, `,"metadata":`...), t.Metadata); err != nil {
			return b, err
		}
	}
	b = append(b, `,"status":`...)
	if rb != nil && rb.status != nil {
		b = append(b, rb.status...)
	} else if b, err = appendStatus(b, &t.Status, nil); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// taskJSON is a task, with the pieces rb holds, as a jsonwrite.Appender.
type taskJSON struct {
	jsonwrite.Own
	t  *a2a.Task
	rb *ReplyBytes
}

func (v taskJSON) AppendJSON(b []byte) ([]byte, error) { return appendTask(b, v.t, v.rb) }

// anyJSON is any value as a jsonwrite.Appender (jsonwrite.Value).
type anyJSON struct {
	jsonwrite.Own
	v any
}

func (v anyJSON) AppendJSON(b []byte) ([]byte, error) { return jsonwrite.Value(b, v.v) }

// WriteWrappedJSON writes the strings of prefix, the JSON of v, and the
// strings of suffix (at most five each) to w, in one write. A task or a
// message (a non-nil *a2a.Task or *a2a.Message) is written by the
// appenders of wire.go, in the bytes json.Marshal writes for it
// (wirejson_test.go); any other value as jsonwrite.Value writes it (the
// bytes json.Marshal writes). The front writes its JSON-RPC replies with
// it (docs/decisions/0022-front-answers-message-send.md). Nothing is
// written when v cannot be encoded.
func WriteWrappedJSON(w io.Writer, prefix []string, v any, suffix []string) error {
	var a jsonwrite.Appender = anyJSON{v: v}
	switch x := v.(type) {
	case *a2a.Task:
		if x != nil {
			a = taskJSON{t: x}
		}
	case *a2a.Message:
		if x != nil {
			a = messageValue(x)
		}
	}
	return writeBetween(w, prefix, a, suffix)
}

// writeBetween writes the strings of prefix, the JSON of v, and the
// strings of suffix to w, in one write.
func writeBetween(w io.Writer, prefix []string, v jsonwrite.Appender, suffix []string) error {
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

// maxPieces is how many strings writeBetween takes on either side of a
// value (on the caller's stack).
const maxPieces = 5

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
	return writeBetween(w, prefix, taskJSON{t: t, rb: rb}, suffix)
}
