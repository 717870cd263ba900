package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// runInput is the work a runnable task owes, committed with the write that
// made it runnable (so a crash between acknowledgement and run loses
// nothing).
type runInput struct {
	Kind     string             `json:"kind"` // start | answer | auth
	Key      string             `json:"key"`  // the step's idempotency key
	Message  *a2a.Message       `json:"message,omitempty"`
	Question *question.Question `json:"question,omitempty"`
	Answer   *question.Answer   `json:"answer,omitempty"`
	AuthData json.RawMessage    `json:"authData,omitempty"`
	// Holds are what the task held while paused, handed back to the step.
	Holds []HoldStatus `json:"holds,omitempty"`
	// Expired: Answer is the agent's default, applied at the expiry.
	Expired bool `json:"expired,omitempty"`
	// Event: what Server.Wake was given.
	Event json.RawMessage `json:"event,omitempty"`
	// Attempt counts the step's failed tries so far (see faults.go).
	Attempt int `json:"attempt,omitempty"`
	// Trace is the traceparent of the request that asked the question
	// this input resumes from (pauseState.Trace), "" when none.
	Trace string `json:"trace,omitempty"`

	// paused is the pause state resumeRow decoded from the row paused,
	// so that the commit's observer reads the question's kind and age
	// without decoding it again; nil when the input was not built so.
	paused    *pauseState
	pausedRow *store.Task
}

const (
	inputStart  = "start"
	inputAnswer = "answer"
	inputAuth   = "auth"
	inputEvent  = "event"
)

// resumeRow builds the write that resumes a paused task with in: the task
// becomes working and runnable under this node's lease, and gets back what
// it held. msg, when not nil, is the caller's message, appended to the
// history; note, when not empty, is a status message saying why the task
// resumed (for people and push receivers).
func (s *Engine) resumeRow(t *store.Task, in *runInput, msg *a2a.Message, note string) (*store.Task, []store.LogEntry, error) {
	now := s.now()
	p, err := decodePause(t)
	if err != nil {
		return nil, nil, errInternal(err)
	}
	in.Holds = holdsOnResume(p, now)
	in.Trace = p.Trace
	in.paused, in.pausedRow = p, t
	next := *t
	next.Pause, next.WakeAt, next.HoldAt = nil, time.Time{}, time.Time{}
	keepDigest(&next, p.WakeDigest)
	next.Input = nil // written by withInput when the row is written before its step ends
	next.Question = nil
	next.Runnable = true
	next.LeaseOwner = s.cfg.NodeID
	next.LeaseUntil = now.Add(s.cfg.LeaseDuration)
	entries := make([]store.LogEntry, 0, 2)
	if msg != nil {
		e, err := messageEntry(msg, now)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, e)
	}
	var status *a2a.Message
	if note != "" {
		status = agentMessage(&next, note)
	}
	st, e, err := statusEntry(&next, a2a.TaskStateWorking, status, now)
	if err != nil {
		return nil, nil, err
	}
	e.Notify = note != ""
	next.State, next.Status = a2a.TaskStateWorking, st
	entries = append(entries, e)
	return &next, entries, nil
}

// work is a step this node owes: the row it starts from (committed, or to
// be written with the step's first write when pending is set), its input,
// and the task's request when the caller has it at hand.
type work struct {
	task    *store.Task
	in      *runInput // nil: decoded from task.Input
	request *a2a.Message
	// pending is the write of the message that made the step owed, for a
	// quick step: it goes with the step's first write (its outcome, or the
	// working status when the step takes longer than workingAfter).
	pending *pendingWrite
	// lostPending: the pending write lost (the ID was taken, or the task
	// changed first): nothing of the step was written.
	lostPending bool
	// pendingErr is why the pending write failed, when it did.
	pendingErr error
	// lock is the task's lock a pending write is made under (the store
	// holds the task for it: store.WithLock); unlock, when set, releases
	// the locks taken for the step once the pending write is made: from
	// then on the step runs under its lease like any other.
	lock   store.TaskLock
	unlock func()
	// known is the end of the task's log as this node wrote it, so that a
	// reply is built without reading back what was just written.
	known *knownLog
	// trace is the traceparent of the request that made the step owed,
	// "" when none is recorded.
	trace string
	// caller is the context of the request running the work quick, while
	// runQuick runs it (for the observer); nil otherwise.
	caller context.Context
}

// knownLog is the newest entries of a task's log, as written by this node
// up to version (nothing else wrote the task in between: every write was a
// compare-and-set on the one before). fromStart: they are the whole log.
type knownLog struct {
	entries   []store.LogEntry
	fromStart bool
	version   int64
	// noPriorArtifacts: the task had no artifacts before entries, so
	// theirs are all it has.
	noPriorArtifacts bool
}

