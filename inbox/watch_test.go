package inbox_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
)

// Another handle on the same file (as another process) changes the
// version; a re-ask keeps its task's place when listed by task.
func TestVersionChangesAndAReAskKeepsItsTasksPlace(t *testing.T) {
	path := t.TempDir() + "/inbox.db"
	ib, other := open(t, path), open(t, path)
	ctx := t.Context()
	v0, err := ib.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Observe(ctx, "http://a", pausedTask("t1", "q-1")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := other.Observe(ctx, "http://a", pausedTask("t2", "q-2")); err != nil {
		t.Fatal(err)
	}
	v1, _ := ib.Version(ctx)
	if v1 == v0 {
		t.Fatal("the version did not change when another handle added items")
	}
	// t1 is re-asked: its new item is the newest, yet it stays first.
	if _, _, err := other.Observe(ctx, "http://a", pausedTask("t1", "q-3")); err != nil {
		t.Fatal(err)
	}
	if v2, _ := ib.Version(ctx); v2 == v1 {
		t.Error("the version did not change on a re-ask")
	}
	items, err := ib.List(ctx, inbox.ListOptions{ByTask: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Key != "q-3" || items[1].Key != "q-2" {
		t.Errorf("open items by task: %v; want t1's re-ask q-3 first, then q-2", keys(items))
	}
}

func keys(items []*inbox.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

// A notice is recorded once per item and kind.
func TestNoticesAreRecordedOnce(t *testing.T) {
	ib := open(t, "")
	ctx := t.Context()
	it, _, err := ib.Observe(ctx, "http://a", pausedTask("t1", "q-1"))
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := ib.Notified(ctx, it.ID, "new"); done {
		t.Fatal("notified before anything was sent")
	}
	first, err := ib.MarkNotified(ctx, it.ID, "new")
	if err != nil || !first {
		t.Fatalf("MarkNotified = %v, %v; want the first", first, err)
	}
	if again, _ := ib.MarkNotified(ctx, it.ID, "new"); again {
		t.Error("a second MarkNotified of the same kind counted as the first")
	}
	if first, _ := ib.MarkNotified(ctx, it.ID, "reminder-1"); !first {
		t.Error("another kind of notice counted as recorded")
	}
}

// The push receiver hands an agent's reminder to OnReminder with the item
// it reminds of.
func TestPushReceiverReportsReminders(t *testing.T) {
	ib := open(t, "")
	var got []inbox.Reminder
	const tok = "push-token-0123456789"
	h := inbox.NewPushHandler(ib, inbox.PushOptions{Agents: map[string]string{"http://a": tok}, OnReminder: func(it *inbox.Item, r inbox.Reminder) {
		if it.Key == "q-1" {
			got = append(got, r)
		}
	}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	task := pausedTask("t1", "q-1")
	post := func(ev a2a.Event) {
		raw, err := json.Marshal(a2a.StreamResponse{Event: ev})
		if err != nil {
			t.Fatal(err)
		}
		if code := apitest.PostNotification(t, t.Context(), srv.URL+"/?agent=http://a", tok, raw); code != http.StatusNoContent {
			t.Fatalf("push: %d", code)
		}
	}
	post(task)
	post(&a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: task.Status})
	if len(got) != 0 {
		t.Fatalf("a status update without the marker counted as a reminder: %v", got)
	}
	post(&a2a.TaskStatusUpdateEvent{TaskID: task.ID, ContextID: task.ContextID, Status: task.Status,
		Metadata: map[string]any{inbox.ReminderKey: map[string]any{"reminder": 1, "of": 2, "expires": "2026-12-02T09:00:00Z"}}})
	if len(got) != 1 || got[0].N != 1 || got[0].Of != 2 || got[0].Expires.IsZero() {
		t.Errorf("reminders reported: %+v; want reminder 1 of 2 with its expiry", got)
	}
}
