package engine

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/sqlite"
)

// TestAHandedOverTaskChangedAfterItsWriteChangesNeitherKeptRowNorStore: on
// SQLite, commit hands the task it writes to the store, which returns it
// instead of a copy (internal/handover). A caller that changes that task
// after the write, every column and its JSON, changes neither the row this
// node keeps of the task (which the next transition decides from without
// reading the store) nor what the store holds; and a write that fails
// leaves the task it was handed as it was.
func TestAHandedOverTaskChangedAfterItsWriteChangesNeitherKeptRowNorStore(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e, err := New(api.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if e.handover == nil {
		t.Fatal("the SQLite store does not take the task written; want it to")
	}
	status := json.RawMessage(`{"state":"TASK_STATE_INPUT_REQUIRED"}`)
	next := &store.Task{ID: "t-1", ContextID: "c-1", Agent: "expense", State: a2a.TaskStateInputRequired, Status: bytes.Clone(status)}
	entries := []store.LogEntry{{Kind: store.KindMessage, MessageID: "m-1", Body: json.RawMessage(`{"messageId":"m-1"}`)}}
	saved, err := e.commit(ctx, commitNote{cause: "start"}, next, entries, true)
	if err != nil {
		t.Fatal(err)
	}
	if saved != next || saved.Version != 1 || saved.LastSeq != 1 || saved.CreatedAt.IsZero() {
		t.Fatalf("commit returned %p %+v for the task %p handed over; want that task, at version 1 with its log's seq and times", saved, saved, next)
	}

	// What a careless caller could do to the task it got back.
	saved.Version, saved.LastSeq = 99, 99
	saved.State = a2a.TaskStateCompleted
	saved.Status = json.RawMessage(`{"state":"TASK_STATE_COMPLETED"}`)
	saved.Question = json.RawMessage(`{"id":"q"}`)

	l, kept, err := e.rows.read(ctx, "t-1", store.LoadParams{MessageID: "m-1", Request: true})
	if err != nil || !kept {
		t.Fatalf("read of the kept row: kept %v, err %v; want the kept row", kept, err)
	}
	if got := l.Task; got.Version != 1 || got.LastSeq != 1 || got.State != a2a.TaskStateInputRequired || !bytes.Equal(got.Status, status) || got.Question != nil {
		t.Errorf("the kept row after the caller changed its task: %+v; want version 1, input-required, status %s, no question", got, status)
	}
	if string(l.Message) != `{"messageId":"m-1"}` || string(l.Request) != `{"messageId":"m-1"}` {
		t.Errorf("the kept row's message and request: %s, %s", l.Message, l.Request)
	}
	got, err := st.GetTask(ctx, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.State != a2a.TaskStateInputRequired || !bytes.Equal(got.Status, status) {
		t.Errorf("the store's task: %+v; want version 1, input-required", got)
	}

	// A write that loses its compare-and-set leaves what it was handed.
	stale := *got
	stale.Version = 7
	stale.State = a2a.TaskStateWorking
	before := stale
	if _, err := e.commit(ctx, commitNote{cause: "test"}, &stale, nil, false); err == nil {
		t.Fatal("a write at a stale version succeeded")
	}
	if stale.Version != before.Version || stale.UpdatedAt != before.UpdatedAt || stale.State != before.State {
		t.Errorf("a failed write changed the task handed over: %+v, was %+v", stale, before)
	}
}