// status is t's status from the newest status entry known, ok false when
// none is known.
func (k *knownLog) status(t *store.Task) (a2a.TaskStatus, bool) {
	e, ok := k.statusEntry(t)
	if !ok {
		return a2a.TaskStatus{}, false
	}
	ts := e.At
	return a2a.TaskStatus{State: t.State, Message: e.Message, Timestamp: &ts}, true
}

// statusEntry is the newest status entry known of t.
func (k *knownLog) statusEntry(t *store.Task) (store.LogEntry, bool) {
	if k == nil || k.version != t.Version {
		return store.LogEntry{}, false
	}
	for i := len(k.entries) - 1; i >= 0; i-- {
		if e := k.entries[i]; e.Kind == store.KindStatus {
			return e, true
		}
	}
	return store.LogEntry{}, false
}

// artifacts are t's artifacts when every one of them is known (whole, not
// chunked).
func (k *knownLog) artifacts(t *store.Task) ([]*a2a.Artifact, bool) {
	if k == nil || k.version != t.Version || !(k.fromStart || k.noPriorArtifacts) {
		return nil, false
	}
	var out []*a2a.Artifact
	for _, e := range k.entries {
		if e.Kind != store.KindArtifact {
			continue
		}
		if e.Artifact == nil {
			return nil, false // a chunk: what the task holds is read
		}
		out = append(out, e.Artifact)
	}
	return out, len(out) > 0
}

// freshHistory is what a task's log is known to hold before an answer to
// its open question: its request and the question (see pauseState.Fresh),
// nil when that is not known.
// open is the task's open question's ID (openQuestionID); asked, when not
// nil, is the message of t's status as this node wrote it (rowCache).
// paused, when not nil, is t's pause state already decoded.
func freshHistory(t *store.Task, open string, request, asked *a2a.Message, paused *pauseState) *knownLog {
	if request == nil || len(t.Pause) == 0 || open == "" {
		return nil
	}
	fresh := ""
	if paused != nil {
		fresh = paused.Fresh
	} else {
		var p struct {
			Fresh string `json:"fresh"`
		}
		if json.Unmarshal(t.Pause, &p) != nil {
			return nil
		}
		fresh = p.Fresh
	}
	if fresh == "" || fresh != open {
		return nil
	}
	if asked == nil {
		var st a2a.TaskStatus
		if json.Unmarshal(t.Status, &st) != nil || st.Message == nil {
			return nil
		}
		asked = st.Message
	}
	return &knownLog{fromStart: true, noPriorArtifacts: len(t.Artifacts) == 0, entries: []store.LogEntry{
		{Kind: store.KindMessage, InHistory: true, Message: request},
		{Kind: store.KindStatus, InHistory: true, Message: asked},
	}}
}

// clone is a copy of k the caller may extend on its own.
func (k *knownLog) clone() *knownLog {
	if k == nil {
		return nil
	}
	c := *k
	c.entries = append([]store.LogEntry(nil), k.entries...)
	return &c
}

// add records a write of entries that made version.
func (k *knownLog) add(entries []store.LogEntry, version int64) *knownLog {
	if k == nil {
		k = &knownLog{}
	}
	if len(k.entries) == 0 {
		k.entries = slices.Clip(entries) // shared: an append copies
	} else {
		k.entries = append(k.entries, entries...)
	}
	k.version = version
	return k
}

// history returns the task's history (its last last entries, all when last
// is negative) from what is known, ok false when that needs a read.
func (k *knownLog) history(t *store.Task, last int) ([]store.LogEntry, bool) {
	if k == nil || k.version != t.Version {
		return nil, false
	}
	n := 0
	for _, e := range k.entries {
		if e.InHistory {
			n++
		}
	}
	hist := make([]store.LogEntry, 0, n)
	for _, e := range k.entries {
		if e.InHistory {
			hist = append(hist, e)
		}
	}
	switch {
	case last >= 0 && len(hist) >= last:
		return hist[len(hist)-last:], true
	case k.fromStart:
		return hist, true
	}
	return nil, false
}

type pendingWrite struct {
	create  bool
	entries []store.LogEntry
	// from is the task as loaded before the message (nil for a new one).
	from *store.Task
}

// job is a step queued for the worker pool.
type job struct{ w *work }

