package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// Conversions between the store's rows and the protocol's types.

func agentMessage(t *store.Task, text string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(text))
	m.TaskID, m.ContextID = a2a.TaskID(t.ID), t.ContextID
	return m
}

// statusEntry encodes a new status for t and the log entry announcing it.
// The status is encoded once, inside the event; the row's status is that
// part of the event's bytes.
func statusEntry(t *store.Task, state a2a.TaskState, msg *a2a.Message, now time.Time) (json.RawMessage, store.LogEntry, error) {
	return statusEntryData(t, state, msg, nil, now)
}

// statusEntryData is statusEntry with data, when not nil, what the one
// data part of msg encodes as (a question's data part written without its
// maps: questionwire.MessageAndWire).
func statusEntryData(t *store.Task, state a2a.TaskState, msg *a2a.Message, data any, now time.Time) (json.RawMessage, store.LogEntry, error) {
	ts := now.UTC()
	status := a2a.TaskStatus{State: state, Message: msg, Timestamp: &ts}
	body, start, end, err := wrapped(statusValueData(&status, data),
		[]piece{lit(`{"contextId":`), str(t.ContextID), lit(`,"status":`)},
		[]piece{lit(`,"taskId":`), str(t.ID), lit(`}`)})
	if err != nil {
		return nil, store.LogEntry{}, err
	}
	raw := json.RawMessage(body[start:end:end])
	// Push receivers hear of every pause and every ending; the steps in
	// between are for streams.
	notify := interrupted(state) || state.Terminal()
	return raw, store.LogEntry{Kind: store.KindStatus, InHistory: msg != nil, Notify: notify, Body: body, At: ts, Message: msg}, nil
}

func messageEntry(m *a2a.Message, now time.Time) (store.LogEntry, error) {
	body, _, _, err := wrapped(messageValue(m), nil, nil)
	if err != nil {
		return store.LogEntry{}, errInternal(err)
	}
	return store.LogEntry{Kind: store.KindMessage, MessageID: m.ID, InHistory: true, Body: body, At: now.UTC(), Message: m}, nil
}

// addArtifact appends a to t's artifacts and returns the log entry.
func addArtifact(t *store.Task, a *a2a.Artifact, now time.Time) (store.LogEntry, error) {
	if a == nil {
		return store.LogEntry{}, fmt.Errorf("askpoint: nil artifact")
	}
	cp := *a
	if cp.ID == "" {
		cp.ID = a2a.NewArtifactID()
	}
	body, start, end, err := wrapped(artifactValue(&cp),
		[]piece{lit(`{"artifact":`)},
		[]piece{lit(`,"contextId":`), str(t.ContextID), lit(`,"lastChunk":true,"taskId":`), str(t.ID), lit(`}`)})
	if err != nil {
		return store.LogEntry{}, err
	}
	raw, err := appendArtifactJSON(t.Artifacts, body[start:end:end])
	if err != nil {
		return store.LogEntry{}, err
	}
	t.Artifacts = raw
	return store.LogEntry{Kind: store.KindArtifact, Body: body, At: now.UTC(), Artifact: &cp}, nil
}

// appendArtifactJSON appends an encoded artifact to the task's encoded
// artifact list (a JSON array, as json.Marshal of []*a2a.Artifact writes
// it) without decoding the artifacts already there.
func appendArtifactJSON(list json.RawMessage, art json.RawMessage) (json.RawMessage, error) {
	switch {
	case len(list) == 0 || string(list) == "null" ||
		(list[0] == '[' && list[len(list)-1] == ']' && len(bytes.TrimSpace(list[1:len(list)-1])) == 0):
		return append(append(append(make(json.RawMessage, 0, len(art)+2), '['), art...), ']'), nil
	case list[0] == '[' && list[len(list)-1] == ']':
		out := make(json.RawMessage, 0, len(list)+len(art)+1)
		out = append(out, list[:len(list)-1]...)
		out = append(out, ',')
		out = append(out, art...)
		return append(out, ']'), nil
	}
	var arts []json.RawMessage
	if err := json.Unmarshal(list, &arts); err != nil {
		return nil, err
	}
	return json.Marshal(append(arts, art))
}

