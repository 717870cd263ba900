package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/storetest"
)

// statements records every statement a store's connections run (a
// pgx.QueryTracer and pgx.BatchTracer).
type statements struct {
	mu  sync.Mutex
	sql map[string]bool
}

func (r *statements) add(sql string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql[sql] = true
}

func (r *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.add(d.SQL)
	return ctx
}

func (r *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.add(d.SQL)
}

func (r *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Every index of the schema is one some statement of the store reads by:
// an index nothing reads costs every write that changes its columns and
// the bytes of its keys for nothing. The statements are those the store
// suite makes the store run (recorded as they are sent), each planned
// generically (the plan whatever the arguments, as pgx's prepared
// statements run), in a schema of a few thousand tasks of every kind,
// analyzed, by the planner's own choices (no plan type turned off).
func TestEveryIndexIsUsed(t *testing.T) {
	rec := &statements{sql: map[string]bool{}}
	t.Run("suite", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) storetest.Open {
			url := dbtest.Schema(t)
			return func(t *testing.T) store.Store {
				s, err := OpenWith(t.Context(), url, Options{tracer: rec})
				if err != nil {
					t.Fatalf("Open() = %v, want nil", err)
				}
				return s
			}
		})
	})
	if t.Failed() {
		return
	}

	s := open(t, dbtest.Schema(t))
	seedForPlans(t, s)
	var plans strings.Builder
	explained := 0
	for q := range rec.sql {
		head := strings.ToUpper(strings.Fields(q + " x")[0])
		if !slices.Contains([]string{"SELECT", "WITH", "INSERT", "UPDATE", "DELETE"}, head) ||
			slices.ContainsFunc([]string{"schema_migrations", "pg_advisory_xact_lock", "pg_namespace", "current_schema()", "pg_notify"},
				func(s string) bool { return strings.Contains(q, s) }) {
			continue // transactions, LISTEN, the migrations, the notifier
		}
		plans.WriteString(genericPlan(t, s, q) + "\n")
		explained++
	}
	if explained < 20 {
		t.Fatalf("%d statements explained; want every statement of the store's", explained)
	}
	all := plans.String()
	indexes := queryStrings(t, s, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename <> 'schema_migrations'`)
	if len(indexes) == 0 {
		t.Fatal("the schema has no index")
	}
	for _, name := range indexes {
		if !strings.Contains(all, " "+name+" ") && !strings.Contains(all, " "+name+"\n") {
			t.Errorf("no statement of the store reads index %s", name)
		}
	}
}

// paramRef is a statement's parameter ($1, $2, ...).
var paramRef = regexp.MustCompile(`\$(\d+)`)

// beginTx begins a transaction on s for a plan helper, whose settings and
// prepared statements stay in it: the caller rolls it back.
func beginTx(t *testing.T, s *Store) pgx.Tx {
	t.Helper()
	tx, err := s.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

// genericPlan is the plan PostgreSQL makes for q whatever its arguments
// (a generic plan: the prepared statement's, as pgx's cached statements
// run), in a transaction rolled back.
func genericPlan(t *testing.T, s *Store, q string) string {
	t.Helper()
	ctx := t.Context()
	tx := beginTx(t, s)
	defer tx.Rollback(ctx)
	n := 0
	for _, m := range paramRef.FindAllStringSubmatch(q, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	nulls := strings.TrimSuffix(strings.Repeat("NULL, ", n), ", ")
	exec := "EXPLAIN EXECUTE askpoint_plan"
	if n > 0 {
		exec += "(" + nulls + ")"
	}
	var lines []string
	// A prepared statement outlives the transaction: the last step
	// deallocates it.
	for _, st := range []string{"SET LOCAL plan_cache_mode = force_generic_plan", "PREPARE askpoint_plan AS " + q, exec, "DEALLOCATE askpoint_plan"} {
		rows, err := tx.Query(ctx, st)
		if err == nil && strings.HasPrefix(st, "EXPLAIN") {
			lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		} else if err == nil {
			rows.Close()
			err = rows.Err()
		}
		if err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	return strings.Join(lines, "\n")
}

// seedForPlans writes tasks of every kind the statements read: open and
// finished ones, in several contexts, waiting on timers or runnable, with
// messages and push configurations, then has PostgreSQL analyze them.
func seedForPlans(t *testing.T, s *Store) {
	t.Helper()
	ctx := t.Context()
	states := []a2a.TaskState{a2a.TaskStateInputRequired, a2a.TaskStateInputRequired, a2a.TaskStateCompleted, a2a.TaskStateWorking}
	for i := range 2000 {
		tk := sampleTask(fmt.Sprintf("plan-%05d", i))
		tk.ContextID = fmt.Sprintf("ctx-%d", i)
		tk.State = states[i%len(states)]
		tk.Runnable = tk.State == a2a.TaskStateWorking
		tk.RequestKey = fmt.Sprintf("key-%d", i)
		if i%7 == 0 {
			tk.WakeAt = time.Now().Add(time.Duration(i) * time.Minute)
		}
		if i%50 == 0 {
			tk.HoldAt = time.Now().Add(time.Duration(i) * time.Minute)
		}
		entries := []store.LogEntry{
			{Kind: store.KindMessage, MessageID: fmt.Sprintf("m-%d", i), InHistory: true, Body: json.RawMessage(`{}`)},
			{Kind: store.KindStatus, InHistory: true, Notify: true, Body: json.RawMessage(`{}`)},
		}
		if _, err := s.CreateTask(ctx, tk, entries); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			if _, err := s.PutPushConfig(ctx, &store.PushConfig{TaskID: tk.ID, ID: "p", Config: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
}