// quickSteps reports whether this node runs a blocking call's step before
// its message is written (see send.go): only on a store whose task locks
// hold every transition that could race it (store.Locker), on every node.
func (s *Engine) quickSteps() bool { return s.locker != nil && !s.cfg.DisableQuickSteps }

// serialised reports whether the store is this process's alone
// (SingleNode), so that the rows this node wrote are the store's.
func (s *Engine) serialised() bool {
	sn, ok := s.store.(interface{ SingleNode() bool })
	return ok && sn.SingleNode()
}

// enter registers a step run outside the worker pool with the server, so
// that Stop waits for it. It is false once the server stops (or before it
// starts).
func (s *Engine) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started || s.stopped {
		return false
	}
	s.wg.Add(1)
	return true
}

// runHere runs w's step in the calling goroutine when a worker slot is
// free, else queues it. It returns the task as the step left it (or as it
// was, when queued).
func (s *Engine) runHere(w *work) (*store.Task, *knownLog) {
	s.act.add(1)
	defer s.act.add(-1)
	select {
	case s.slots <- struct{}{}:
	default:
		s.dispatch(w)
		return w.task, nil // the worker's from now on
	}
	defer func() { <-s.slots }()
	if !s.enter() {
		// Stopping: nothing will run it here. Give the lease up at once so
		// that the next start (or another node) takes the task over.
		s.releaseJob(job{w: w})
		return w.task, nil
	}
	defer s.wg.Done()
	t := s.runWork(s.runCtx, w)
	return t, w.known
}

// runQuick runs a quick step: ok when its pending write was made (the task
// is then as the step left it). When no worker slot is free or the server
// is stopping, nothing runs and ok is false; when the pending write lost,
// w.lostPending is set.
func (s *Engine) runQuick(ctx context.Context, w *work) (*store.Task, bool) {
	s.act.add(1)
	defer s.act.add(-1)
	select {
	case s.slots <- struct{}{}:
	default:
		return nil, false
	}
	defer func() { <-s.slots }()
	if !s.enter() {
		return nil, false
	}
	defer s.wg.Done()
	w.caller = ctx
	final := s.runWork(s.runCtx, w)
	w.caller = nil
	if w.pending != nil || w.lostPending {
		return nil, false
	}
	return final, true
}

// withInput encodes in into t's pending input, for a write that leaves the
// task runnable (a takeover reads it). A quick step whose outcome is
// written with its message never encodes it.
func withInput(t *store.Task, in *runInput) error {
	if !t.Runnable || len(t.Input) > 0 || in == nil {
		return nil
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return errInternal(fmt.Errorf("encode the pending input of task %s: %w", t.ID, err))
	}
	t.Input = raw
	return nil
}

// dispatch hands w to the local worker pool. When the pool's queue is full
// the lease is released so the poller (here or on another node) takes the
// task.
func (s *Engine) dispatch(w *work) {
	s.act.add(1)
	select {
	case s.queue <- job{w: w}:
	default:
		s.act.add(-1)
		err := s.extendLease(context.Background(), w.task.ID, w.task.Version, time.Time{})
		if err != nil && !errors.Is(err, store.ErrConflict) {
			s.log.Warn("release lease of a task the queue could not take", slog.String("task", w.task.ID), slog.String("agent", w.task.Agent), slog.Any("err", err))
		}
	}
}

func (s *Engine) worker(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case <-ctx.Done():
			s.releaseQueued()
			return
		case j := <-s.queue:
			if ctx.Err() != nil { // stopping: select may pick a job over Done
				s.releaseJob(j)
				s.act.add(-1)
				continue
			}
			s.slots <- struct{}{}
			s.runWork(ctx, j.w)
			<-s.slots
			s.act.add(-1)
		}
	}
}

// releaseQueued releases the leases of the tasks still waiting in the local
// queue when the server stops (acknowledged, never started), as execute does
// for a step it abandons, so that the next start or another node takes them
// over at once instead of after their lease lapses.
func (s *Engine) releaseQueued() {
	for {
		select {
		case j := <-s.queue:
			s.releaseJob(j)
			s.act.add(-1)
		default:
			return
		}
	}
}

// releaseJob releases the lease this node took for j, unless the task has
// moved on since (then the release is a no-op conflict).
func (s *Engine) releaseJob(j job) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t := j.w.task
	err := s.extendLease(ctx, t.ID, t.Version, time.Time{})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.log.Warn("release lease of a queued task at stop", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
	}
}

// poller claims runnable tasks whose lease lapsed: runs left by a crashed
// or stopped node, or work the queue could not take. The claim query is
// indexed on the lease of runnable tasks, so it costs O(runnable), not
// O(paused).
func (s *Engine) poller(ctx context.Context) {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	for {
		s.claimLapsed(ctx)
		select {
		case <-ctx.Done():
			s.releaseQueued() // what this poller dispatched after the workers left
			return
		case <-tick.C:
		}
	}
}

