package engine

import (
	"context"
	"sync"
	"time"

	"github.com/askpoint/askpoint/store"
)

// pool is this node's worker pool: the workers that run queued steps, the
// slots that bound every step running on the node (the workers' and those
// a caller's goroutine runs, runHere and runQuick), and the steps running
// now, so that CancelTask stops one.
type pool struct {
	workers int
	queue   chan job
	slots   chan struct{}
	// steps runs the steps (Engine.runWork). A method called directly, not
	// a func value: escape analysis then keeps a quick step's work on its
	// caller's stack.
	steps  *Engine
	leases *leases
	act    *activity       // work in hand, for Idle
	wg     *sync.WaitGroup // the engine's: Stop waits for what it counts

	mu      sync.Mutex
	started bool
	stopped bool
	ctx     context.Context               // the steps' context, from start; ends at Stop
	running map[string]context.CancelFunc // task ID -> cancel of its local run
}

// job is a step queued for the worker pool.
type job struct{ w *work }

func newPool(workers int, steps *Engine, leases *leases, act *activity, wg *sync.WaitGroup) *pool {
	return &pool{
		workers: workers,
		steps:   steps,
		queue:   make(chan job, workers*64),
		slots:   make(chan struct{}, workers),
		leases:  leases,
		act:     act,
		wg:      wg,
		running: map[string]context.CancelFunc{},
	}
}

// start starts the workers and the poller that claims lapsed runs, until
// ctx ends.
func (p *pool) start(ctx context.Context) {
	p.mu.Lock()
	p.started, p.ctx = true, ctx
	p.mu.Unlock()
	for range p.workers {
		p.wg.Add(1)
		go p.worker(ctx)
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.leases.poll(ctx, p)
		p.releaseQueued() // what the poller dispatched after the workers left
	}()
}

// stop refuses every step from now on (enter is false); the steps'
// context ends when the engine cancels it.
func (p *pool) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// stopping is closed once the engine stops (nil before it starts).
func (p *pool) stopping() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx == nil {
		return nil
	}
	return p.ctx.Done()
}

// context is the steps' context (nil before start).
func (p *pool) context() context.Context {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ctx
}

// room is how many lapsed runs the poller may claim now: what the queue
// has room for, at most one per worker.
func (p *pool) room() int {
	return min(cap(p.queue)-len(p.queue), p.workers)
}

// track records the cancel of task id's local run, until untrack.
func (p *pool) track(id string, cancel context.CancelFunc) {
	p.mu.Lock()
	p.running[id] = cancel
	p.mu.Unlock()
}

// untrack forgets task id's local run.
func (p *pool) untrack(id string) {
	p.mu.Lock()
	delete(p.running, id)
	p.mu.Unlock()
}

// cancel cancels task id's local run, if one is running.
func (p *pool) cancel(id string) {
	p.mu.Lock()
	cancel := p.running[id]
	p.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// enter registers a step run outside the worker pool with the server, so
// that Stop waits for it. It is false once the server stops (or before it
// starts).
func (p *pool) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started || p.stopped {
		return false
	}
	p.wg.Add(1)
	return true
}

// runHere runs w's step in the calling goroutine when a worker slot is
// free, else queues it. It returns the task as the step left it (or as it
// was, when queued).
func (p *pool) runHere(w *work) (*store.Task, *knownLog) {
	p.act.add(1)
	defer p.act.add(-1)
	select {
	case p.slots <- struct{}{}:
	default:
		p.dispatch(w)
		return w.task, nil // the worker's from now on
	}
	defer func() { <-p.slots }()
	if !p.enter() {
		// Stopping: nothing will run it here. Give the lease up at once so
		// that the next start (or another node) takes the task over.
		p.releaseJob(job{w: w})
		return w.task, nil
	}
	defer p.wg.Done()
	t := p.steps.runWork(p.ctx, w)
	return t, w.known
}

// runQuick runs a quick step: ok when its pending write was made (the task
// is then as the step left it). When no worker slot is free or the server
// is stopping, nothing runs and ok is false; when the pending write lost,
// w.lostPending is set.
func (p *pool) runQuick(ctx context.Context, w *work) (*store.Task, bool) {
	p.act.add(1)
	defer p.act.add(-1)
	select {
	case p.slots <- struct{}{}:
	default:
		return nil, false
	}
	defer func() { <-p.slots }()
	if !p.enter() {
		return nil, false
	}
	defer p.wg.Done()
	w.caller = ctx
	final := p.steps.runWork(p.ctx, w)
	w.caller = nil
	if w.pending != nil || w.lostPending {
		return nil, false
	}
	return final, true
}

// dispatch hands w to the local worker pool. When the pool's queue is full
// the lease is released so the poller (here or on another node) takes the
// task.
func (p *pool) dispatch(w *work) {
	p.act.add(1)
	select {
	case p.queue <- job{w: w}:
	default:
		p.act.add(-1)
		p.leases.giveUp(context.Background(), w.task, "release lease of a task the queue could not take")
	}
}

func (p *pool) worker(ctx context.Context) {
	defer p.wg.Done()
	for {
		select {
		case <-ctx.Done():
			p.releaseQueued()
			return
		case j := <-p.queue:
			if ctx.Err() != nil { // stopping: select may pick a job over Done
				p.releaseJob(j)
				p.act.add(-1)
				continue
			}
			p.slots <- struct{}{}
			p.steps.runWork(ctx, j.w)
			<-p.slots
			p.act.add(-1)
		}
	}
}

// releaseQueued releases the leases of the tasks still waiting in the local
// queue when the server stops (acknowledged, never started), as execute does
// for a step it abandons, so that the next start or another node takes them
// over at once instead of after their lease lapses.
func (p *pool) releaseQueued() {
	for {
		select {
		case j := <-p.queue:
			p.releaseJob(j)
			p.act.add(-1)
		default:
			return
		}
	}
}

// releaseJob releases the lease this node took for j, unless the task has
// moved on since (then the release is a no-op conflict).
func (p *pool) releaseJob(j job) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.leases.giveUp(ctx, j.w.task, "release lease of a queued task at stop")
}
