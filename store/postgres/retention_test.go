package postgres

import (
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
	var left int
	if err := s.pool.QueryRow(t.Context(), `SELECT count(*) FROM task_log WHERE task_id = 'done'`).Scan(&left); err != nil {
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