func (s *Engine) claimLapsed(ctx context.Context) {
	free := cap(s.queue) - len(s.queue)
	if free <= 0 {
		return
	}
	tasks, err := s.store.ClaimRunnable(ctx, store.ClaimParams{
		Owner: s.cfg.NodeID, Now: s.now(), LeaseFor: s.cfg.LeaseDuration, Limit: min(free, s.cfg.Workers),
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("claim runnable tasks", slog.Any("err", err))
		}
		return
	}
	for _, t := range tasks {
		s.rows.drop(t.ID) // the claim moved its version
		s.log.Info("taking over a task whose run lapsed", slog.String("task", t.ID), slog.String("state", string(t.State)))
		s.event(ctx, t.Agent, EventLeaseTakeover)
		s.dispatch(&work{task: t})
	}
}

// run is one step of one task on this node.
type run struct {
	s     *Engine
	mu    sync.Mutex
	task  *store.Task // the latest version this run wrote or claimed
	lost  bool
	agent string
	// owesWorking: the task has not been written as working yet; the next
	// write of this run does it (see workingAfter).
	owesWorking bool
	// pending: a quick step's message, written with the run's first write
	// (nil once written); lostPending: that write lost.
	pending     *pendingWrite
	lostPending bool
	pendingErr  error
	lock        store.TaskLock
	unlock      func()
	known       *knownLog
	in          *runInput // the step's input, encoded when a pending write leaves the task runnable
}

// historyIsRequest reports whether this run knows the task's whole log
// and its history is the request alone. The caller holds r.mu.
func (r *run) historyIsRequest() bool {
	k := r.known
	if k == nil || !k.fromStart {
		return false
	}
	n := 0
	for _, e := range k.entries {
		if e.InHistory {
			n++
		}
	}
	if r.pending != nil {
		for _, e := range r.pending.entries {
			if e.InHistory {
				n++
			}
		}
	}
	return n == 1
}

// latest is the last version of the task this run wrote or started from.
func (r *run) latest() *store.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.task
}

// workingAfter is how long a step that starts a task may run before the
// task is written as working on its own. A step that writes sooner
// (progress, an artifact, its outcome) carries the working status in that
// write instead, in the same place in the log: streams and the history see
// the same events in the same order, and a quick step (an agent that asks
// or answers at once) costs one commit instead of two.
const workingAfter = 100 * time.Millisecond

// runWork runs w's step on this node and returns the task as the step
// left it: the last version it wrote (or w.task when it wrote nothing).
func (s *Engine) runWork(ctx context.Context, w *work) *store.Task {
	t := w.task
	r := &run{s: s, task: t, agent: t.Agent, pending: w.pending, lock: w.lock, unlock: w.unlock, known: w.known}
	if w.pending != nil && w.known == nil {
		r.known = &knownLog{fromStart: w.pending.create, noPriorArtifacts: len(t.Artifacts) == 0}
	}
	defer func() {
		r.mu.Lock()
		w.pending, w.lostPending, w.pendingErr = r.pending, r.lostPending, r.pendingErr
		w.known = r.known
		if r.lost {
			w.known = nil
		}
		r.mu.Unlock()
	}()

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.running[t.ID] = cancel
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.running, t.ID)
		s.mu.Unlock()
	}()

	in := w.in
	if in == nil {
		in = &runInput{}
		if err := json.Unmarshal(t.Input, in); err != nil {
			r.finish(ctx, Fail("the task's pending input could not be read: "+err.Error()), nil)
			return r.latest()
		}
	}
	r.in = in
	entry := s.agentByName(t.Agent)
	if entry == nil {
		r.finish(ctx, Fail(fmt.Sprintf("no agent named %q is served here any more", t.Agent)), nil)
		return r.latest()
	}
	if t.State != a2a.TaskStateWorking || r.pending != nil {
		// The task moves to working (and a quick step's message is written)
		// with the step's first write (progress, an artifact, or its
		// outcome), or on its own if the step is still running after
		// workingAfter: a quick step costs one write, not two.
		r.mu.Lock()
		r.owesWorking = t.State != a2a.TaskStateWorking
		r.mu.Unlock()
		timer := time.AfterFunc(workingAfter, func() { r.writeWorking(runCtx) })
		defer func() {
			timer.Stop()
			r.mu.Lock()
			r.owesWorking = false
			r.mu.Unlock()
		}()
	}

	call, res, err := s.buildCall(ctx, r, in, w.request)
	if err != nil {
		if store.IsTransient(err) {
			r.finish(context.WithoutCancel(ctx), Outcome{}, err) // tried again like a step's error
			return r.latest()
		}
		s.log.Error("prepare a step", slog.String("task", t.ID), slog.Any("err", err))
		r.finish(ctx, Fail("The task's pending work could not be read; the cause is in the server's log."), nil)
		return r.latest()
	}

	stepCtx, endSpan := runCtx, func(error) {}
	if s.obs != nil {
		stepCtx, endSpan = s.obs.StartStep(runCtx, StepInfo{TaskID: t.ID, ContextID: t.ContextID, Agent: t.Agent, Parent: w.trace, Link: in.Trace, Request: w.caller})
	}
	stopBeat := r.heartbeat(runCtx, cancel)
	outcome, stepErr := safeStep(stepCtx, entry.agent, call, res)
	stopBeat()
	endSpan(stepErr)

	if ctx.Err() != nil && stepErr != nil {
		// The server is stopping and cut the step short: leave the work
		// owed and let the next start (or another node) take it over at
		// once. The step's key makes the rerun's side effects safe.
		r.release()
		return r.latest()
	}
	if ctx.Err() == nil && runCtx.Err() != nil && stepErr != nil {
		return r.latest() // canceled by CancelTask; the cancel already wrote the outcome
	}
	// A step that finished is written even while the server stops (with
	// the step's span, so that a question it asks links back to it).
	r.finish(context.WithoutCancel(stepCtx), outcome, stepErr)
	return r.latest()
}

