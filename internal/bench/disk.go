package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
	"github.com/askpoint/askpoint/store/sqlite"
)

// DiskResult is what MeasureDisk found: the bytes an SQLite file grows by
// per task of the worked example, paused and completed.
type DiskResult struct {
	Tasks     int   // tasks seeded of each kind
	Empty     int64 // the file with its two template tasks, bytes
	Paused    int64 // after Tasks paused tasks more
	Completed int64 // after Tasks completed tasks more again

	SeedPaused time.Duration // how long the paused tasks took to insert
}

// PausedPerTask is the bytes one paused task takes.
func (d DiskResult) PausedPerTask() float64 { return float64(d.Paused-d.Empty) / float64(d.Tasks) }

// CompletedPerTask is the bytes one completed task takes.
func (d DiskResult) CompletedPerTask() float64 {
	return float64(d.Completed-d.Paused) / float64(d.Tasks)
}

// MeasureDisk makes an SQLite file in dir, pauses one expense task through
// the engine and completes another, then adds n copies of the paused one's
// rows and n of the completed one's (every ID in them new, as seedAskpoint
// does) and measures the file after each: page count × page size once the
// WAL is checkpointed into it.
func MeasureDisk(ctx context.Context, dir string, n int) (DiskResult, error) {
	path := filepath.Join(dir, "disk.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return DiskResult{Tasks: n}, err
	}
	defer st.Close()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return DiskResult{Tasks: n}, err
	}
	defer db.Close()
	return measureDisk(ctx, st, n, func(ctx context.Context) (int64, error) { return fileBytes(ctx, db) })
}

