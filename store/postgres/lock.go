package postgres

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/keylock"
)

// Task locks (store.Locker). A lock is an in-process mutex on its key (so
// that on one node transitions of a task wait in memory, holding no
// connection), and, from a LoadTask made under it, a transaction of its
// own that holds the task's row (FOR UPDATE): every other writer of the row,
// on any node, waits for that transaction and then finds the version
// moved. The UpdateTask made under the lock is sent in that transaction
// with its COMMIT, in one round trip, and ends it. A node that dies takes
// its connection with it, and PostgreSQL rolls the transaction back; one
// that hangs loses it after idle_in_transaction_session_timeout
// (lockIdleTimeout).
//
// Locks hold at most half of the pool's connections at once (lockSlots),
// so that the rest of the pool stays free for the reads and writes of the
// steps those locks wait for. A LoadTask under a lock waits up to
// lockSlotWait for a slot, holding no connection; when none came free it
// reads as if unlocked, and the lock does not hold (Holding is false): the
// caller writes its message before it runs anything for it. (A step that
// calls this node for another task, which waits for a slot in turn, so
// never waits for more than that.)

// lockIdleTimeout is the idle_in_transaction_session_timeout the store's
// connections get unless the URL sets one: the longest a lock's
// transaction may sit idle (a quick step writes within ~100 ms) before
// PostgreSQL ends its session and releases the row.
const lockIdleTimeout = "30s"

// lockSlotWait is how long a LoadTask under a lock waits for a slot.
const lockSlotWait = 100 * time.Millisecond

// lockRowSQL takes the task's row lock for the transaction and returns the
// row's version and state. It is a statement of its own, before the read:
// under read committed, a statement that waited for another transaction's
// lock sees that transaction's change of the locked row only, not the log
// entries it appended, while the next statement reads from a snapshot
// taken after the wait. The row it returns is the newest, though: when its
// version is the one the caller keeps a copy of (LoadParams.Version), the
// read is left out, and the lock holds the row as the copy has it.
const lockRowSQL = `SELECT version, state FROM tasks WHERE id = $1 FOR UPDATE`

var _ store.Locker = (*Store)(nil)

// taskLock is the store's store.TaskLock.
type taskLock struct {
	s    *Store
	key  string
	held *keylock.Held

	mu    sync.Mutex
	conn  *pgxpool.Conn // the open transaction holding the row; nil when none
	state string        // the task's state as the transaction read it
	once  sync.Once
}

// LockTask takes key's lock (store.Locker).
func (s *Store) LockTask(key string) store.TaskLock {
	return &taskLock{s: s, key: key, held: s.locks.Take(key)}
}

// lockOf is the lock of this store ctx carries for task id, nil when none.
func (s *Store) lockOf(ctx context.Context, id string) *taskLock {
	l, ok := store.LockFrom(ctx).(*taskLock)
	if !ok || l.s != s || l.key != id {
		return nil
	}
	return l
}

// Holding reports whether the lock's transaction holds the task's row.
func (l *taskLock) Holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conn != nil
}

// load is LoadTask under the lock: it begins the lock's transaction when
// it has none (and a slot is free) and reads the row FOR UPDATE in it, in
// one round trip: three statements (begin, the row lock, the read), or,
// when the caller keeps the task at the version the lock found, two and
// store.Loaded.Unchanged. A copy that is not the task's version costs the
// read in a second round trip, from the row the lock holds.
func (l *taskLock) load(ctx context.Context, p store.LoadParams) (*store.Loaded, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.s
	if l.conn != nil {
		// The row is held already: nobody else changed the task since.
		loaded, err := s.loadFrom(l.conn.QueryRow(ctx, loadTaskSQL, l.key, p.MessageID, p.Request), l.key)
		if err != nil {
			l.endLocked() // nothing to hold, or the transaction is aborted
		} else {
			l.state = string(loaded.Task.State)
		}
		return loaded, err
	}
	if !s.takeLockSlot(ctx) {
		// Every slot stayed taken: read unlocked, and do not hold.
		return s.loadFrom(s.pool.QueryRow(ctx, loadTaskSQL, l.key, p.MessageID, p.Request), l.key)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		<-s.lockSlots
		return nil, translate("LoadTask", l.key, err)
	}
	b := &pgx.Batch{}
	b.Queue("begin")
	b.Queue(lockRowSQL, l.key)
	if p.Version == 0 {
		b.Queue(loadTaskSQL, l.key, p.MessageID, p.Request)
	}
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	var (
		version int64
		state   string
	)
	if err == nil {
		err = br.QueryRow().Scan(&version, &state)
	}
	var loaded *store.Loaded
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		err = store.ErrNotFound
	case err != nil:
		err = translate("LoadTask", l.key, err)
	case p.Version == 0:
		loaded, err = s.loadFrom(br.QueryRow(), l.key)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = translate("LoadTask", l.key, cerr)
	}
	l.conn = conn
	if err == nil && p.Version != 0 {
		if version == p.Version {
			loaded = &store.Loaded{Unchanged: true}
		} else {
			// The copy is not the task's: read it, from the row held.
			loaded, err = s.loadFrom(conn.QueryRow(ctx, loadTaskSQL, l.key, p.MessageID, p.Request), l.key)
		}
	}
	if err != nil {
		l.endLocked() // nothing to hold (no such task), or the transaction failed
	} else {
		l.state = state
	}
	return loaded, err
}

// takeLockSlot takes one of the slots of the transactions locks hold open,
// waiting at most lockSlotWait for one.
func (s *Store) takeLockSlot(ctx context.Context) bool {
	select {
	case s.lockSlots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(lockSlotWait)
	defer t.Stop()
	select {
	case s.lockSlots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// update is UpdateTask under the lock: in the lock's transaction with its
// commit when the lock holds the row (whose state, as read, nobody else
// can have changed since), else as any UpdateTask.
func (l *taskLock) update(ctx context.Context, t *store.Task, entries []store.LogEntry) (*store.Task, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return l.s.updateOn(ctx, l.s.pool, t, entries, "", false)
	}
	conn := l.conn
	l.conn = nil
	defer func() { conn.Release(); <-l.s.lockSlots }()
	return l.s.updateOn(ctx, conn, t, entries, l.state, true)
}

// endLocked rolls the lock's transaction back, if it has one, and gives
// its connection back. The caller holds l.mu.
func (l *taskLock) endLocked() {
	if l.conn == nil {
		return
	}
	conn := l.conn
	l.conn = nil
	if conn.Conn().PgConn().TxStatus() == 'T' {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = conn.Exec(ctx, "rollback") // failing, the connection is not idle and the pool closes it
		cancel()
	}
	conn.Release()
	<-l.s.lockSlots
}

// Unlock ends the lock's transaction (rolled back: the lock wrote nothing)
// and releases the in-process mutex.
func (l *taskLock) Unlock() {
	l.once.Do(func() {
		l.mu.Lock()
		l.endLocked()
		l.mu.Unlock()
		l.held.Unlock()
	})
}