func (s *Engine) agentByName(name string) *agentEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agents[name]
}

func (s *Engine) buildCall(ctx context.Context, r *run, in *runInput, request *a2a.Message) (*Call, *Resumption, error) {
	t := r.latest() // the working-status timer may be writing r.task
	call := &Call{
		TaskID: t.ID, ContextID: t.ContextID, Tenant: t.Tenant, Principal: t.Owner,
		Message: in.Message, Key: in.Key, Holds: in.Holds, Expired: in.Expired, run: r,
		wake: s, agent: t.Agent, task: t.ID,
	}
	if in.Kind == inputStart {
		call.Request = in.Message
		call.OnBehalfOf = s.onBehalfOf(t.Owner, call.Request)
		return call, nil, nil
	}
	call.Request = request
	if request == nil {
		first, err := s.store.ReadLog(ctx, t.ID, 0, 1)
		if err != nil {
			return nil, nil, fmt.Errorf("read the task's request: %w", err)
		}
		if len(first) == 1 && first[0].Kind == store.KindMessage {
			var m a2a.Message
			if err := json.Unmarshal(first[0].Body, &m); err == nil {
				call.Request = &m
			}
		}
	}
	call.OnBehalfOf = s.onBehalfOf(t.Owner, call.Request)
	res := &Resumption{Checkpoint: t.Checkpoint}
	switch in.Kind {
	case inputAnswer:
		res.Question, res.Answer = in.Question, in.Answer
	case inputAuth:
		res.Auth = &AuthArrival{Message: in.Message, Data: in.AuthData}
	case inputEvent:
		res.Event = in.Event
		if res.Event == nil {
			res.Event = json.RawMessage("null")
		}
	default:
		return nil, nil, fmt.Errorf("unknown pending input kind %q", in.Kind)
	}
	return call, res, nil
}

func safeStep(ctx context.Context, agent Agent, call *Call, res *Resumption) (o Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the agent panicked: %v\n%s", p, debug.Stack())
		}
	}()
	if res == nil {
		return agent.Start(ctx, call)
	}
	return agent.Resume(ctx, call, res)
}

// heartbeat renews the run's lease until the returned stop is called. When
// the store cannot be reached past the lease's end, another node may have
// taken the task over: the run no longer holds it and the step's context
// (cancelStep) is canceled, so that a step that cannot be fenced stops.
func (r *run) heartbeat(ctx context.Context, cancelStep context.CancelFunc) (stop func()) {
	// Most steps end long before the first renewal is due: nothing runs
	// for them but a timer, and the renewing goroutine starts only when
	// the first renewal is.
	b := &beat{r: r, ctx: ctx, cancelStep: cancelStep, every: r.s.cfg.LeaseDuration / 3}
	b.timer = time.AfterFunc(b.every, b.run)
	return b.stop
}

