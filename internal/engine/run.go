package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/askpoint/askpoint/internal/api"

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
	Holds []api.HoldStatus `json:"holds,omitempty"`
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
	// "" when none is recorded or the step runs within that request (a
	// quick step: the observer has the request's context, caller).
	trace string
	// caller is the context of the request running the work quick, while
	// runQuick runs it (for the observer); nil otherwise.
	caller context.Context
}

type pendingWrite struct {
	create  bool
	entries []store.LogEntry
	// from is the task as loaded before the message (nil for a new one).
	from *store.Task
}

// quickSteps reports whether this node runs a blocking call's step before
// its message is written (see send.go): only on a store whose task locks
// hold every transition that could race it (store.Locker), on every node.
func (s *Engine) quickSteps() bool { return s.locker != nil && !s.cfg.DisableQuickSteps }

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
	n, whole := r.known.historyLen()
	if !whole {
		return false
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
		r.known = newKnownLog(w.pending.create, len(t.Artifacts) == 0)
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
	s.pool.track(t.ID, cancel)
	defer s.pool.untrack(t.ID)

	in := w.in
	if in == nil {
		in = &runInput{}
		if err := json.Unmarshal(t.Input, in); err != nil {
			r.finish(ctx, api.Fail("the task's pending input could not be read: "+err.Error()), nil)
			return r.latest()
		}
	}
	r.in = in
	entry := s.agentByName(t.Agent)
	if entry == nil {
		r.finish(ctx, api.Fail(fmt.Sprintf("no agent named %q is served here any more", t.Agent)), nil)
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
			r.finish(context.WithoutCancel(ctx), api.Outcome{}, err) // tried again like a step's error
			return r.latest()
		}
		s.log.Error("prepare a step", slog.String("task", t.ID), slog.Any("err", err))
		r.finish(ctx, api.Fail("The task's pending work could not be read; the cause is in the server's log."), nil)
		return r.latest()
	}

	stepCtx, endSpan := s.obs.startStep(runCtx, api.StepInfo{TaskID: t.ID, ContextID: t.ContextID, Agent: t.Agent, Parent: w.trace, Link: in.Trace, Request: w.caller})
	stopBeat := s.leases.heartbeat(runCtx, r, cancel)
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

func (s *Engine) buildCall(ctx context.Context, r *run, in *runInput, request *a2a.Message) (*api.Call, *api.Resumption, error) {
	t := r.latest() // the working-status timer may be writing r.task
	call := &api.Call{
		TaskID: t.ID, ContextID: t.ContextID, Tenant: t.Tenant, Principal: t.Owner,
		Message: in.Message, Key: in.Key, Holds: in.Holds, Expired: in.Expired,
	}
	api.Bind(call, r)
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
	res := &api.Resumption{Checkpoint: t.Checkpoint}
	switch in.Kind {
	case inputAnswer:
		res.Question, res.Answer = in.Question, in.Answer
		call.Question = in.Question
	case inputAuth:
		res.Auth = &api.AuthArrival{Message: in.Message, Data: in.AuthData}
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

func safeStep(ctx context.Context, agent api.Agent, call *api.Call, res *api.Resumption) (o api.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &stepPanic{fmt.Errorf("the agent panicked: %v\n%s", p, debug.Stack())}
		}
	}()
	if res == nil {
		return agent.Start(ctx, call)
	}
	return agent.Resume(ctx, call, res)
}

// held is the row the run holds, whether it lost it, and whether nothing
// of the step is written yet (a quick step's pending write: no lease).
func (r *run) held() (t *store.Task, lost, pending bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.task, r.lost, r.pending != nil
}

// lose records that the run no longer holds its task.
func (r *run) lose() {
	r.mu.Lock()
	r.lost = true
	r.mu.Unlock()
}

// renewed records t's lease renewed until until, unless the run wrote the
// task since.
func (r *run) renewed(t *store.Task, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.task == t {
		tt := *t
		tt.LeaseUntil = until
		r.task = &tt
	}
}

func (r *run) release() {
	r.mu.Lock()
	t, pending := r.task, r.pending != nil
	r.mu.Unlock()
	if pending {
		return // nothing was written: nothing holds a lease
	}
	_ = r.s.leases.extend(context.Background(), t.ID, t.Version, time.Time{})
}

// errLost says the run no longer holds its task.
var errLost = errors.New("askpoint: the task is no longer this run's (canceled or taken over)")

// update writes a change to the run's task with compare-and-set on the
// version the run holds. When the run still owes the working status, the
// write carries it first. change appends the log entries it writes to
// entries (the write's list so far, with room for a step's outcome) and
// returns the list.
func (r *run) update(ctx context.Context, change func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error)) error {
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
	if r.s.rows.singleNode() {
		return
	}
	r.mu.Lock()
	create := r.pending != nil && r.pending.create
	r.mu.Unlock()
	if create {
		r.writeWorking(r.s.pool.context())
	}
}

// writeWorking writes the working status the run still owes, if it does.
func (r *run) writeWorking(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if (!r.owesWorking && r.pending == nil) || r.lost || ctx.Err() != nil {
		return
	}
	_ = r.updateLocked(ctx, func(_ *store.Task, _ time.Time, entries []store.LogEntry) ([]store.LogEntry, error) {
		return entries, nil
	})
}

func (r *run) updateLocked(ctx context.Context, change func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error)) error {
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
	entries, err := change(&next, now, entries)
	if err != nil {
		return err
	}
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

// A run is what its step's Call reaches (api.Runtime): Progress,
// AddArtifact, AppendArtifact (task.go) and WakeToken.

// Progress streams a working-state status message and records it.
func (r *run) Progress(ctx context.Context, text string) error {
	return r.update(ctx, func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error) {
		msg := agentMessage(next, text)
		st, e, err := statusEntry(next, a2a.TaskStateWorking, msg, now)
		next.Status = st
		return append(entries, e), err
	})
}

// WakeToken is the task's wake token (see Engine.wakeToken): the same on
// every step and every node, stored nowhere.
func (r *run) WakeToken() string {
	r.handOutToken()
	return r.s.wakeToken(r.agent, r.latest().ID)
}

// AddArtifact streams an artifact now and keeps it on the task.
func (r *run) AddArtifact(ctx context.Context, a *a2a.Artifact) error {
	return r.update(ctx, func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error) {
		e, err := addArtifact(next, a, now)
		return append(entries, e), err
	})
}

// finish writes the step's outcome. A run that lost its task writes
// nothing: whoever holds it now decides.
func (r *run) finish(ctx context.Context, o api.Outcome, stepErr error) {
	s := r.s
	if stepErr != nil {
		var retried bool
		if o, retried = r.stepFailed(ctx, stepErr); retried {
			return
		}
	}
	// A question's pause keeps the asking span's traceparent, written with
	// the pause rather than spliced into it at the commit (observer.before).
	var trace string
	if o.Kind() == api.OutcomeAsk {
		trace = s.obs.traceParent(ctx)
	}
	err := r.writeRetried(ctx, func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error) {
		return s.outcomes.applyOutcome(entries, next, o, r.historyIsRequest(), trace, now)
	})
	if err != nil && !errors.Is(err, errLost) {
		s.log.Error("write step outcome", slog.String("task", r.task.ID), slog.String("agent", r.task.Agent), slog.Any("err", err))
	}
}