// addArtifactChunk adds one chunk of artifact a to t: a new artifact when t
// has none with a.ID, else a's parts appended to it. The log entry is the
// chunk's update event (append, lastChunk).
func addArtifactChunk(t *store.Task, a *a2a.Artifact, last bool, now time.Time) (store.LogEntry, error) {
	var arts []*a2a.Artifact
	if len(t.Artifacts) > 0 {
		if err := json.Unmarshal(t.Artifacts, &arts); err != nil {
			return store.LogEntry{}, err
		}
	}
	chunk := *a
	appended := false
	for _, have := range arts {
		if have.ID == a.ID {
			have.Parts = append(have.Parts, a.Parts...)
			appended = true
			break
		}
	}
	if !appended {
		arts = append(arts, &chunk)
	}
	raw, err := json.Marshal(arts)
	if err != nil {
		return store.LogEntry{}, err
	}
	t.Artifacts = raw
	ev := a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(t.ID), ContextID: t.ContextID, Artifact: &chunk, Append: appended, LastChunk: last}
	body, err := json.Marshal(&ev)
	if err != nil {
		return store.LogEntry{}, err
	}
	return store.LogEntry{Kind: store.KindArtifact, Body: body, At: now.UTC()}, nil
}

// artifactChunk writes one chunk of a streamed artifact (Call.AppendArtifact).
func (r *run) AppendArtifact(ctx context.Context, a *a2a.Artifact, last bool) error {
	return r.update(ctx, func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error) {
		e, err := addArtifactChunk(next, a, last, now)
		return append(entries, e), err
	})
}

// taskView says how much of a task a response carries.
type taskView struct {
	historyLength *int // nil: all
	artifacts     bool
	known         *knownLog // the log's end as this node wrote it, nil when unknown
}

// toA2A builds the protocol's view of t.
func (s *Engine) toA2A(ctx context.Context, t *store.Task, v taskView) (*a2a.Task, error) {
	out := &a2a.Task{ID: a2a.TaskID(t.ID), ContextID: t.ContextID}
	rb := replyBytesOf(ctx)
	if rb != nil {
		*rb = ReplyBytes{task: out}
	}
	if st, ok := v.known.status(t); ok {
		out.Status = st
		if rb != nil {
			e, _ := v.known.statusEntry(t)
			if raw := statusBytes(e, t); statusIs(raw, t.State) {
				rb.status = raw
			}
		}
	} else if err := json.Unmarshal(t.Status, &out.Status); err != nil {
		return nil, fmt.Errorf("decode status of task %s: %w", t.ID, err)
	}
	if v.artifacts && len(t.Artifacts) > 0 {
		if arts, ok := v.known.artifacts(t); ok {
			out.Artifacts = arts
			if rb != nil {
				rb.artifacts = v.known.artifactsBytes()
			}
		} else if err := json.Unmarshal(t.Artifacts, &out.Artifacts); err != nil {
			return nil, fmt.Errorf("decode artifacts of task %s: %w", t.ID, err)
		}
	}
	if len(t.Metadata) > 0 {
		if err := json.Unmarshal(t.Metadata, &out.Metadata); err != nil {
			return nil, fmt.Errorf("decode metadata of task %s: %w", t.ID, err)
		}
	}
	last := -1
	if v.historyLength != nil {
		last = *v.historyLength
	}
	if last != 0 {
		add := func(e store.LogEntry) error {
			m, err := historyMessage(e)
			if err != nil {
				return err
			}
			if m != nil {
				out.History = append(out.History, m)
				if rb != nil {
					rb.history = append(rb.history, v.known.messageBytes(e, t))
				}
			}
			return nil
		}
		if skip, n, ok := v.known.history(t, last); ok {
			out.History = make([]*a2a.Message, 0, n)
			if err := v.known.historyEntries(skip, add); err != nil {
				return nil, err
			}
		} else {
			entries, err := s.store.History(ctx, t.ID, max(last, 0))
			if err != nil {
				return nil, err
			}
			out.History = make([]*a2a.Message, 0, len(entries))
			for _, e := range entries {
				if err := add(e); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

func historyMessage(e store.LogEntry) (*a2a.Message, error) {
	if e.Message != nil {
		return e.Message, nil
	}
	switch e.Kind {
	case store.KindMessage:
		return decodeMessage(e.Body)
	case store.KindStatus:
		// Only the status message: the rest of the event is not needed.
		var ev struct {
			Status struct {
				Message *a2a.Message `json:"message"`
			} `json:"status"`
		}
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return nil, err
		}
		return ev.Status.Message, nil
	}
	return nil, nil
}

// logEvent decodes a log entry into the stream event it announces; nil for
// entries that are not events (the caller's own messages).
func logEvent(e store.LogEntry) (a2a.Event, *a2a.TaskState, error) {
	switch e.Kind {
	case store.KindStatus:
		var ev a2a.TaskStatusUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return nil, nil, err
		}
		return &ev, &ev.Status.State, nil
	case store.KindArtifact:
		var ev a2a.TaskArtifactUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return nil, nil, err
		}
		return &ev, nil, nil
	}
	return nil, nil, nil
}

func interrupted(s a2a.TaskState) bool {
	return s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}
