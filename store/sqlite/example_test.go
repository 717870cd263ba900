package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/sqlite"
)

// A task is one row and an append-only log. Every change is a
// compare-and-set on the row's version: a writer that read an older
// version loses with store.ErrConflict and changes nothing. (The engine
// owns what the JSON columns mean; the store keeps them as bytes.)
func Example() {
	dir, err := os.MkdirTemp("", "askpoint-sqlite-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "askpoint.db")) // created, migrated, owned by this process
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	request, _ := json.Marshal(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt")))
	created, err := st.CreateTask(ctx, &store.Task{
		ID: "task-1", ContextID: "ctx-1", Owner: "alice", Agent: "expense", State: a2a.TaskStateSubmitted,
	}, []store.LogEntry{{Kind: store.KindMessage, MessageID: "m-1", InHistory: true, Body: request}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", created.State, "version", created.Version, "log", created.LastSeq)

	// Pause it: the next version, written only if the row is still version 1.
	paused := *created
	paused.State = a2a.TaskStateInputRequired
	paused.Checkpoint = json.RawMessage(`{"receipt":"taxi"}`)
	saved, err := st.UpdateTask(ctx, &paused, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("paused: ", saved.State, "version", saved.Version)

	// A writer that still holds version 1 loses, and nothing of it is stored.
	stale := *created
	stale.State = a2a.TaskStateCanceled
	_, err = st.UpdateTask(ctx, &stale, nil)
	fmt.Println("stale write:", errors.Is(err, store.ErrConflict))

	// One read: the row, and the message with a messageId (a redelivery check).
	l, err := st.LoadTask(ctx, "task-1", store.LoadParams{MessageID: "m-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("loaded: ", l.Task.State, "version", l.Task.Version, "checkpoint", string(l.Task.Checkpoint), "m-1 seen:", l.Message != nil)
	history, _ := st.History(ctx, "task-1", 0)
	fmt.Println("history:", len(history), history[0].Kind)
	// Output:
	// created: TASK_STATE_SUBMITTED version 1 log 1
	// paused:  TASK_STATE_INPUT_REQUIRED version 2
	// stale write: true
	// loaded:  TASK_STATE_INPUT_REQUIRED version 2 checkpoint {"receipt":"taxi"} m-1 seen: true
	// history: 1 message
}
