package postgres

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// notifyQueue bounds the IDs waiting to be announced; past it a
	// change goes unannounced (waiters find it at their next poll).
	notifyQueue = 8192
	// notifyBatch caps the IDs announced by one statement.
	notifyBatch = 1024
	// notifyTimeout bounds the sending of one batch, its reconnect and
	// retry included.
	notifyTimeout = 5 * time.Second
)

// notifier announces committed task changes on its channel from one goroutine,
// outside the writes' transactions, batching the IDs of the writes that
// committed while the previous batch was being sent. It sends on a
// connection of its own, outside the pool, so that an announcement never
// waits for a connection behind the node's writes (decision 0270); one
// connection also keeps one store's announcements in the order of their
// writes.
type notifier struct {
	cfg     *pgx.ConnConfig
	conn    *pgx.Conn // run's own; nil until connected, and after an error
	channel string
	log     *slog.Logger
	ids     chan string
	quit    chan struct{}
	done    chan struct{}
	once    sync.Once
	// sent, when set (by this package's tests only), is called after each
	// statement with the batch, when send began, when it had a connection
	// and when the statement returned.
	sent atomic.Pointer[func(batch []string, began, conn, ended time.Time)]
}

func startNotifier(cfg *pgx.ConnConfig, channel string, log *slog.Logger) *notifier {
	n := &notifier{
		cfg: cfg, channel: channel, log: log,
		ids:  make(chan string, notifyQueue),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	go n.run()
	return n
}

// add queues id to be announced; it never blocks.
func (n *notifier) add(id string) {
	select {
	case n.ids <- id:
	default:
		n.log.Warn("postgres: change notification queue full; other nodes' waiters will find the change at their next poll", "task", id)
	}
}

// stop sends what is queued and ends the goroutine.
func (n *notifier) stop() {
	n.once.Do(func() { close(n.quit) })
	<-n.done
}

func (n *notifier) run() {
	defer close(n.done)
	defer n.disconnect()
	batch := make([]string, 0, notifyBatch)
	for {
		select {
		case id := <-n.ids:
			batch = append(batch[:0], id)
		case <-n.quit:
			for { // flush what is left, then end
				batch = n.take(batch[:0])
				if len(batch) == 0 {
					return
				}
				n.send(batch)
			}
		}
		n.send(n.take(batch))
	}
}

// take appends the queued IDs to batch, up to notifyBatch, without waiting.
func (n *notifier) take(batch []string) []string {
	for len(batch) < notifyBatch {
		select {
		case id := <-n.ids:
			batch = append(batch, id)
		default:
			return batch
		}
	}
	return batch
}

func (n *notifier) send(batch []string) {
	slices.Sort(batch)
	batch = slices.Compact(batch)
	began := time.Now()
	deadline := began.Add(notifyTimeout)
	var conn time.Time
	err := n.connect(deadline)
	for try := 0; err == nil; try++ {
		conn = time.Now()
		if err = n.notify(deadline, batch); err == nil {
			break
		}
		n.disconnect()
		if try > 0 || !time.Now().Before(deadline) {
			break
		}
		// The connection may have died while idle (a restart, a
		// terminated backend): once more on a new one.
		err = n.connect(deadline)
	}
	if err != nil {
		n.log.Warn("postgres: announce task changes; other nodes' waiters will find them at their next poll",
			slog.Int("tasks", len(batch)), slog.Any("err", err))
	}
	if f := n.sent.Load(); f != nil {
		(*f)(batch, began, conn, time.Now())
	}
}

// notify sends batch's statement on the connection by deadline. The
// statement takes no context: a cancellable one costs a watcher and a
// timer a batch (decision 0280); the deadline is the connection's, and a
// statement past it fails, after which the connection is replaced.
func (n *notifier) notify(deadline time.Time, batch []string) error {
	if err := n.conn.PgConn().Conn().SetDeadline(deadline); err != nil {
		return err
	}
	_, err := n.conn.Exec(context.Background(), `SELECT pg_notify($1, id) FROM unnest($2::text[]) AS id`, n.channel, batch)
	return err
}

// connect opens the notifier's connection unless it has one.
func (n *notifier) connect(deadline time.Time) error {
	if n.conn != nil && !n.conn.IsClosed() {
		return nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, n.cfg.Copy())
	if err != nil {
		return err
	}
	n.conn = c
	return nil
}

// disconnect closes the notifier's connection, if any.
func (n *notifier) disconnect() {
	if n.conn == nil {
		return
	}
	// A batch's deadline may have passed since: the goodbye gets its own.
	_ = n.conn.PgConn().Conn().SetDeadline(time.Time{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = n.conn.Close(ctx)
	n.conn = nil
}
