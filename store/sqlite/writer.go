package sqlite

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/askpoint/askpoint/store"
)

// The write path: one writer goroutine owns the writer connection and
// commits the writes of concurrent callers together (group commit).
//
// A caller enqueues an op and waits. The writer takes every op waiting (up
// to maxBatch), runs them one after another in one BEGIN IMMEDIATE
// transaction, commits once (one fsync of the WAL for the whole batch under
// synchronous=FULL) and only then wakes the callers: a write is
// acknowledged only after the commit that holds it. The ops of a batch run
// in arrival order, each seeing the effects of those before it, exactly as
// if they had been committed one by one; a compare-and-set that loses
// (ErrConflict), a taken ID (ErrExists) or an unknown task (ErrNotFound)
// writes nothing and does not disturb the others. Any other error rolls the
// whole batch back, and its ops are then run again one per transaction, so
// that one op's failure is never another's.
//
// A caller whose context ends while its op is still queued withdraws it
// (the op never runs); once the writer has started an op the caller waits
// for its outcome, so an error never hides a committed write.

const (
	// maxBatch bounds the ops committed together.
	maxBatch = 256
	// queueLen is the capacity of the op queue.
	queueLen = 1024
)

// Op states.
const (
	opQueued int32 = iota
	opRunning
	opWithdrawn
)

type op struct {
	ctx   context.Context
	state atomic.Int32
	run   func(b *batch) error
	err   error
	done  chan struct{}
}

// batch is the transaction a batch runs in, on the writer's connection at
// the driver level (wconn.go).
type batch struct {
	s  *Store
	dc any // the driver connection
}

func (b *batch) stmt(i int) wstmt { return wstmt{b: b, st: b.s.wstmts[i]} }

// write runs fn in the writer's next batch and returns its error once the
// batch is committed (or rolled back).
func (s *Store) write(ctx context.Context, fn func(b *batch) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.readOnly {
		return ErrReadOnly
	}
	o := &op{ctx: ctx, run: fn, done: make(chan struct{})}
	s.closeMu.RLock()
	if s.closed {
		s.closeMu.RUnlock()
		return errClosed
	}
	select {
	case s.ops <- o:
	case <-ctx.Done():
		s.closeMu.RUnlock()
		return ctx.Err()
	}
	s.closeMu.RUnlock()
	if f := s.onQueued.Load(); f != nil {
		(*f)()
	}
	select {
	case <-o.done:
		return o.err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opWithdrawn) {
			return ctx.Err()
		}
		<-o.done // the writer has it: its outcome is the answer
		return o.err
	}
}

var errClosed = errors.New("sqlite: the store is closed")

// WriterStats returns how many transactions the writer has committed and
// how many writes they held: writes/commits is the mean size of a group
// commit.
func (s *Store) WriterStats() (commits, writes int64) {
	return s.batches.Load(), s.batchedOps.Load()
}

// writer is the writer goroutine.
func (s *Store) writer() {
	defer close(s.writerDone)
	ops := make([]*op, 0, maxBatch)
	for {
		select {
		case o := <-s.ops:
			ops = append(ops[:0], o)
		case <-s.quit:
			// Close: finish what is queued, then stop.
			for {
				select {
				case o := <-s.ops:
					s.runBatch([]*op{o})
				default:
					return
				}
			}
		}
		// Let the goroutines that are ready to run go first (Gosched puts
		// the writer behind them): under load some of them are a step
		// away from a write, which then joins this batch instead of
		// waiting out this batch's fsync and starting one of its own. On
		// an idle process nothing else is ready and it returns at once.
		if len(s.ops) < maxBatch-1 {
			runtime.Gosched()
		}
	fill:
		for len(ops) < maxBatch {
			select {
			case o := <-s.ops:
				ops = append(ops, o)
			default:
				break fill
			}
		}
		s.runBatch(ops)
		clear(ops)
	}
}

// clean says whether an op's error left nothing written: the store's
// sentinels are returned before any write.
func clean(err error) bool {
	return err == nil || errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) ||
		errors.Is(err, store.ErrLimit)
}

var errDirty = errors.New("an op failed mid-write")

func (s *Store) runBatch(ops []*op) {
	live := make([]*op, 0, len(ops))
	for _, o := range ops {
		if err := o.ctx.Err(); err != nil {
			if o.state.CompareAndSwap(opQueued, opWithdrawn) {
				o.err = err
				close(o.done)
			}
			continue
		}
		if o.state.CompareAndSwap(opQueued, opRunning) {
			live = append(live, o)
		}
		// else: withdrawn by its caller, who has returned already.
	}
	if len(live) == 0 {
		return
	}
	err := s.inTx(func(b *batch) error {
		for _, o := range live {
			o.err = o.run(b)
			if !clean(o.err) {
				return errDirty
			}
		}
		return nil
	})
	if err == nil {
		s.batches.Add(1)
		s.batchedOps.Add(int64(len(live)))
	}
	if err != nil && len(live) > 1 {
		// Roll back to one op per transaction, so that only the failing
		// op fails.
		for _, o := range live {
			o.err = s.inTx(func(b *batch) error {
				err := o.run(b)
				if err == nil {
					return nil
				}
				return &opError{err}
			})
			var oe *opError
			if errors.As(o.err, &oe) {
				o.err = oe.err
			}
			close(o.done)
		}
		return
	}
	for _, o := range live {
		if err != nil && (o.err == nil || clean(o.err)) {
			o.err = err // begin or commit failed: nothing was written
		}
		close(o.done)
	}
}

// opError carries an op's own error out of inTx (which then rolls back).
type opError struct{ err error }

func (e *opError) Error() string { return e.err.Error() }

// inTx runs fn in one immediate transaction on the writer connection and
// commits if fn returns nil; errDirty and any other error roll back.
//
// BEGIN IMMEDIATE, COMMIT and ROLLBACK are the writer's prepared
// statements: the driver's Tx parses and compiles each of them again on
// every transaction. A COMMIT that fails leaves the transaction open (a
// disk I/O error, say), so it is rolled back there, as the driver's Tx does.
func (s *Store) inTx(fn func(b *batch) error) error {
	ctx := context.Background() // one caller's cancellation must not roll back the others
	c, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		if dc != s.wdc {
			if err := s.prepareWriter(dc); err != nil {
				return fmt.Errorf("sqlite: begin: %w", err)
			}
		}
		b := &batch{s: s, dc: dc}
		if _, err := b.stmt(stmtBegin).Exec(); err != nil {
			return fmt.Errorf("sqlite: begin: %w", err)
		}
		if err := fn(b); err != nil {
			_, _ = b.stmt(stmtRollback).Exec()
			return err
		}
		if _, err := b.stmt(stmtCommit).Exec(); err != nil {
			_, _ = b.stmt(stmtRollback).Exec() // an error when COMMIT ended the transaction
			return fmt.Errorf("sqlite: commit: %w", err)
		}
		return nil
	})
}
