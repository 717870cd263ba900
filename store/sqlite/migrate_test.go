package sqlite

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// The worked example's rows as the engine writes them: a task paused on
// its question, and one completed by its answer.
const (
	exTask  = "01a237dd-8632-715d-b491-c9a18877031f"
	exCtx   = "01a237dd-8632-7174-8e2b-5c8650fd4ec0"
	exTask2 = "01a237dd-8635-7e23-a144-24654ea134b1"
	exCtx2  = "01a237dd-8635-7e2c-9a63-7ca4d6633121"

	exRequest  = `{"messageId":"01a237dd-8631-7a74-ae91-e5ad4417da08","contextId":"CTX","parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}],"role":"ROLE_USER","taskId":"TASK"}`
	exWorking  = `{"contextId":"CTX","status":{"state":"TASK_STATE_WORKING","timestamp":"2026-12-02T17:46:34.418283764Z"},"taskId":"TASK"}`
	exStatus   = `{"message":{"messageId":"01a237dd-8632-7cfb-a5cb-48c5e2bd904c","contextId":"CTX","extensions":["https://askpoint.dev/ext/question/v1"],"parts":[{"text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420."},{"data":{"answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"expires":"2026-12-03T17:46:34.419Z","options":[{"value":"CC-4410"},{"value":"CC-4420"}],"questionId":"q-0-e0a53cf87a9d"},"mediaType":"application/json"}],"role":"ROLE_AGENT","taskId":"TASK"},"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-12-02T17:46:34.418283764Z"}`
	exQuestion = `{"questionId":"q-0-e0a53cf87a9d","text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420.","expires":"2026-12-03T17:46:34.419Z","answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"options":[{"value":"CC-4410"},{"value":"CC-4420"}],"attempt":1,"maxAttempts":3}`
	exPause    = `{"asked":"2026-12-02T17:46:34.418283764Z","question":"q-0-e0a53cf87a9d","expires":"2026-12-03T17:46:34.419Z","onExpiry":"fail","fresh":"q-0-e0a53cf87a9d"}`
	exCheck    = `{"expense":{"amount":42,"currency":"EUR","date":"2026-12-01","vendor":"Taxi"},"costCentres":["CC-4410","CC-4420"]}`
	exAnswer   = `{"messageId":"01a237dd-8643-7c03-8b35-33fb36d66e4f","contextId":"CTX","parts":[{"data":{"costCentre":"CC-4410"},"mediaType":"application/json"}],"role":"ROLE_USER","taskId":"TASK"}`
	exArtifact = `{"artifactId":"01a237dd-8644-70c7-b5b0-7fb766fa4cf0","name":"expense","parts":[{"text":"Filed expense EXP-0E566DB353: 42.00 EUR on 2026-12-01 for Taxi, charged to CC-4410."},{"data":{"amount":42,"costCentre":"CC-4410","currency":"EUR","date":"2026-12-01","expenseId":"EXP-0E566DB353","vendor":"Taxi"},"mediaType":"application/json"}]}`
	exDone     = `{"message":{"messageId":"01a237dd-8644-711a-b536-2622808c3904","contextId":"CTX","parts":[{"text":"Filed expense EXP-0E566DB353: 42.00 EUR on 2026-12-01 for Taxi, charged to CC-4410."}],"role":"ROLE_AGENT","taskId":"TASK"},"state":"TASK_STATE_COMPLETED","timestamp":"2026-12-02T17:46:34.436049028Z"}`
)

// ex fills in a task's IDs.
func ex(s, task, ctx string) json.RawMessage {
	return json.RawMessage(strings.NewReplacer("TASK", task, "CTX", ctx).Replace(s))
}

