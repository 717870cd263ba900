package postgres

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
)

// TestUpgradeTo0009DropsTheLogsForeignKey: a schema made before migration
// 0009, with finished and open tasks and their logs, loses task_log's
// foreign key in place, keeps every row, and DeleteFinished then deletes a
// finished task's log with it (the cascade's work, now its statement's)
// and leaves the others' alone.
func TestUpgradeTo0009DropsTheLogsForeignKey(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	old := time.Now().Add(-48 * time.Hour).UnixMilli()
	olderSchema(t, url, 8,
		`INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, created_at, updated_at) VALUES
			('done', 'ctx', 'tenant', 'alice', 'echo', 'TASK_STATE_COMPLETED', 2, 2, to_timestamp(`+itoa(old)+` / 1000.0), to_timestamp(`+itoa(old)+` / 1000.0)),
			('open', 'ctx', 'tenant', 'alice', 'echo', 'TASK_STATE_INPUT_REQUIRED', 1, 2, to_timestamp(`+itoa(old)+` / 1000.0), to_timestamp(`+itoa(old)+` / 1000.0))`,
		`INSERT INTO task_log (task_id, seq, kind, in_history, body, at) VALUES
			('done', 1, 'message', true, '{}', now()), ('done', 2, 'status', true, '{}', now()),
			('open', 1, 'message', true, '{}', now()), ('open', 2, 'status', true, '{}', now())`)
	s := open(t, url)

	var keys int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_constraint WHERE conrelid = 'task_log'::regclass AND contype = 'f'`).Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if keys != 0 {
		t.Errorf("task_log has %d foreign keys after the upgrade, want none", keys)
	}
	for _, id := range []string{"done", "open"} {
		if log, err := s.ReadLog(t.Context(), id, 0, 0); err != nil || len(log) != 2 {
			t.Errorf("ReadLog(%s) after the upgrade = %d entries, %v; want its 2", id, len(log), err)
		}
	}

	if n, err := s.DeleteFinished(t.Context(), time.Now().Add(-time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("DeleteFinished() = %d, %v; want the finished task", n, err)
	}
	// The log names its task by tasks.key since 0010, and the deleted
	// task's key is gone with its row: what is left beyond the open
	// task's two entries is the deleted one's.
	var left int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) - 2 FROM task_log`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("the deleted task's log keeps %d entries, want none", left)
	}
	if log, err := s.ReadLog(t.Context(), "open", 0, 0); err != nil || len(log) != 2 {
		t.Errorf("ReadLog(open) after DeleteFinished = %d entries, %v; want its 2", len(log), err)
	}
	// The open task still takes writes; its log goes on from its seq.
	tk, err := s.GetTask(t.Context(), "open")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateTask(t.Context(), tk, []store.LogEntry{{Kind: store.KindStatus}}); err != nil {
		t.Fatalf("UpdateTask(open) = %v", err)
	}
	if log, err := s.ReadLog(t.Context(), "open", 2, 0); err != nil || len(log) != 1 || log[0].Seq != 3 {
		t.Errorf("ReadLog(open, after 2) = %+v, %v; want the entry at seq 3", log, err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestUpgradeTo0010PacksInPlace: a schema made before migration 0010,
// with tasks whose JSON columns and log bodies hold JSON text (one value
// starting with whitespace, one column NULL), becomes bytea in place:
// every value reads back byte for byte, the log's message lookup and
// History still find their entries, task_log_history is gone, and the
// task's next write packs its row against the entries it appends.
func TestUpgradeTo0010PacksInPlace(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	status := `{"state":"TASK_STATE_INPUT_REQUIRED","message":{"messageId":"q1","role":"ROLE_AGENT"}}`
	olderSchema(t, url, 9,
		`INSERT INTO tasks (id, context_id, tenant, owner, agent, state, version, last_seq, status, metadata, checkpoint, created_at, updated_at) VALUES
			('old', 'ctx', 'tenant', 'alice', 'echo', 'TASK_STATE_INPUT_REQUIRED', 2, 3, '`+status+`', E'\n {"k": "v"}', NULL, now(), now())`,
		`INSERT INTO task_log (task_id, seq, kind, message_id, in_history, body, at) VALUES
			('old', 1, 'message', 'm1', true, '{"messageId":"m1","parts":[{"text":"receipt"}]}', now()),
			('old', 2, 'status', '', false, '{"state":"TASK_STATE_WORKING"}', now()),
			('old', 3, 'status', '', true, '`+status+`', now())`)
	s := open(t, url)
	ctx := t.Context()

	types := queryStrings(t, s, `SELECT table_name || '.' || column_name || ' ' || data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type IN ('json', 'jsonb') AND table_name IN ('tasks', 'task_log')`)
	if len(types) != 0 {
		t.Errorf("JSON columns left after the upgrade: %v, want every one bytea", types)
	}
	if idx := queryStrings(t, s, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND indexname = 'task_log_history'`); len(idx) != 0 {
		t.Errorf("task_log_history is still there")
	}
	got, err := s.GetTask(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Status) != status || string(got.Metadata) != "\n {\"k\": \"v\"}" || got.Checkpoint != nil {
		t.Errorf("GetTask(old) after the upgrade: status %q, metadata %q, checkpoint %q; want them as they were", got.Status, got.Metadata, got.Checkpoint)
	}
	l, err := s.LoadTask(ctx, "old", store.LoadParams{MessageID: "m1", Request: true})
	if err != nil || string(l.Message) != `{"messageId":"m1","parts":[{"text":"receipt"}]}` || string(l.Request) != string(l.Message) {
		t.Errorf("LoadTask(old, m1) = %+v, %v; want the first entry as the message and the request", l, err)
	}
	if h, err := s.History(ctx, "old", 1); err != nil || len(h) != 1 || h[0].Seq != 3 || string(h[0].Body) != status {
		t.Errorf("History(old, 1) = %+v, %v; want the entry at seq 3 as it was", h, err)
	}

	next := *got
	next.Status = json.RawMessage(`{"state":"TASK_STATE_COMPLETED","message":{"messageId":"done","role":"ROLE_AGENT","parts":[{"text":"booked to CC-4410"}]}}`)
	next.State = "TASK_STATE_COMPLETED"
	if _, err := s.UpdateTask(ctx, &next, []store.LogEntry{{Kind: store.KindStatus, InHistory: true, Body: next.Status}}); err != nil {
		t.Fatal(err)
	}
	var stored []byte
	var ref *int64
	if err := s.pool.QueryRow(ctx, `SELECT status, ref_seq FROM tasks WHERE id = 'old'`).Scan(&stored, &ref); err != nil {
		t.Fatal(err)
	}
	if ref == nil || *ref != 4 || len(stored) >= len(next.Status)/4 {
		t.Errorf("after a write: status stored in %d bytes (of %d), ref_seq %v; want a reference to the entry at seq 4", len(stored), len(next.Status), ref)
	}
	if got, err := s.GetTask(ctx, "old"); err != nil || string(got.Status) != string(next.Status) || string(got.Metadata) != "\n {\"k\": \"v\"}" {
		t.Errorf("GetTask(old) after a write = %+v, %v; want the new status and the metadata as it was", got, err)
	}
}
