package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/storetest"
)

// TestConformance runs the store suite on a new schema per subtest; its
// multi-node cases open a second pool on the same schema, as a second node
// would.
func TestConformance(t *testing.T) {
	t.Parallel()
	dbtest.PostgresURL(t) // skip (or, in CI, fail) once, not in every subtest
	storetest.Run(t, func(t *testing.T) storetest.Open {
		url := dbtest.Schema(t)
		return func(t *testing.T) store.Store {
			s, err := Open(t.Context(), url)
			if err != nil {
				t.Fatalf("Open() = %v, want nil", err)
			}
			return s
		}
	})
}

// open opens url and closes the store when the test ends.
func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open(%s) = %v, want nil", Redact(url), err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func sampleTask(id string) *store.Task {
	return &store.Task{
		ID: id, ContextID: "ctx", Tenant: "tenant", Owner: "alice", Agent: "echo",
		State:    a2a.TaskStateWorking,
		Status:   json.RawMessage(`{"state":"TASK_STATE_WORKING"}`),
		Metadata: json.RawMessage(`{"k":"v"}`),
		Runnable: true,
	}
}

func appliedMigrations(t *testing.T, s *Store) []int {
	t.Helper()
	return queryInts(t, s, `SELECT version FROM schema_migrations ORDER BY version`)
}

// queryInts runs a query of one integer column and returns its values.
func queryInts(tb testing.TB, s *Store, sql string, args ...any) []int {
	tb.Helper()
	return queryColumn[int](tb, s, sql, args...)
}

// queryStrings runs a query of one text column and returns its values.
func queryStrings(tb testing.TB, s *Store, sql string, args ...any) []string {
	tb.Helper()
	return queryColumn[string](tb, s, sql, args...)
}

// queryColumn runs a query of one column and returns its values.
func queryColumn[T any](tb testing.TB, s *Store, sql string, args ...any) []T {
	tb.Helper()
	rows, err := s.pool.Query(tb.Context(), sql, args...)
	if err != nil {
		tb.Fatalf("%s = %v, want nil", sql, err)
	}
	vs, err := pgx.CollectRows(rows, pgx.RowTo[T])
	if err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	return vs
}

func migrationVersions(t *testing.T) []int {
	t.Helper()
	ms, err := migrations()
	if err != nil {
		t.Fatalf("migrations() = %v, want nil", err)
	}
	var vs []int
	for _, m := range ms {
		vs = append(vs, m.Version)
	}
	if len(vs) == 0 || vs[0] != 1 {
		t.Fatalf("migrations() versions = %v, want 1 first", vs)
	}
	return vs
}

// Four nodes start at once on a database that has no schema yet: one
// creates the schema and applies the migrations, the others wait on the
// advisory lock and find them applied.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	base, schema := dbtest.SchemaName(t)
	url := dbtest.WithSearchPath(t, base, schema)
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			stores[i], errs[i] = Open(t.Context(), url)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open() #%d = %v, want nil", i, err)
		}
		defer stores[i].Close()
	}
	want := migrationVersions(t)
	if got := appliedMigrations(t, stores[0]); !slices.Equal(got, want) {
		t.Errorf("schema_migrations = %v, want %v (each applied once)", got, want)
	}
	// The tables are in the schema of the URL, and every node sees them.
	if _, err := stores[1].CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	for i, s := range stores {
		if _, err := s.GetTask(t.Context(), "t1"); err != nil {
			t.Errorf("GetTask() on store #%d = %v, want nil", i, err)
		}
	}
	var inSchema bool
	if err := stores[0].pool.QueryRow(t.Context(),
		`SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'tasks')`, schema).Scan(&inSchema); err != nil {
		t.Fatal(err)
	}
	if !inSchema {
		t.Errorf("table tasks is not in schema %s", schema)
	}
}