// exampleTasks returns the worked example's paused task and its completed
// one, with their logs.
func exampleTasks() ([]*store.Task, [][]store.LogEntry) {
	at := time.UnixMilli(1796190394418).UTC()
	statusEntry := func(status json.RawMessage, task, ctx string) json.RawMessage {
		return ex(`{"contextId":"CTX","status":`+string(status)+`,"taskId":"TASK"}`, task, ctx)
	}
	paused := &store.Task{
		ID: exTask, ContextID: exCtx, Agent: "expense", State: a2a.TaskStateInputRequired,
		Status: ex(exStatus, exTask, exCtx), Checkpoint: ex(exCheck, exTask, exCtx), Question: ex(exQuestion, exTask, exCtx),
		Pause: ex(exPause, exTask, exCtx), WakeAt: at.Add(24 * time.Hour), CreatedAt: at, UpdatedAt: at, Version: 3, LastSeq: 3,
	}
	pausedLog := []store.LogEntry{
		{Seq: 1, Kind: store.KindMessage, MessageID: "01a237dd-8631-7a74-ae91-e5ad4417da08", InHistory: true, Body: ex(exRequest, exTask, exCtx), At: at},
		{Seq: 2, Kind: store.KindStatus, Body: ex(exWorking, exTask, exCtx), At: at},
		{Seq: 3, Kind: store.KindStatus, InHistory: true, Notify: true, Body: statusEntry(ex(exStatus, exTask, exCtx), exTask, exCtx), At: at},
	}
	later := at.Add(time.Second)
	done := &store.Task{
		ID: exTask2, ContextID: exCtx2, Agent: "expense", State: a2a.TaskStateCompleted,
		Status: ex(exDone, exTask2, exCtx2), Artifacts: json.RawMessage("[" + exArtifact + "]"),
		CreatedAt: at, UpdatedAt: later, Version: 5, LastSeq: 7,
	}
	doneLog := []store.LogEntry{
		{Seq: 1, Kind: store.KindMessage, MessageID: "01a237dd-8631-7a74-ae91-e5ad4417da08", InHistory: true, Body: ex(exRequest, exTask2, exCtx2), At: at},
		{Seq: 2, Kind: store.KindStatus, Body: ex(exWorking, exTask2, exCtx2), At: at},
		{Seq: 3, Kind: store.KindStatus, InHistory: true, Notify: true, Body: statusEntry(ex(exStatus, exTask2, exCtx2), exTask2, exCtx2), At: at},
		{Seq: 4, Kind: store.KindMessage, MessageID: "01a237dd-8643-7c03-8b35-33fb36d66e4f", InHistory: true, Body: ex(exAnswer, exTask2, exCtx2), At: later},
		{Seq: 5, Kind: store.KindStatus, Body: ex(exWorking, exTask2, exCtx2), At: later},
		{Seq: 6, Kind: store.KindArtifact, Body: ex(`{"artifact":`+exArtifact+`,"contextId":"CTX","lastChunk":true,"taskId":"TASK"}`, exTask2, exCtx2), At: later},
		{Seq: 7, Kind: store.KindStatus, InHistory: true, Notify: true, Body: statusEntry(ex(exDone, exTask2, exCtx2), exTask2, exCtx2), At: later},
	}
	return []*store.Task{paused, done}, [][]store.LogEntry{pausedLog, doneLog}
}

