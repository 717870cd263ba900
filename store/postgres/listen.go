package postgres

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// listenIdle is how long the listener waits for a notification before
	// it checks that its connection is still alive.
	listenIdle = 30 * time.Second
	// listenBackoffMax caps the wait between reconnects.
	listenBackoffMax = time.Second
)

// Listen implements store.Notifier: it calls fn with the task ID of every
// notification on the store's channel (ChannelFor its schema; sent by the writes of every node on this
// database, this one included) until ctx is done, and then returns nil.
//
// It holds one connection of its own, outside the pool. When the
// connection fails it reconnects with a backoff of 100 ms doubling up to
// 1 s; notifications sent meanwhile are lost, so once it listens again it
// calls fn("") and every waiter reads the store again. An idle connection is checked every 30 s, so a
// connection that died silently is replaced.
func (s *Store) Listen(ctx context.Context, fn func(taskID string)) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		ok, err := s.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			break
		}
		if ok {
			backoff = 100 * time.Millisecond // it worked for a while: retry soon
		}
		s.log.Warn("postgres: listen for task changes: reconnecting", slog.Duration("in", backoff), slog.Any("err", err))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(2*backoff, listenBackoffMax)
	}
	return nil
}

// listenOnce connects, listens and delivers notifications until the
// connection fails or ctx is done. ok says it got as far as listening.
func (s *Store) listenOnce(ctx context.Context, fn func(string)) (ok bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.listen.Copy())
	if err != nil {
		return false, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ChannelFor(s.schema)}.Sanitize()); err != nil {
		return false, err
	}
	// What changed while no connection listened was not heard: every
	// waiter reads the store again (store.Notifier).
	fn("")
	// The waits take no context: a cancellable one costs a watcher and,
	// with the idle timeout, a timer, for each notification (decision
	// 0280). The idle timeout is the connection's read deadline instead,
	// and ctx's end moves that deadline to now.
	raw := conn.PgConn().Conn()
	stop := context.AfterFunc(ctx, func() { _ = raw.SetReadDeadline(time.Now()) })
	defer stop()
	for {
		if err := raw.SetReadDeadline(time.Now().Add(s.idle)); err != nil {
			return true, err
		}
		if ctx.Err() != nil { // ended before the deadline above was set
			return true, nil
		}
		n, err := conn.WaitForNotification(context.Background())
		switch {
		case err == nil:
			fn(n.Payload)
		case ctx.Err() != nil:
			return true, nil
		case pgconn.Timeout(err) && !conn.IsClosed():
			// Idle for s.idle: is the connection still alive?
			if err := raw.SetReadDeadline(time.Time{}); err != nil {
				return true, err
			}
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return true, err
			}
			if s.idleChecked != nil {
				s.idleChecked()
			}
		default:
			return true, err
		}
	}
}
