package askpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
func statusEntry(t *store.Task, state a2a.TaskState, msg *a2a.Message, now time.Time) (json.RawMessage, store.LogEntry, error) {
	ts := now.UTC()
	status := a2a.TaskStatus{State: state, Message: msg, Timestamp: &ts}
	raw, err := json.Marshal(status)
	if err != nil {
		return nil, store.LogEntry{}, err
	}
	ev := a2a.TaskStatusUpdateEvent{TaskID: a2a.TaskID(t.ID), ContextID: t.ContextID, Status: status}
	body, err := json.Marshal(&ev)
	if err != nil {
		return nil, store.LogEntry{}, err
	}
	return raw, store.LogEntry{Kind: store.KindStatus, InHistory: msg != nil, Body: body, At: ts}, nil
}

func messageEntry(m *a2a.Message, now time.Time) (store.LogEntry, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return store.LogEntry{}, errInternal(err)
	}
	return store.LogEntry{Kind: store.KindMessage, MessageID: m.ID, InHistory: true, Body: body, At: now.UTC()}, nil
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
	var arts []*a2a.Artifact
	if len(t.Artifacts) > 0 {
		if err := json.Unmarshal(t.Artifacts, &arts); err != nil {
			return store.LogEntry{}, err
		}
	}
	arts = append(arts, &cp)
	raw, err := json.Marshal(arts)
	if err != nil {
		return store.LogEntry{}, err
	}
	t.Artifacts = raw
	ev := a2a.TaskArtifactUpdateEvent{TaskID: a2a.TaskID(t.ID), ContextID: t.ContextID, Artifact: &cp, LastChunk: true}
	body, err := json.Marshal(&ev)
	if err != nil {
		return store.LogEntry{}, err
	}
	return store.LogEntry{Kind: store.KindArtifact, Body: body, At: now.UTC()}, nil
}

// taskView says how much of a task a response carries.
type taskView struct {
	historyLength *int // nil: all
	artifacts     bool
}

// toA2A builds the protocol's view of t.
func (s *Server) toA2A(ctx context.Context, t *store.Task, v taskView) (*a2a.Task, error) {
	out := &a2a.Task{ID: a2a.TaskID(t.ID), ContextID: t.ContextID}
	if err := json.Unmarshal(t.Status, &out.Status); err != nil {
		return nil, fmt.Errorf("decode status of task %s: %w", t.ID, err)
	}
	if v.artifacts && len(t.Artifacts) > 0 {
		if err := json.Unmarshal(t.Artifacts, &out.Artifacts); err != nil {
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
		entries, err := s.store.History(ctx, t.ID, max(last, 0))
		if err != nil {
			return nil, err
		}
		out.History = make([]*a2a.Message, 0, len(entries))
		for _, e := range entries {
			m, err := historyMessage(e)
			if err != nil {
				return nil, err
			}
			if m != nil {
				out.History = append(out.History, m)
			}
		}
	}
	return out, nil
}

func historyMessage(e store.LogEntry) (*a2a.Message, error) {
	switch e.Kind {
	case store.KindMessage:
		var m a2a.Message
		if err := json.Unmarshal(e.Body, &m); err != nil {
			return nil, err
		}
		return &m, nil
	case store.KindStatus:
		var ev a2a.TaskStatusUpdateEvent
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

// stateWord names a state for people: "completed", "input-required".
func stateWord(s a2a.TaskState) string {
	w := strings.TrimPrefix(string(s), "TASK_STATE_")
	return strings.ReplaceAll(strings.ToLower(w), "_", "-")
}
