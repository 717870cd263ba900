package askpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
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
func (s *Server) resumeRow(t *store.Task, in runInput, msg *a2a.Message, note string) (*store.Task, []store.LogEntry, error) {
	now := s.now()
	p, err := decodePause(t)
	if err != nil {
		return nil, nil, errInternal(err)
	}
	in.Holds = holdsOnResume(p, now)
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, nil, errInternal(err)
	}
	next := *t
	next.Pause, next.WakeAt, next.HoldAt = nil, time.Time{}, time.Time{}
	keepDigest(&next, p.WakeDigest)
	next.Input = raw
	next.Question = nil
	next.Runnable = true
	next.LeaseOwner = s.cfg.NodeID
	next.LeaseUntil = now.Add(s.cfg.LeaseDuration)
	var entries []store.LogEntry
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

// dispatch hands a task this node holds to the local worker pool. When the
// pool's queue is full the lease is released so the poller (here or on
// another node) takes the task.
func (s *Server) dispatch(t *store.Task) {
	select {
	case s.queue <- job{id: t.ID, version: t.Version}:
	default:
		err := s.store.ExtendLease(context.Background(), t.ID, s.cfg.NodeID, t.Version, time.Time{})
		if err != nil && !errors.Is(err, store.ErrConflict) {
			s.log.Warn("release lease of a task the queue could not take", slog.String("task", t.ID), slog.Any("err", err))
		}
	}
}

func (s *Server) worker(ctx context.Context) {
	defer s.wg.Done()
	for {
		select {
		case <-ctx.Done():
			s.releaseQueued()
			return
		case j := <-s.queue:
			if ctx.Err() != nil { // stopping: select may pick a job over Done
				s.releaseJob(j)
				continue
			}
			s.execute(ctx, j)
		}
	}
}

// releaseQueued releases the leases of the tasks still waiting in the local
// queue when the server stops (acknowledged, never started), as execute does
// for a step it abandons, so that the next start or another node takes them
// over at once instead of after their lease lapses.
func (s *Server) releaseQueued() {
	for {
		select {
		case j := <-s.queue:
			s.releaseJob(j)
		default:
			return
		}
	}
}

// releaseJob releases the lease this node took for j, unless the task has
// moved on since (then the release is a no-op conflict).
func (s *Server) releaseJob(j job) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.store.ExtendLease(ctx, j.id, s.cfg.NodeID, j.version, time.Time{})
	if err != nil && !errors.Is(err, store.ErrConflict) {
		s.log.Warn("release lease of a queued task at stop", slog.String("task", j.id), slog.Any("err", err))
	}
}

// poller claims runnable tasks whose lease lapsed: runs left by a crashed
// or stopped node, or work the queue could not take. The claim query is
// indexed on the lease of runnable tasks, so it costs O(runnable), not
// O(paused).
func (s *Server) poller(ctx context.Context) {
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

func (s *Server) claimLapsed(ctx context.Context) {
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
		s.log.Info("taking over a task whose run lapsed", slog.String("task", t.ID), slog.String("state", string(t.State)))
		s.dispatch(t)
	}
}

// run is one step of one task on this node.
type run struct {
	s     *Server
	mu    sync.Mutex
	task  *store.Task // the latest version this run wrote or claimed
	lost  bool
	agent string
	// owesWorking: the task has not been written as working yet; the next
	// write of this run does it (see workingAfter).
	owesWorking bool
}

// workingAfter is how long a step that starts a task may run before the
// task is written as working on its own. A step that writes sooner
// (progress, an artifact, its outcome) carries the working status in that
// write instead, in the same place in the log: streams and the history see
// the same events in the same order, and a quick step (an agent that asks
// or answers at once) costs one commit instead of two.
const workingAfter = 100 * time.Millisecond