func TestOptionsSchema(t *testing.T) {
	t.Parallel()
	base, schema := dbtest.SchemaName(t)
	s, err := OpenWith(t.Context(), base, Options{Schema: schema})
	if err != nil {
		t.Fatalf("OpenWith(Schema %s) = %v, want nil", schema, err)
	}
	defer s.Close()
	if _, err := s.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	other := open(t, dbtest.WithSearchPath(t, base, schema))
	if _, err := other.GetTask(t.Context(), "t1"); err != nil {
		t.Errorf("GetTask() through ?search_path=%s = %v, want the task", schema, err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open() = %v, want nil", err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	created, err := s.CreateTask(t.Context(), sampleTask("t1"), []store.LogEntry{
		{Kind: store.KindMessage, MessageID: "m1", InHistory: true, Body: json.RawMessage(`{"n": 1}`), At: at},
	})
	if err != nil {
		t.Fatalf("CreateTask() = %v, want nil", err)
	}
	next := *created
	next.Checkpoint = json.RawMessage(`{"b":1, "a":[2,1]}`) // kept byte for byte (json, not jsonb)
	updated, err := s.UpdateTask(t.Context(), &next, []store.LogEntry{
		{Kind: store.KindStatus, Body: json.RawMessage(`{"n":2}`), At: at.Add(time.Second)},
	})
	if err != nil {
		t.Fatalf("UpdateTask() = %v, want nil", err)
	}
	s.Close()

	s = open(t, url)
	if got := appliedMigrations(t, s); !slices.Equal(got, migrationVersions(t)) {
		t.Errorf("schema_migrations after reopen = %v, want %v", got, migrationVersions(t))
	}
	got, err := s.GetTask(t.Context(), "t1")
	if err != nil {
		t.Fatalf("GetTask() after reopen = %v, want nil", err)
	}
	if got.Version != 2 || got.LastSeq != 2 || string(got.Checkpoint) != `{"b":1, "a":[2,1]}` ||
		!got.UpdatedAt.Equal(updated.UpdatedAt) || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Errorf("GetTask() after reopen = %+v, want %+v", got, updated)
	}
	if got.CreatedAt.Location() != time.UTC || got.CreatedAt.Nanosecond()%int(time.Millisecond) != 0 {
		t.Errorf("CreatedAt = %v, want UTC to the millisecond", got.CreatedAt)
	}
	log, err := s.ReadLog(t.Context(), "t1", 0, 0)
	if err != nil {
		t.Fatalf("ReadLog() after reopen = %v, want nil", err)
	}
	if len(log) != 2 || log[0].MessageID != "m1" || !log[0].At.Equal(at) || string(log[0].Body) != `{"n": 1}` ||
		log[1].Seq != 2 || string(log[1].Body) != `{"n":2}` {
		t.Errorf("ReadLog() after reopen = %+v, want entries m1 and seq 2", log)
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	s := open(t, url)
	if _, err := s.pool.Exec(t.Context(),
		`INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(t.Context(), url)
	if err == nil {
		s2.Close()
		t.Fatalf("Open(schema from the future) = nil, want an error")
	}
	if !strings.Contains(err.Error(), "9999") {
		t.Errorf("Open(schema from the future) = %v, want it to name version 9999", err)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "askpoint.db", "mysql://x", "host=127.0.0.1 password=secret",
		"postgres://u:secret@db:notaport/x", "postgres://u@db/x?password=secret&sslmode=bogus"} {
		if s, err := Open(t.Context(), u); err == nil {
			s.Close()
			t.Errorf("Open(%q) = nil, want an error", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) = %v: the error shows the password", u, err)
		}
	}
	// Nothing listens on port 1; the password must not show.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	bad := "postgres://postgres:secret@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"
	if s, err := Open(ctx, bad); err == nil {
		s.Close()
		t.Errorf("Open(port 1) = nil, want an error")
	} else if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("Open(port 1) = %v, want an error naming the host, without the password", err)
	}
}

func TestRedactAndIsURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"},
		{"postgres://u:secret@db:5432/x", "postgres://u:xxxxx@db:5432/x"},
		{"postgresql://u@db/x?password=secret&sslmode=require", "postgresql://u@db/x?password=xxxxx&sslmode=require"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Redact("postgres://u:sec%zzret@db/x"); strings.Contains(got, "sec") {
		t.Errorf("Redact(unparseable) = %q, shows the password", got)
	}
	for s, want := range map[string]bool{
		"postgres://x": true, "postgresql://x": true, "POSTGRES://x": true,
		"askpoint.db": false, "/var/lib/askpoint.db": false, "postgres.db": false, "": false,
	} {
		if got := IsURL(s); got != want {
			t.Errorf("IsURL(%q) = %v, want %v", s, got, want)
		}
	}
}

// The statements ClaimRunnable and LoadTask run (claimSQL, loadTaskSQL,
// not copies of them) can use their indexes: the claim an ordered scan of
// the partial index tasks_claim, the messageId lookup of LoadTask the
// index task_log_message (migration 0003), so a follow-up's deduplication
// costs one lookup, not a walk of the task's log.
func TestClaimCanUsePartialIndex(t *testing.T) {
	t.Parallel()
	s := open(t, dbtest.Schema(t))
	now := ms(time.Now())
	if got := explain(t, s, claimSQL, now, 10, "node-a", now.Add(time.Minute)); !strings.Contains(got, "tasks_claim") || strings.Contains(got, "Sort") {
		t.Errorf("ClaimRunnable's plan:\n%s\nwant an ordered scan of tasks_claim without a sort", got)
	}
}

func TestLoadTaskCanUseMessageIndex(t *testing.T) {
	t.Parallel()
	s := open(t, dbtest.Schema(t))
	got := explain(t, s, loadTaskSQL, "t1", "m1", true)
	if !strings.Contains(got, "task_log_message") {
		t.Errorf("LoadTask's plan:\n%s\nwant the messageId looked up in task_log_message", got)
	}
}

// waitListening waits until a notification from w reaches ch: the
// listener is connected. It writes a probe every 100ms, since a
// notification sent before the listener was connected is lost.
func waitListening(t *testing.T, w *Store, ch <-chan string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	sent := map[string]bool{}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		id := fmt.Sprintf("probe-%d", probes.Add(1))
		sent[id] = true
		probe := sampleTask(id)
		probe.Runnable = false
		if _, err := w.CreateTask(t.Context(), probe, nil); err != nil {
			t.Fatal(err)
		}
		for waiting := true; waiting; {
			select {
			case got := <-ch:
				if sent[got] {
					return
				}
			case <-tick.C:
				waiting = false
			case <-deadline:
				t.Fatalf("no notification within 10s: the listener does not listen")
			}
		}
	}
}

var probes atomic.Int64

func expectID(t *testing.T, ch <-chan string, id, after string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-ch:
			if got == id {
				return time.Since(start)
			}
		case <-deadline:
			t.Fatalf("no notification for %s within 5s after %s", id, after)
		}
	}
}

// expectNoneBefore requires that no notification for id reaches ch before
// the one for marker, a task written after what must not notify. The
// listener reads notifications in the order their transactions committed,
// and one store announces the IDs of one batch in ID order, so a marker
// that sorts after id and is written later is heard after any
// notification for id that was sent before it. Notifications of other
// tasks are ignored.
func expectNoneBefore(t *testing.T, ch <-chan string, id, marker, what string) {
	t.Helper()
	if marker <= id {
		t.Fatalf("marker %q must sort after %q", marker, id)
	}
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-ch:
			switch got {
			case id:
				t.Errorf("notification for %s after %s, want none", got, what)
				return
			case marker:
				return
			}
		case <-deadline:
			t.Fatalf("no notification for the marker %s within 5s", marker)
		}
	}
}

// The store suite checks that every node hears every node's writes
// (Nodes/Notifier/...). This driver also keeps quiet about writes that
// change nothing a waiter looks at, and announces a write even when its
// store is closed right after.
func TestListenIgnoresWritesThatChangeNothing(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	nodeA, nodeB := open(t, url), open(t, url)
	ch := storetest.Listen(t, nodeA)
	waitListening(t, nodeB, ch)
	ctx := t.Context()

	created, err := nodeB.CreateTask(ctx, sampleTask("t1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	expectID(t, ch, "t1", "CreateTask on node B")
	claimed, err := nodeB.ClaimRunnable(ctx, store.ClaimParams{Owner: "node-b", Now: time.Now(), LeaseFor: time.Minute, Limit: 10})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimRunnable() = %v, %v, want [t1]", claimed, err)
	}
	expectID(t, ch, "t1", "ClaimRunnable on node B")

	// Losers notify no one: a stale compare-and-set, a taken ID.
	if _, err := nodeB.UpdateTask(ctx, created, nil); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("UpdateTask(stale) = %v, want %v", err, store.ErrConflict)
	}
	if _, err := nodeB.CreateTask(ctx, sampleTask("t1"), nil); !errors.Is(err, store.ErrExists) {
		t.Fatalf("CreateTask(taken) = %v, want %v", err, store.ErrExists)
	}
	// Nor does a lease extension: nothing a waiter looks at changed.
	if err := nodeB.ExtendLease(ctx, "t1", "node-b", claimed[0].Version, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	marker := sampleTask("zz-marker")
	marker.Runnable = false
	if _, err := nodeB.CreateTask(ctx, marker, nil); err != nil {
		t.Fatal(err)
	}
	expectNoneBefore(t, ch, "t1", "zz-marker", "a stale UpdateTask, a taken CreateTask and ExtendLease")

	// A store closed right after a write still announces it.
	nodeC, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodeC.CreateTask(ctx, sampleTask("t3"), nil); err != nil {
		t.Fatal(err)
	}
	nodeC.Close()
	expectID(t, ch, "t3", "CreateTask on node C and Close")
}

// The listener's connection is cut (as by a database restart or a network
// failure): it reconnects and hears writes again.
func TestListenReconnects(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	app := fmt.Sprintf("askpoint-listen-%d", time.Now().UnixNano())
	nodeA := open(t, url+"&application_name="+app)
	nodeB := open(t, url)
	ch := storetest.Listen(t, nodeA)
	waitListening(t, nodeB, ch)

	tag, err := nodeB.pool.Exec(t.Context(), `
		SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, app)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("terminated %d listening connections, want 1", tag.RowsAffected())
	}
	waitListening(t, nodeB, ch) // notifications sent while it reconnects are lost; later ones arrive
}