// A file at schema 0008 holds the rows as the store wrote them then, the
// JSON as it came; migration 0009 packs them in place, and every read
// gives back what was written: tasks, logs, history, the listing, the
// lookups by message, the push configurations.
func TestMigration0009ConvertsInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	tasks, logs := exampleTasks()
	push := json.RawMessage(`{"url":"https://hooks.example/askpoint","token":"tok-1"}`)

	db, err := sql.Open("sqlite", fileURI(path)+"?"+writerParams)
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(t.Context(), db, 8); err != nil {
		t.Fatal(err)
	}
	for i, tk := range tasks {
		if _, err := db.Exec(`INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq,
			status, artifacts, metadata, checkpoint, question, input, pause, wake_at, hold_at, runnable, created_at, updated_at)
			VALUES (?, ?, '', '', ?, ?, ?, ?, ?, ?, NULL, ?, ?, NULL, ?, ?, NULL, 0, ?, ?)`,
			tk.ID, tk.ContextID, tk.Agent, string(tk.State), tk.Version, tk.LastSeq,
			blob(tk.Status), blob(tk.Artifacts), blob(tk.Checkpoint), blob(tk.Question), blob(tk.Pause),
			nullMillisArg(tk.WakeAt), tk.CreatedAt.UnixMilli(), tk.UpdatedAt.UnixMilli()); err != nil {
			t.Fatal(err)
		}
		for _, e := range logs[i] {
			if _, err := db.Exec(`INSERT INTO task_log (task_id, seq, kind, message_id, in_history, notify, body, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
				tk.ID, e.Seq, string(e.Kind), e.MessageID, boolInt(e.InHistory), boolInt(e.Notify), []byte(e.Body), e.At.UnixMilli()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Exec(`INSERT INTO push_configs (task_id, id, config, created_at, sent_seq, target_seq, version) VALUES (?, 'hook', ?, ?, 0, 3, 1)`,
			tk.ID, []byte(push), tk.CreatedAt.UnixMilli()); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open (migrates to 0009) = %v", err)
	}
	defer s.Close()
	for i, want := range tasks {
		got, err := s.GetTask(t.Context(), want.ID)
		if err != nil {
			t.Fatal(err)
		}
		checkTask(t, got, want)
		entries, err := s.ReadLog(t.Context(), want.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, "ReadLog", entries, logs[i])
		var hist []store.LogEntry
		for _, e := range logs[i] {
			if e.InHistory {
				hist = append(hist, e)
			}
		}
		h, err := s.History(t.Context(), want.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, "History", h, hist)
		var msgID string
		for _, e := range logs[i] {
			if e.Kind == store.KindMessage {
				msgID = e.MessageID // the newest
			}
		}
		l, err := s.LoadTask(t.Context(), want.ID, store.LoadParams{MessageID: msgID, Request: true})
		if err != nil {
			t.Fatal(err)
		}
		checkTask(t, l.Task, want)
		if !bytes.Equal(l.Request, logs[i][0].Body) {
			t.Errorf("%s: LoadTask's request = %s, want %s", want.ID, l.Request, logs[i][0].Body)
		}
		if l.Message == nil {
			t.Errorf("%s: LoadTask found no message %s", want.ID, msgID)
		}
		pc, err := s.GetPushConfig(t.Context(), want.ID, "hook")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pc.Config, push) || pc.TargetSeq != 3 {
			t.Errorf("%s: push config = %s (target %d), want %s (3)", want.ID, pc.Config, pc.TargetSeq, push)
		}
	}
	page, err := s.ListTasks(t.Context(), store.ListParams{Agent: "expense", PageSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	if page.TotalSize != 2 || len(page.Tasks) != 2 || page.Tasks[0].ID != exTask2 || page.Tasks[1].ID != exTask {
		t.Fatalf("ListTasks = %d tasks of %d, want the completed one, then the paused one", len(page.Tasks), page.TotalSize)
	}
	checkTask(t, page.Tasks[0], tasks[1])
	checkTask(t, page.Tasks[1], tasks[0])

	// In place: the status is a reference into the log now.
	var n int
	if err := s.r.QueryRow(`SELECT length(status) FROM tasks WHERE id = ?`, exTask).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n > 8 {
		t.Errorf("the paused task's status takes %d bytes after the migration, want a reference (<= 8)", n)
	}
}

func checkTask(t *testing.T, got, want *store.Task) {
	t.Helper()
	for _, c := range []struct {
		name      string
		got, want json.RawMessage
	}{
		{"Status", got.Status, want.Status}, {"Artifacts", got.Artifacts, want.Artifacts},
		{"Checkpoint", got.Checkpoint, want.Checkpoint}, {"Question", got.Question, want.Question},
		{"Pause", got.Pause, want.Pause}, {"Metadata", got.Metadata, want.Metadata}, {"Input", got.Input, want.Input},
	} {
		if !bytes.Equal(c.got, c.want) {
			t.Errorf("%s: %s = %s, want %s", want.ID, c.name, c.got, c.want)
		}
	}
	if got.ContextID != want.ContextID || got.State != want.State || got.Version != want.Version || got.LastSeq != want.LastSeq ||
		!got.WakeAt.Equal(want.WakeAt) || !got.UpdatedAt.Equal(want.UpdatedAt) || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("%s: got %+v, want %+v", want.ID, got, want)
	}
}

func checkLog(t *testing.T, what string, got, want []store.LogEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.Kind != w.Kind || g.MessageID != w.MessageID || g.InHistory != w.InHistory || g.Notify != w.Notify ||
			!bytes.Equal(g.Body, w.Body) || !g.At.Equal(w.At) {
			t.Errorf("%s: entry %d = %+v\nwant %+v", what, i, g, w)
		}
	}
}

// What the store writes now reads back the same way: the worked example
// written through CreateTasks and read through every read.
func TestPackedRowsReadBack(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "new.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tasks, logs := exampleTasks()
	if err := s.CreateTasks(t.Context(), tasks, logs); err != nil {
		t.Fatal(err)
	}
	for i, want := range tasks {
		got, err := s.GetTask(t.Context(), want.ID)
		if err != nil {
			t.Fatal(err)
		}
		w := *want
		w.Version, w.CreatedAt, w.UpdatedAt = 1, got.CreatedAt, got.UpdatedAt
		checkTask(t, got, &w)
		entries, err := s.ReadLog(t.Context(), want.ID, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkLog(t, "ReadLog", entries, logs[i])
	}
}