func (s *Server) execute(ctx context.Context, j job) {
	t, err := s.store.GetTask(ctx, j.id)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("load task to run", slog.String("task", j.id), slog.Any("err", err))
		} else {
			s.releaseJob(j) // stopping before the run began
		}
		return
	}
	if t.Version != j.version || t.LeaseOwner != s.cfg.NodeID || !t.Runnable {
		return // someone else moved it on (canceled, or taken over)
	}
	r := &run{s: s, task: t, agent: t.Agent}

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

	var in runInput
	if err := json.Unmarshal(t.Input, &in); err != nil {
		r.finish(ctx, Fail("the task's pending input could not be read: "+err.Error()), nil)
		return
	}
	entry := s.agentByName(t.Agent)
	if entry == nil {
		r.finish(ctx, Fail(fmt.Sprintf("no agent named %q is served here any more", t.Agent)), nil)
		return
	}
	if t.State != a2a.TaskStateWorking {
		// The task moves to working with the step's first write (progress,
		// an artifact, or its outcome), or on its own if the step is still
		// running after workingAfter: a quick step costs one write, not two.
		r.mu.Lock()
		r.owesWorking = true
		r.mu.Unlock()
		timer := time.AfterFunc(workingAfter, func() { r.writeWorking(runCtx) })
		defer func() {
			timer.Stop()
			r.mu.Lock()
			r.owesWorking = false
			r.mu.Unlock()
		}()
	}

	call, res, err := s.buildCall(ctx, r, &in)
	if err != nil {
		r.finish(ctx, Fail(err.Error()), nil)
		return
	}

	stopBeat := r.heartbeat(runCtx)
	outcome, stepErr := safeStep(runCtx, entry.spec.Agent, call, res)
	stopBeat()

	if ctx.Err() != nil && stepErr != nil {
		// The server is stopping and cut the step short: leave the work
		// owed and let the next start (or another node) take it over at
		// once. The step's key makes the rerun's side effects safe.
		r.release()
		return
	}
	if ctx.Err() == nil && runCtx.Err() != nil && stepErr != nil {
		return // canceled by CancelTask; the cancel already wrote the outcome
	}
	// A step that finished is written even while the server stops.
	r.finish(context.WithoutCancel(ctx), outcome, stepErr)
}

func (s *Server) agentByName(name string) *agentEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.agents[name]
}