// The listener idles past its check several times (its read deadline
// passes, it pings, it waits again): it stays on its connection, so it
// reports no missed notifications, and still hears writes.
func TestListenIdleChecksKeepTheConnection(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	nodeA, nodeB := open(t, url), open(t, url)
	nodeA.idle = 20 * time.Millisecond
	checks := make(chan struct{}, 64)
	nodeA.idleChecked = func() {
		select {
		case checks <- struct{}{}:
		default:
		}
	}
	ch := storetest.Listen(t, nodeA)
	waitListening(t, nodeB, ch)
	for i := range 3 {
		select {
		case <-checks:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d idle checks within 10s, want 3", i)
		}
	}
	if _, err := nodeB.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case got := <-ch:
			switch got {
			case "t1":
				return
			case "":
				t.Fatal("the listener reconnected (it reported missed notifications) after idle checks")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no notification for t1 within 5s after the idle checks")
		}
	}
}

// The notifier's connection is cut while idle: the next write is still
// announced (the batch is sent again on a new connection), not left to the
// waiters' next poll.
func TestNotifierReconnectsWithoutLosingTheBatch(t *testing.T) {
	t.Parallel()
	url := dbtest.Schema(t)
	app := fmt.Sprintf("askpoint-notify-%d", time.Now().UnixNano())
	nodeA := open(t, url)
	nodeB := open(t, url+"&application_name="+app)
	ch := storetest.Listen(t, nodeA)
	waitListening(t, nodeB, ch) // the notifier has connected and sent

	tag, err := nodeA.pool.Exec(t.Context(), `
		SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity
		WHERE application_name = $1 AND query ILIKE 'SELECT pg_notify%'`, app)
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("terminated %d notifier connections, want 1", tag.RowsAffected())
	}
	if _, err := nodeB.CreateTask(t.Context(), sampleTask("t1"), nil); err != nil {
		t.Fatal(err)
	}
	expectID(t, ch, "t1", "CreateTask on node B after its notifier's connection was cut")
}