// beat is a run's lease renewal (heartbeat).
type beat struct {
	r          *run
	ctx        context.Context
	cancelStep context.CancelFunc
	every      time.Duration
	timer      *time.Timer

	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc // set once the renewals started
	done    chan struct{}
}

func (b *beat) stop() {
	b.timer.Stop()
	b.mu.Lock()
	b.stopped = true
	cancel, done := b.cancel, b.done
	b.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// run renews the lease now (the first renewal is due) and then every
// b.every, until stop.
func (b *beat) run() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(b.ctx)
	b.cancel, b.done = cancel, make(chan struct{})
	b.mu.Unlock()
	defer close(b.done)
	r := b.r
	tick := time.NewTicker(b.every)
	defer tick.Stop()
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		t := r.task
		lost, pending := r.lost, r.pending != nil
		r.mu.Unlock()
		if lost {
			return
		}
		if pending {
			continue // nothing written yet: no lease to renew
		}
		until := r.s.now().Add(r.s.cfg.LeaseDuration)
		if err := r.s.extendLease(ctx, t.ID, t.Version, until); err != nil {
			if errors.Is(err, store.ErrConflict) {
				r.mu.Lock()
				r.lost = true
				r.mu.Unlock()
				return
			}
			if ctx.Err() == nil {
				r.s.log.Warn("renew lease", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
			}
			if ctx.Err() == nil && !t.LeaseUntil.IsZero() && r.s.now().After(t.LeaseUntil) {
				r.mu.Lock()
				r.lost = true
				r.mu.Unlock()
				r.s.log.Warn("the lease lapsed while the store could not be reached; the step is stopped and left to whoever claims the task",
					slog.String("task", t.ID), slog.Time("leaseUntil", t.LeaseUntil))
				b.cancelStep()
				return
			}
			continue
		}
		r.mu.Lock()
		if r.task == t {
			tt := *t
			tt.LeaseUntil = until
			r.task = &tt
		}
		r.mu.Unlock()
	}
}

func (r *run) release() {
	r.mu.Lock()
	t, pending := r.task, r.pending != nil
	r.mu.Unlock()
	if pending {
		return // nothing was written: nothing holds a lease
	}
	_ = r.s.extendLease(context.Background(), t.ID, t.Version, time.Time{})
}

// errLost says the run no longer holds its task.
var errLost = errors.New("askpoint: the task is no longer this run's (canceled or taken over)")

// update writes a change to the run's task with compare-and-set on the
// version the run holds. When the run still owes the working status, the
// write carries it first.
func (r *run) update(ctx context.Context, change func(next *store.Task, now time.Time) ([]store.LogEntry, error)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updateLocked(ctx, change)
}

// handOutToken writes a quick first step's task before the step hands out
// its wake token, on a store several nodes share: whatever the token
// reaches (a sub-agent's notification, to any node) must find the task.
// On a store one process owns, the task ID's lock makes such a
// notification wait for the write instead (see quickStart).
func (r *run) handOutToken() {
	if r.s.serialised() {
		return
	}
	r.mu.Lock()
	create := r.pending != nil && r.pending.create
	r.mu.Unlock()
	if create {
		r.writeWorking(r.s.runCtx)
	}
}

// writeWorking writes the working status the run still owes, if it does.
func (r *run) writeWorking(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if (!r.owesWorking && r.pending == nil) || r.lost || ctx.Err() != nil {
		return
	}
	_ = r.updateLocked(ctx, func(*store.Task, time.Time) ([]store.LogEntry, error) { return nil, nil })
}

func (r *run) updateLocked(ctx context.Context, change func(next *store.Task, now time.Time) ([]store.LogEntry, error)) error {
	if r.lost {
		return errLost
	}
	next := *r.task
	now := r.s.now()
	// Room for the pending message, a working status and a step's outcome
	// (its artifacts and status), so that the list is made once.
	entries := make([]store.LogEntry, 0, 4)
	create := false
	ch := commitNote{prev: r.task, cause: "step"}
	if r.pending != nil {
		entries = append(entries, r.pending.entries...)
		create = r.pending.create
		ch = commitNote{prev: r.pending.from, in: r.in, cause: "answer"}
		if create {
			ch.cause = "start"
		}
	}
	if r.owesWorking {
		st, e, err := statusEntry(&next, a2a.TaskStateWorking, nil, now)
		if err != nil {
			return err
		}
		next.State, next.Status = a2a.TaskStateWorking, st
		entries = append(entries, e)
	}
	more, err := change(&next, now)
	if err != nil {
		return err
	}
	entries = append(entries, more...)
	if r.pending != nil {
		if err := withInput(&next, r.in); err != nil {
			return err
		}
		if r.lock != nil {
			ctx = store.WithLock(ctx, r.lock) // written in what the lock holds
		}
	}
	saved, err := r.s.commit(ctx, ch, &next, entries, create)
	if err != nil && r.pending != nil {
		// The message of a quick step was not taken: nothing of the
		// step stands, and the caller decides again (see send.go).
		r.lost, r.lostPending, r.pendingErr = true, true, err
		// A transient failure is the request's to tell, once, when it
		// gives up trying again (retryTransient).
		if !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrNotFound) && !store.IsTransient(err) {
			r.s.log.Error("write a quick step's message", slog.String("task", next.ID), slog.String("agent", next.Agent), slog.Any("err", err))
		}
		return errLost
	}
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		r.lost = true
		return errLost
	}
	if err != nil {
		r.s.log.Error("write task", slog.String("task", next.ID), slog.String("agent", next.Agent), slog.Any("err", err))
		return err
	}
	r.task = saved
	r.known = r.known.add(entries, saved.Version)
	r.owesWorking = false
	if r.pending != nil {
		r.pending = nil
		if r.unlock != nil {
			r.unlock()
		}
	}
	return nil
}