func (s *Server) buildCall(ctx context.Context, r *run, in *runInput) (*Call, *Resumption, error) {
	t := r.task
	call := &Call{
		TaskID: t.ID, ContextID: t.ContextID, Tenant: t.Tenant, Principal: t.Owner,
		Message: in.Message, Key: in.Key, Holds: in.Holds, Expired: in.Expired, run: r,
	}
	if in.Kind == inputStart {
		call.Request = in.Message
		return call, nil, nil
	}
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

// heartbeat renews the run's lease until the returned stop is called.
func (r *run) heartbeat(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(r.s.cfg.LeaseDuration / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			r.mu.Lock()
			t := r.task
			lost := r.lost
			r.mu.Unlock()
			if lost {
				return
			}
			until := r.s.now().Add(r.s.cfg.LeaseDuration)
			if err := r.s.store.ExtendLease(ctx, t.ID, r.s.cfg.NodeID, t.Version, until); err != nil {
				if errors.Is(err, store.ErrConflict) {
					r.mu.Lock()
					r.lost = true
					r.mu.Unlock()
					return
				}
				if ctx.Err() == nil {
					r.s.log.Warn("renew lease", slog.String("task", t.ID), slog.Any("err", err))
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}

func (r *run) release() {
	r.mu.Lock()
	t := r.task
	r.mu.Unlock()
	_ = r.s.store.ExtendLease(context.Background(), t.ID, r.s.cfg.NodeID, t.Version, time.Time{})
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

// writeWorking writes the working status the run still owes, if it does.
func (r *run) writeWorking(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.owesWorking || r.lost || ctx.Err() != nil {
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
	var entries []store.LogEntry
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
	saved, err := r.s.store.UpdateTask(ctx, &next, entries)
	if errors.Is(err, store.ErrConflict) || errors.Is(err, store.ErrNotFound) {
		r.lost = true
		return errLost
	}
	if err != nil {
		r.s.log.Error("write task", slog.String("task", next.ID), slog.Any("err", err))
		return err
	}
	r.task = saved
	r.owesWorking = false
	r.s.committed(saved)
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
		s.log.Warn("agent step failed", slog.String("task", r.task.ID), slog.String("agent", r.agent), slog.Any("err", stepErr))
		o = Fail("The agent failed: " + firstLine(stepErr.Error()))
	}
	err := r.update(ctx, func(next *store.Task, now time.Time) ([]store.LogEntry, error) {
		return s.applyOutcome(next, o, now)
	})
	if err != nil && !errors.Is(err, errLost) {
		s.log.Error("write step outcome", slog.String("task", r.task.ID), slog.Any("err", err))
	}
}

// applyOutcome turns an outcome into the task's next row and log entries.
func (s *Server) applyOutcome(next *store.Task, o Outcome, now time.Time) ([]store.LogEntry, error) {
	next.Runnable = false
	next.LeaseOwner = ""
	next.LeaseUntil = time.Time{}
	next.Input = nil
	next.Question = nil
	var digest string
	if p, err := decodePause(next); err == nil {
		digest = p.WakeDigest
	}
	next.Pause, next.WakeAt, next.HoldAt = nil, time.Time{}, time.Time{}
	if o.kind == OutcomeComplete || o.kind == OutcomeFail || o.kind == OutcomeReject {
		// A wake that comes after the end is told it is late.
		defer keepDigest(next, digest)
	}

	var entries []store.LogEntry
	var state a2a.TaskState
	var msg *a2a.Message
	switch o.kind {
	case OutcomeAsk:
		var agent Agent
		if e := s.agentByName(next.Agent); e != nil {
			agent = e.spec.Agent
		}
		q, err := s.prepareQuestion(o.question, now)
		if err != nil {
			return s.refuse(next, o, agent, "The agent asked a question that cannot be answered: "+err.Error(), now)
		}
		cp, err := json.Marshal(o.checkpoint)
		if err != nil {
			return s.refuse(next, o, agent, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		pause, err := s.preparePause(o, q, agent, now)
		if err != nil {
			return s.refuse(next, o, agent, "The agent asked a question the runtime cannot keep: "+err.Error(), now)
		}
		qraw, err := json.Marshal(q)
		if err != nil {
			return nil, err
		}
		next.Checkpoint, next.Question = cp, qraw
		if o.wakeToken != "" {
			if len(o.wakeToken) < minWakeToken {
				return s.refuse(next, o, agent, fmt.Sprintf("The agent's wake token is shorter than %d characters.", minWakeToken), now)
			}
			pause.WakeDigest = tokenDigest(o.wakeToken)
		}
		if err := s.setPause(next, pause); err != nil {
			return nil, err
		}
		state, msg = a2a.TaskStateInputRequired, q.Message()
		msg.TaskID, msg.ContextID = a2a.TaskID(next.ID), next.ContextID
	case OutcomeAuth:
		cp, err := json.Marshal(o.checkpoint)
		if err != nil {
			return s.applyOutcome(next, Fail("The agent's checkpoint could not be saved: "+err.Error()), now)
		}
		next.Checkpoint = cp
		state, msg = a2a.TaskStateAuthRequired, agentMessage(next, o.text)
	case OutcomeAwait:
		var agent Agent
		if e := s.agentByName(next.Agent); e != nil {
			agent = e.spec.Agent
		}
		if len(o.wakeToken) < minWakeToken {
			return s.refuse(next, o, agent, fmt.Sprintf("The agent waits for an event with a wake token shorter than %d characters.", minWakeToken), now)
		}
		if !o.deadline.After(now) {
			return s.refuse(next, o, agent, "The agent waits for an event with a deadline that has passed.", now)
		}
		cp, err := json.Marshal(o.checkpoint)
		if err != nil {
			return s.refuse(next, o, agent, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		next.Checkpoint = cp
		// Question names the pause in hold keys: unique per pause.
		p := &pauseState{Asked: now, Await: o.text, Question: fmt.Sprintf("await-%d", next.Version),
			Expires: o.deadline.UTC().Truncate(time.Millisecond), WakeDigest: tokenDigest(o.wakeToken)}
		if p.Holds, err = prepareHolds(o.holds, p.Expires, "the wait's deadline", agent); err != nil {
			return s.refuse(next, o, agent, "The agent waits while holding what the runtime cannot keep: "+err.Error(), now)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		next.Pause, next.WakeAt, next.HoldAt = raw, p.Expires, p.nextRelease()
		state, msg = a2a.TaskStateWorking, agentMessage(next, o.text)
	case OutcomeComplete:
		for _, a := range o.artifacts {
			e, err := addArtifact(next, a, now)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		next.Checkpoint = nil
		state = a2a.TaskStateCompleted
		if o.text != "" {
			msg = agentMessage(next, o.text)
		}
	case OutcomeFail, OutcomeReject:
		next.Checkpoint = nil
		state = a2a.TaskStateFailed
		if o.kind == OutcomeReject {
			state = a2a.TaskStateRejected
		}
		msg = agentMessage(next, o.text)
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
func (s *Server) refuse(next *store.Task, o Outcome, agent Agent, reason string, now time.Time) ([]store.LogEntry, error) {
	entries, err := s.applyOutcome(next, Fail(reason), now)
	if err != nil {
		return nil, err
	}
	s.keepRefusedHolds(next, o.holds, agent, now)
	return entries, nil
}

// prepareQuestion fills what the agent left to the runtime and checks the
// question can be answered.
func (s *Server) prepareQuestion(in *question.Question, now time.Time) (*question.Question, error) {
	q := *in
	if q.ID == "" {
		q.ID = "q-" + shortID()
	}
	if q.Expires.IsZero() {
		q.Expires = now.Add(s.cfg.QuestionExpiry)
	}
	q.Expires = q.Expires.UTC().Truncate(time.Second)
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

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}