// TestNotifyWakeLatency measures how long a committed write on one node
// takes to reach the listener of another: the cross-node wake-up.
func TestNotifyWakeLatency(t *testing.T) {
	url := dbtest.Schema(t)
	nodeA, nodeB := open(t, url), open(t, url)
	ch := storetest.Listen(t, nodeA)
	waitListening(t, nodeB, ch)
	ctx := t.Context()
	cur, err := nodeB.CreateTask(ctx, sampleTask("t1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	expectID(t, ch, "t1", "CreateTask")
	const n = 200
	wake := make([]time.Duration, 0, n)  // write sent -> listener on the other node called
	write := make([]time.Duration, 0, n) // write sent -> commit acknowledged to the writer
	for range n {
		before := time.Now()
		cur, err = nodeB.UpdateTask(ctx, cur, nil)
		if err != nil {
			t.Fatal(err)
		}
		write = append(write, time.Since(before))
		expectID(t, ch, "t1", "UpdateTask")
		wake = append(wake, time.Since(before))
	}
	slices.Sort(wake)
	slices.Sort(write)
	p50, p99 := wake[n/2], wake[n*99/100]
	t.Logf("cross-node wake-up, UpdateTask sent on node B -> node A's listener called, %d writes: p50 %v, p99 %v, max %v (the write alone: p50 %v, p99 %v)",
		n, p50.Round(time.Microsecond), p99.Round(time.Microsecond), wake[n-1].Round(time.Microsecond),
		write[n/2].Round(time.Microsecond), write[n*99/100].Round(time.Microsecond))
	if p50 > 100*time.Millisecond {
		t.Errorf("median wake-up %v, want well under the poll interval", p50)
	}
}

// Stores in different schemas of one database listen on different
// channels: one deployment's writes do not wake another's waiters.
func TestSchemasDoNotWakeEachOther(t *testing.T) {
	t.Parallel()
	a, b := open(t, dbtest.Schema(t)), open(t, dbtest.Schema(t))
	if ChannelFor(a.schema) == ChannelFor(b.schema) {
		t.Fatalf("schemas %q and %q share channel %q", a.schema, b.schema, ChannelFor(a.schema))
	}
	chA, chB := storetest.Listen(t, a), storetest.Listen(t, b)
	waitListening(t, a, chA)
	waitListening(t, b, chB)
	if _, err := b.CreateTask(t.Context(), sampleTask("only-in-b"), nil); err != nil {
		t.Fatal(err)
	}
	// Heard on b's channel: sent and committed before the write below.
	expectID(t, chB, "only-in-b", "a CreateTask in its own schema")
	if _, err := a.CreateTask(t.Context(), sampleTask("zz-in-a"), nil); err != nil {
		t.Fatal(err)
	}
	expectNoneBefore(t, chA, "only-in-b", "zz-in-a", "a CreateTask in another schema")
}