func (r *run) progress(ctx context.Context, text string) error {
	return r.update(ctx, func(next *store.Task, now time.Time) ([]store.LogEntry, error) {
		msg := agentMessage(next, text)
		st, e, err := statusEntry(next, a2a.TaskStateWorking, msg, now)
		next.Status = st
		return []store.LogEntry{e}, err
	})
}

func (r *run) artifact(ctx context.Context, a *a2a.Artifact) error {
	return r.update(ctx, func(next *store.Task, now time.Time) ([]store.LogEntry, error) {
		e, err := addArtifact(next, a, now)
		return []store.LogEntry{e}, err
	})
}

// finish writes the step's outcome. A run that lost its task writes
// nothing: whoever holds it now decides.
func (r *run) finish(ctx context.Context, o Outcome, stepErr error) {
	s := r.s
	if stepErr != nil {
		var retried bool
		if o, retried = r.stepFailed(ctx, stepErr); retried {
			return
		}
	}
	err := r.writeRetried(ctx, func(next *store.Task, now time.Time) ([]store.LogEntry, error) {
		o.historyIsRequest = r.historyIsRequest()
		return s.applyOutcome(next, o, now)
	})
	if err != nil && !errors.Is(err, errLost) {
		s.log.Error("write step outcome", slog.String("task", r.task.ID), slog.String("agent", r.task.Agent), slog.Any("err", err))
	}
}