// MeasureDiskPostgres is MeasureDisk on PostgreSQL, in a schema of its own
// in the database at url (dropped after): the size is that of the
// schema's tables with their indexes and TOAST, as PostgreSQL reports it.
func MeasureDiskPostgres(ctx context.Context, url string, n int) (DiskResult, error) {
	res := DiskResult{Tasks: n}
	pg, err := newPGScratch(url)
	if err != nil {
		return res, err
	}
	defer pg.drop(context.WithoutCancel(ctx))
	st, err := postgres.Open(ctx, pg.url)
	if err != nil {
		return res, err
	}
	defer st.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return measureDisk(ctx, st, n, func(ctx context.Context) (int64, error) {
		var size int64
		err := conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
			FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = $1 AND c.relkind IN ('r', 'm')`, pg.schema).Scan(&size)
		return size, err
	})
}

// measureDisk seeds st as MeasureDisk says, measuring it with size.
func measureDisk(ctx context.Context, st store.Store, n int, size func(context.Context) (int64, error)) (DiskResult, error) {
	res := DiskResult{Tasks: n}
	srv, err := askpoint.NewServer(askpoint.Config{Store: st})
	if err != nil {
		return res, err
	}
	if err := srv.Register(askpoint.AgentSpec{Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil), Card: expense.Card()}); err != nil {
		return res, err
	}
	if err := srv.Start(ctx); err != nil {
		return res, err
	}
	stopped := false
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		return srv.Stop(sctx)
	}
	defer stop()
	h, ok := srv.RequestHandler("expense")
	if !ok {
		return res, errors.New("no expense agent")
	}
	paused, err := pauseOne(ctx, h)
	if err != nil {
		return res, err
	}
	done, err := pauseOne(ctx, h)
	if err != nil {
		return res, err
	}
	if err := completeOne(ctx, h, done); err != nil {
		return res, err
	}
	// The engine's sweeps read the store while it runs: it is done with
	// once the two templates are, so that nothing but the seeding touches
	// the store.
	if err := stop(); err != nil {
		return res, err
	}
	if res.Empty, err = size(ctx); err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := seedCopies(ctx, st, paused, n); err != nil {
		return res, fmt.Errorf("seed paused tasks: %w", err)
	}
	res.SeedPaused = time.Since(t0)
	if res.Paused, err = size(ctx); err != nil {
		return res, err
	}
	if err := seedCopies(ctx, st, done, n); err != nil {
		return res, fmt.Errorf("seed completed tasks: %w", err)
	}
	if res.Completed, err = size(ctx); err != nil {
		return res, err
	}
	return res, nil
}

// pauseOne sends the receipt and returns the paused task's ID.
func pauseOne(ctx context.Context, h a2asrv.RequestHandler) (string, error) {
	res, err := h.SendMessage(ctx, &a2a.SendMessageRequest{Message: receiptMessage()})
	if err != nil {
		return "", err
	}
	t, ok := res.(*a2a.Task)
	if !ok || t.Status.State != a2a.TaskStateInputRequired {
		return "", fmt.Errorf("got %T, want a task in input-required", res)
	}
	return string(t.ID), nil
}

// completeOne answers the paused task id as the bench's callers do.
func completeOne(ctx context.Context, h a2asrv.RequestHandler, id string) error {
	p := a2a.NewDataPart(map[string]any{"costCentre": "CC-4410"})
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = a2a.TaskID(id)
	res, err := h.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		return err
	}
	if t, ok := res.(*a2a.Task); !ok || t.Status.State != a2a.TaskStateCompleted {
		return fmt.Errorf("answer: got %T, want a completed task", res)
	}
	return nil
}

// anID is what the engine and the SDK write as an ID: a UUID, or a
// time-ordered task ID (decision 0017), bare or after a prefix.
var anID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9A-Za-z]{20,32}`)

// seedCopies inserts n copies of task id's row and log, each with every
// ID of the template replaced by a new one of the same shape.
func seedCopies(ctx context.Context, st store.Store, id string, n int) error {
	tmpl, err := st.GetTask(ctx, id)
	if err != nil {
		return err
	}
	log, err := st.ReadLog(ctx, id, 0, 0)
	if err != nil {
		return err
	}
	ids := map[string]bool{tmpl.ID: true, tmpl.ContextID: true}
	for _, b := range [][]byte{tmpl.Status, tmpl.Question, tmpl.Checkpoint, tmpl.Input, tmpl.Pause, tmpl.Artifacts, tmpl.Metadata} {
		for _, m := range anID.FindAll(b, -1) {
			ids[string(m)] = true
		}
	}
	for _, e := range log {
		if e.MessageID != "" {
			ids[e.MessageID] = true
		}
		for _, m := range anID.FindAll(e.Body, -1) {
			ids[string(m)] = true
		}
	}
	const batch = 2000
	for done := 0; done < n; {
		size := min(batch, n-done)
		tasks, logs := make([]*store.Task, size), make([][]store.LogEntry, size)
		for i := range size {
			var r replacer
			for old := range ids {
				r = append(r, pair{[]byte(old), []byte(newLike(old))})
			}
			c, es := r.clone(tmpl, log)
			// Reads do not return the request key the engine wrote: a
			// new one of its kind (a name-based UUID, in no order), as
			// every task has.
			c.RequestKey = uuid.NewSHA1(uuid.NameSpaceOID, []byte(c.ID)).String()
			tasks[i], logs[i] = c, es
		}
		var err error
		if bulk, ok := st.(bulkCreator); ok {
			err = bulk.CreateTasks(ctx, tasks, logs)
		} else {
			err = createEach(ctx, st, tasks, logs)
		}
		if err != nil {
			return err
		}
		done += size
	}
	return nil
}

// newLike returns a new ID of the shape of old: a task ID for a task ID,
// a UUID for a UUID, random letters and digits otherwise.
func newLike(old string) string {
	switch {
	case len(old) == 36 && old[8] == '-':
		return a2a.NewMessageID()
	case len(old) == len(a2a.NewTaskID()) && old[0] != 'q':
		return string(a2a.NewTaskID())
	}
	return old[:len(old)-len(randomID())] + randomID()
}

// fileBytes checkpoints the WAL into the file and returns its size in
// pages × page size.
func fileBytes(ctx context.Context, db *sql.DB) (int64, error) {
	var busy, logPages, moved, pages, size int64
	// A reader of the store's pool may still hold the snapshot of its
	// last read for a moment: a few tries, a few milliseconds apart.
	for try := 0; ; try++ {
		if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &moved); err != nil {
			return 0, fmt.Errorf("checkpoint: %w", err)
		}
		if busy == 0 {
			break
		}
		if try == 50 {
			return 0, errors.New("checkpoint: the WAL is busy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := db.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		return 0, err
	}
	if err := db.QueryRowContext(ctx, `PRAGMA page_size`).Scan(&size); err != nil {
		return 0, err
	}
	return pages * size, nil
}
