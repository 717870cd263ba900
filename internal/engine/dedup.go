package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/google/uuid"

	"github.com/askpoint/askpoint/store"
)

// Deduplication. A redelivered message (same caller, same messageId, same
// content) must land where the first delivery landed and change nothing.
//
// A first message creates a task with a request key derived from the
// caller, the agent and the messageId, so two deliveries racing each other
// collide on the key's unique index and exactly one creates the task. A
// follow-up is looked up in its task's log by messageId (store.LoadTask).

var taskIDSpace = uuid.MustParse("5d0b8b6e-2f61-4c55-9f0e-8a3c7b3a1e42")

// requestKey is the request key of the task that a first message creates
// (store.Task.RequestKey). salt separates a reused messageId with other
// content from the first use. Tasks created before keys were kept apart
// had this as their ID, which the store's migration copied into their key.
func requestKey(tenant, owner, agent, messageID string, salt []byte) string {
	var b bytes.Buffer
	for _, s := range []string{tenant, owner, agent, messageID} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	b.Write(salt)
	return uuid.NewSHA1(taskIDSpace, b.Bytes()).String()
}

// contentHash identifies a message's content: its parts, task and context.
func contentHash(m *a2a.Message) []byte {
	parts, _ := json.Marshal(m.Parts)
	sum := sha256.New()
	sum.Write(parts)
	sum.Write([]byte{0})
	sum.Write([]byte(m.TaskID))
	sum.Write([]byte{0})
	sum.Write([]byte(m.ContextID))
	return sum.Sum(nil)
}

// sameContent says whether incoming repeats stored: the same parts and
// task, and the same context unless incoming leaves it out (the server
// fills it in on the stored copy).
func sameContent(stored, incoming *a2a.Message) bool {
	if incoming.TaskID != "" && incoming.TaskID != stored.TaskID {
		return false
	}
	if incoming.ContextID != "" && incoming.ContextID != stored.ContextID {
		return false
	}
	a, err1 := json.Marshal(stored.Parts)
	b, err2 := json.Marshal(incoming.Parts)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

// sameRequest says whether first message m redelivers the message that
// created the task with this request key (nil, false when there is none). It does when the content is the same and the caller
// has not acted on the task since (sent it a message, or canceled it): a
// caller that acted on the task by its ID knew of it, so the same first
// message again is a new request (the A2A conformance suite sends one
// message many times for many tasks).
func (s *Engine) sameRequest(ctx context.Context, key string, m *a2a.Message) (*store.Task, bool, error) {
	t, err := s.store.TaskByRequestKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil // the ID was taken, not the key
	}
	if err != nil {
		return nil, false, err
	}
	entries, err := s.store.History(ctx, t.ID, 0)
	if err != nil {
		return nil, false, err
	}
	var first *a2a.Message
	followed := false
	for _, e := range entries {
		if e.Kind != store.KindMessage {
			continue
		}
		if first != nil {
			followed = true
			break
		}
		var err error
		if first, err = decodeMessage(e.Body); err != nil {
			return nil, false, err
		}
	}
	actedOn := followed || t.State == a2a.TaskStateCanceled
	return t, first != nil && !actedOn && sameContent(first, m), nil
}

// redelivered says whether msg was already taken by task t: stored is the
// task's message with msg's messageId (from store.LoadTask), nil when it
// has none. A messageId reused with other content is a different message:
// it is logged and handled as new.
func (s *Engine) redelivered(t *store.Task, stored json.RawMessage, msg *a2a.Message) (bool, error) {
	if stored == nil {
		return false, nil
	}
	var m a2a.Message
	if err := json.Unmarshal(stored, &m); err != nil {
		return false, fmt.Errorf("decode message %s of task %s: %w", msg.ID, t.ID, err)
	}
	if sameContent(&m, msg) {
		return true, nil
	}
	s.log.Info("messageId reused with other content; handled as a new message",
		slog.String("task", t.ID), slog.String("messageId", msg.ID))
	return false, nil
}