// applyOutcome turns an outcome into the task's next row and log entries.
func (s *Engine) applyOutcome(next *store.Task, o Outcome, now time.Time) ([]store.LogEntry, error) {
	next.Runnable = false
	next.LeaseOwner = ""
	next.LeaseUntil = time.Time{}
	next.Input = nil
	next.Question = nil
	var digest string
	if p, err := decodePause(next); err == nil {
		digest = p.WakeDigest
	} else {
		s.log.Error("the pause state of a task cannot be read; a late wake will be told not found", slog.String("task", next.ID), slog.String("agent", next.Agent), slog.Any("err", err))
	}
	next.Pause, next.WakeAt, next.HoldAt = nil, time.Time{}, time.Time{}
	if o.Kind == OutcomeComplete || o.Kind == OutcomeFail || o.Kind == OutcomeReject {
		// A wake that comes after the end is told it is late.
		defer keepDigest(next, digest)
	}

	var entries []store.LogEntry
	var state a2a.TaskState
	var msg *a2a.Message
	switch o.Kind {
	case OutcomeAsk:
		var agent Agent
		if e := s.agentByName(next.Agent); e != nil {
			agent = e.agent
		}
		q, err := s.prepareQuestion(o.Question, next.ID, next.Version, now)
		if err != nil {
			return s.refuse(next, o, agent, "The agent asked a question that cannot be answered: "+err.Error(), now)
		}
		cp, err := json.Marshal(o.Checkpoint)
		if err != nil {
			return s.refuse(next, o, agent, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		pause, err := s.preparePause(o, q, agent, now)
		if err != nil {
			return s.refuse(next, o, agent, "The agent asked a question the runtime cannot keep: "+err.Error(), now)
		}
		if o.historyIsRequest {
			pause.Fresh = q.ID
		}
		qraw, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		next.Checkpoint, next.Question = cp, qraw
		if o.WakeToken != "" {
			if len(o.WakeToken) < minWakeToken {
				return s.refuse(next, o, agent, fmt.Sprintf("The agent's wake token is shorter than %d characters.", minWakeToken), now)
			}
			pause.WakeDigest = tokenDigest(o.WakeToken)
		}
		if err := s.setPause(next, pause); err != nil {
			return nil, err
		}
		state, msg = a2a.TaskStateInputRequired, q.Message()
		msg.TaskID, msg.ContextID = a2a.TaskID(next.ID), next.ContextID
	case OutcomeAuth:
		cp, err := json.Marshal(o.Checkpoint)
		if err != nil {
			return s.applyOutcome(next, Fail("The agent's checkpoint could not be saved: "+err.Error()), now)
		}
		next.Checkpoint = cp
		state, msg = a2a.TaskStateAuthRequired, agentMessage(next, o.Text)
	case OutcomeAwait:
		var agent Agent
		if e := s.agentByName(next.Agent); e != nil {
			agent = e.agent
		}
		if len(o.WakeToken) < minWakeToken {
			return s.refuse(next, o, agent, fmt.Sprintf("The agent waits for an event with a wake token shorter than %d characters.", minWakeToken), now)
		}
		if !o.Deadline.After(now) {
			return s.refuse(next, o, agent, "The agent waits for an event with a deadline that has passed.", now)
		}
		cp, err := json.Marshal(o.Checkpoint)
		if err != nil {
			return s.refuse(next, o, agent, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		next.Checkpoint = cp
		// Question names the pause in hold keys: unique per pause.
		p := &pauseState{Asked: now, Await: o.Text, Question: fmt.Sprintf("await-%d", next.Version),
			Expires: ceilMilli(o.Deadline), WakeDigest: tokenDigest(o.WakeToken)}
		if p.Holds, err = prepareHolds(o.Holds, p.Expires, "the wait's deadline", agent); err != nil {
			return s.refuse(next, o, agent, "The agent waits while holding what the runtime cannot keep: "+err.Error(), now)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		next.Pause, next.WakeAt, next.HoldAt = raw, p.Expires, p.nextRelease()
		state, msg = a2a.TaskStateWorking, agentMessage(next, o.Text)
	case OutcomeComplete:
		for _, a := range o.Artifacts {
			e, err := addArtifact(next, a, now)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		next.Checkpoint = nil
		state = a2a.TaskStateCompleted
		if o.Text != "" {
			msg = agentMessage(next, o.Text)
		}
	case OutcomeFail, OutcomeReject:
		next.Checkpoint = nil
		state = a2a.TaskStateFailed
		if o.Kind == OutcomeReject {
			state = a2a.TaskStateRejected
		}
		msg = agentMessage(next, o.Text)
	default:
		return s.applyOutcome(next, Fail("The agent ended its step without an outcome."), now)
	}
	st, e, err := statusEntry(next, state, msg, now)
	if err != nil {
		return nil, err
	}
	next.State, next.Status = state, st
	return append(entries, e), nil
}

// refuse fails the task of an Ask or Await outcome the runtime cannot
// keep, saying why, and keeps the holds the outcome declared, due for
// release at once: the step reserved them before it asked.
func (s *Engine) refuse(next *store.Task, o Outcome, agent Agent, reason string, now time.Time) ([]store.LogEntry, error) {
	entries, err := s.applyOutcome(next, Fail(reason), now)
	if err != nil {
		return nil, err
	}
	s.keepRefusedHolds(next, o.Holds, agent, now)
	return entries, nil
}

// ceilMilli is t in UTC rounded up to the millisecond, the precision the
// store keeps: an expiry or a deadline is never earlier than asked.
func ceilMilli(t time.Time) time.Time {
	t = t.UTC()
	if c := t.Truncate(time.Millisecond); c.Before(t) {
		return c.Add(time.Millisecond)
	}
	return t
}

// prepareQuestion fills what the agent left to the runtime and checks the
// question can be answered.
func (s *Engine) prepareQuestion(in *question.Question, taskID string, version int64, now time.Time) (*question.Question, error) {
	q := *in
	if q.ID == "" {
		q.ID = questionID(taskID, version)
	}
	if q.Expires.IsZero() {
		q.Expires = now.Add(s.cfg.QuestionExpiry)
	}
	q.Expires = ceilMilli(q.Expires)
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = s.cfg.MaxAttempts
	}
	if q.Attempt <= 0 {
		q.Attempt = 1
	}
	if len(q.Errors) > 0 && q.Attempt < 2 {
		q.Attempt = 2 // errors travel only with a re-ask
	}
	if q.Text == "" {
		return nil, errors.New("the question has no text for a person to read")
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	return &q, nil
}
