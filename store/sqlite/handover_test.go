package sqlite

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/handover"
	"github.com/askpoint/askpoint/store"
)

// TestAHandedOverTaskIsSetAsTheCopyWouldBe: WriteHandedOver returns the
// task it was given, set field for field as CreateTask and UpdateTask set
// the copy they return (empty JSON columns nil, timers at milliseconds,
// the store's version, sequence, times and owner columns, no request key
// from a create), for two tasks written the same way, one each way.
func TestAHandedOverTaskIsSetAsTheCopyWouldBe(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "askpoint.db"))
	wake := time.Now().Add(time.Hour).Round(0).Add(123456 * time.Nanosecond)
	build := func(id string) *store.Task {
		tk := sampleTask(id)
		tk.RequestKey = "key-" + id
		tk.Artifacts = json.RawMessage{} // empty, read back as nil
		tk.WakeAt, tk.LeaseUntil, tk.LeaseOwner = wake, wake, "node"
		return tk
	}
	entries := func(id string) []store.LogEntry {
		return []store.LogEntry{{Kind: store.KindMessage, MessageID: "m-" + id, Body: json.RawMessage(`{"messageId":"m"}`), Notify: true}}
	}
	same := func(step string, copied, handed *store.Task) {
		t.Helper()
		c, h := *copied, *handed
		c.ID, h.ID = "", ""
		c.CreatedAt, h.CreatedAt, c.UpdatedAt, h.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(c, h) {
			t.Errorf("%s: handed over %+v\nthe copy     %+v", step, h, c)
		}
		if handed.CreatedAt.IsZero() || handed.UpdatedAt.IsZero() {
			t.Errorf("%s: handed over without its times: %+v", step, handed)
		}
	}

	copied, err := s.CreateTask(ctx, build("a"), entries("a"))
	if err != nil {
		t.Fatal(err)
	}
	b := build("b")
	handed, err := s.WriteHandedOver(ctx, b, entries("b"), true, handover.Token{})
	if err != nil {
		t.Fatal(err)
	}
	if handed != b {
		t.Fatal("WriteHandedOver returned a copy of the task it was given")
	}
	same("create", copied, handed)

	next := func(tk *store.Task) *store.Task {
		n := *tk
		n.State, n.Status = a2a.TaskStateInputRequired, json.RawMessage(`{"state":"TASK_STATE_INPUT_REQUIRED"}`)
		n.Question, n.Runnable, n.LeaseOwner, n.LeaseUntil = json.RawMessage(`{"id":"q"}`), false, "", time.Time{}
		n.RequestKey = "kept by the caller"
		return &n
	}
	copied, err = s.UpdateTask(ctx, next(copied), entries("a"))
	if err != nil {
		t.Fatal(err)
	}
	nb := next(handed)
	if handed, err = s.WriteHandedOver(ctx, nb, entries("b"), false, handover.Token{}); err != nil {
		t.Fatal(err)
	}
	if handed != nb {
		t.Fatal("WriteHandedOver returned a copy of the task it was given")
	}
	same("update", copied, handed)

	stale := *handed
	stale.Version = 1
	before := stale
	if _, err := s.WriteHandedOver(ctx, &stale, nil, false, handover.Token{}); err == nil {
		t.Fatal("a write at a stale version succeeded")
	}
	if !reflect.DeepEqual(stale, before) {
		t.Errorf("a failed write changed the task handed over: %+v, was %+v", stale, before)
	}
}
