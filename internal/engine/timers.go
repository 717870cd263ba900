package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// A task's timers are two indexed columns of its row (store.Task.WakeAt and
// HoldAt), written with the same compare-and-set as every other change to
// the task. A timer loop asks the store for what is due, acts on each task
// with a compare-and-set, and sleeps until the next due time (at most the
// poll interval, so a timer set on another node is seen in time). Acting on
// a timer races an answer like any other transition: one of them wins, the
// other sees the task as it now stands.

// dueBatch is how many due tasks one round of a timer loop takes.
const dueBatch = 256

// timerLoop runs work until ctx ends: again at once while it finds a full
// batch, otherwise after kick, the next due time or the poll interval,
// whichever comes first.
type timerLoop struct {
	rounds  rounds // ended rounds, for Idle
	name    string
	every   time.Duration // the longest sleep between rounds
	kicks   chan struct{}
	planned atomic.Int64 // unix ms of the next planned round; 0 when unknown
}

func newTimerLoop(name string, every time.Duration) *timerLoop {
	return &timerLoop{name: name, every: every, kicks: make(chan struct{}, 1)}
}

// wake makes the loop run a round soon, if at is before its next planned round.
func (l *timerLoop) wake(at time.Time) {
	if at.IsZero() {
		return
	}
	if p := l.planned.Load(); p != 0 && at.UnixMilli() >= p {
		return
	}
	select {
	case l.kicks <- struct{}{}:
	default:
	}
}

// kick makes the loop run a round soon, whenever it planned the next.
func (l *timerLoop) kick() {
	select {
	case l.kicks <- struct{}{}:
	default:
	}
}

func (s *Engine) runTimerLoop(ctx context.Context, l *timerLoop, work func(context.Context) (int, error), next func(context.Context) (time.Time, error)) {
	defer s.wg.Done()
	for {
		l.planned.Store(0)
		n, err := work(ctx)
		l.rounds.ended()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Error("timer round failed; retrying after its interval", slog.String("timer", l.name), slog.Any("err", err))
		}
		if err == nil && n >= dueBatch {
			continue
		}
		wait := l.every
		if err == nil && next != nil {
			if at, err := next(ctx); err == nil && !at.IsZero() {
				wait = min(wait, max(at.Sub(s.now()), time.Millisecond))
			}
		}
		l.planned.Store(s.now().Add(wait).UnixMilli())
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-l.kicks:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// sweep acts on every task whose wake timer is due: an open question
// that expired, or a reminder point that passed. It returns how many
// due tasks it found.
func (s *Engine) sweep(ctx context.Context) (int, error) {
	tasks, err := s.store.DueTasks(ctx, store.DueParams{Timer: store.TimerWake, Now: s.now(), Limit: dueBatch})
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		if err := s.wakeTask(ctx, t); err != nil && !errors.Is(err, store.ErrConflict) {
			if ctx.Err() != nil {
				return len(tasks), nil
			}
			s.log.Error("act on a due question", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
		}
	}
	return len(tasks), nil
}

// wakeTask acts on one task whose wake timer is due. A conflict means
// someone else changed the task first (an answer, another node's sweep):
// the next round sees it as it now stands.
func (s *Engine) wakeTask(ctx context.Context, t *store.Task) error {
	defer s.lockTask(t.ID).Unlock()
	now := s.now()
	if t.State == a2a.TaskStateWorking && !t.Runnable && len(t.Question) == 0 {
		p, err := decodePause(t)
		if err != nil {
			return err // logged by the sweep, and tried again next round
		}
		if p.Await != "" {
			if now.Before(p.Expires) {
				return nil // woken early (another node's timer)
			}
			next, e, err := s.endRow(t, a2a.TaskStateFailed,
				fmt.Sprintf("Stopped waiting at %s: %s", p.Expires.UTC().Format(time.RFC3339), p.Await), now)
			if err != nil {
				return err
			}
			return s.write(ctx, t, next, []store.LogEntry{e})
		}
	}
	if t.State != a2a.TaskStateInputRequired || len(t.Question) == 0 {
		next := *t
		next.WakeAt = time.Time{}
		return s.write(ctx, t, &next, nil)
	}
	var q question.Question
	if err := json.Unmarshal(t.Question, &q); err != nil {
		return fmt.Errorf("decode open question: %w", err)
	}
	if !now.Before(q.Expires) {
		_, err := s.expire(ctx, t)
		return err
	}
	p, err := decodePause(t)
	if err != nil {
		return err
	}
	if p.Expires.IsZero() {
		// A question paused before the runtime kept pause state (or by
		// hand): its expiry is the question's, and no reminders are owed.
		p.Asked, p.Expires, p.Reminded = q.Expires, q.Expires, len(s.cfg.Reminders)
	}
	next := *t
	var entries []store.LogEntry
	passed := p.Reminded
	for passed < len(s.cfg.Reminders) && !now.Before(s.reminderAt(p, passed)) {
		passed++
	}
	if passed > p.Reminded {
		// Points that passed while no sweeper ran fold into one reminder.
		e, err := reminderEntry(t, passed, len(s.cfg.Reminders), q.Expires, now)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		p.Reminded = passed
	}
	if err := s.setPause(&next, p); err != nil {
		return err
	}
	return s.write(ctx, t, &next, entries)
}

// ReminderKey is the metadata key of a reminder notification: a status
// update event whose metadata holds {ReminderKey: {"reminder": n, "of": m,
// "expires": RFC 3339}} carries the open question unchanged.
const ReminderKey = question.ExtensionURI + "#reminder"

func reminderEntry(t *store.Task, n, of int, expires, now time.Time) (store.LogEntry, error) {
	var status a2a.TaskStatus
	if err := json.Unmarshal(t.Status, &status); err != nil {
		return store.LogEntry{}, fmt.Errorf("decode status: %w", err)
	}
	ev := a2a.TaskStatusUpdateEvent{
		TaskID: a2a.TaskID(t.ID), ContextID: t.ContextID, Status: status,
		Metadata: map[string]any{ReminderKey: map[string]any{
			"reminder": n, "of": of, "expires": expires.UTC().Format(time.RFC3339Nano),
		}},
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return store.LogEntry{}, err
	}
	return store.LogEntry{Kind: store.KindReminder, Notify: true, Body: body, At: now.UTC()}, nil
}

// expire acts on a task whose open question expired, as the agent chose
// when it asked: fail (the default), cancel, or resume with its default
// answer. It is a compare-and-set like every other transition, so it cannot
// race an answer into two outcomes: store.ErrConflict when the task
// changed first.
func (s *Engine) expire(ctx context.Context, t *store.Task) (*store.Task, error) {
	var q question.Question
	if err := json.Unmarshal(t.Question, &q); err != nil {
		return nil, fmt.Errorf("decode open question: %w", err)
	}
	p, err := decodePause(t)
	if err != nil {
		return nil, err
	}
	now := s.now()
	at := q.Expires.UTC().Format(time.RFC3339Nano)
	var next *store.Task
	var entries []store.LogEntry
	switch p.OnExpiry {
	case ExpireDefault:
		ans := &question.Answer{QuestionID: q.ID, Fields: p.DefaultAnswer}
		in := runInput{Kind: inputAnswer, Question: &q, Answer: ans, Expired: true, Key: t.ID + "/" + q.ID}
		note := fmt.Sprintf("No answer in time: question %s expired at %s. The task continues with the agent's default answer %s.", q.ID, at, p.DefaultAnswer)
		next, entries, err = s.resumeRow(t, &in, nil, note)
		if err == nil {
			err = withInput(next, &in)
		}
	case ExpireCancel:
		var e store.LogEntry
		next, e, err = s.endRow(t, a2a.TaskStateCanceled, fmt.Sprintf("No answer in time: question %s expired at %s, so the task was canceled.", q.ID, at), now)
		entries = []store.LogEntry{e}
	default:
		var e store.LogEntry
		next, e, err = s.endRow(t, a2a.TaskStateFailed, fmt.Sprintf("No answer in time: question %s expired at %s.", q.ID, at), now)
		entries = []store.LogEntry{e}
	}
	if err != nil {
		return nil, err
	}
	saved, err := s.commit(ctx, commitNote{prev: t, cause: "expire"}, next, entries, false)
	if err != nil {
		return nil, err
	}
	s.log.Info("question expired", slog.String("task", t.ID), slog.String("question", q.ID), slog.String("then", expiryResult(saved)))
	if saved.Runnable {
		s.dispatch(&work{task: saved})
	}
	return saved, nil
}

// expiryResult says what an expiry did to a task, for people.
func expiryResult(t *store.Task) string {
	switch t.State {
	case a2a.TaskStateFailed:
		return "has ended failed"
	case a2a.TaskStateCanceled:
		return "has been canceled"
	}
	return "continues with the agent's default answer"
}

// write commits a timer's change to a task (compare-and-set on its version).
func (s *Engine) write(ctx context.Context, prev, next *store.Task, entries []store.LogEntry) error {
	_, err := s.commit(ctx, commitNote{prev: prev, cause: "timer"}, next, entries, false)
	return err
}

// releaseDue runs the release of every hold whose deadline passed. It
// runs on its own timer, apart from the sweeper, so a hold is released on
// time even when nobody sweeps expiries.
func (s *Engine) releaseDue(ctx context.Context) (int, error) {
	tasks, err := s.store.DueTasks(ctx, store.DueParams{Timer: store.TimerHold, Now: s.now(), Limit: dueBatch})
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		if err := s.releaseHolds(ctx, t); err != nil && !errors.Is(err, store.ErrConflict) {
			if ctx.Err() != nil {
				return len(tasks), nil
			}
			s.log.Error("release what a task holds", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
		}
	}
	return len(tasks), nil
}

// releaseHolds releases a task's due holds: it claims them with a
// compare-and-set (so no other node runs the same release while the claim
// lasts), runs the agent's release for each, and records what was
// released. A release cut short by a crash runs again when its claim
// lapses; the call's key lets the agent make that harmless.
func (s *Engine) releaseHolds(ctx context.Context, t *store.Task) error {
	unlock := s.lockTask(t.ID).Unlock
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if t.Runnable {
		// A run owns the task (it resumed before the claim was recorded).
		return nil
	}
	now := s.now()
	p, err := decodePause(t)
	if err != nil {
		return err
	}
	var claimed []int
	for i := range p.Holds {
		h := &p.Holds[i]
		if h.Released || now.Before(h.due()) {
			continue
		}
		h.Releasing = now.Add(s.cfg.LeaseDuration).Truncate(time.Millisecond)
		claimed = append(claimed, i)
	}
	next := *t
	if err := s.setPauseKeepingTimers(&next, p); err != nil {
		return err
	}
	saved, err := s.commit(ctx, commitNote{prev: t, cause: "hold"}, &next, nil, false)
	if err != nil {
		return err
	}
	unlock() // the claim is written: the releases run without the lock
	locked = false
	if len(claimed) == 0 {
		return nil
	}

	agent := s.agentByName(t.Agent)
	released := map[string]time.Time{}
	failed := map[string]releaseFailure{}
	for _, i := range claimed {
		h := p.Holds[i]
		status := HoldStatus{Name: h.Name, Until: h.Until, Data: h.Data, Lapsed: true, Released: true}
		if agent == nil {
			s.log.Error("cannot release a hold: its agent is not served here", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.String("hold", h.Name))
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, s.cfg.LeaseDuration)
		err := s.callRelease(rctx, agent.agent, t, holdKey(t.ID, p.Question, h.Name), status)
		cancel()
		if err != nil {
			failed[h.Name] = releaseFailure{claim: h.Releasing, failures: h.Failures, err: err}
			continue
		}
		s.log.Info("released a hold", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.String("hold", h.Name), slog.Time("deadline", h.Until))
		s.event(ctx, t.Agent, EventHoldReleased)
		if h.Early.IsZero() {
			s.event(ctx, t.Agent, EventHoldLapsed) // its deadline came while the task was still paused
		}
		released[h.Name] = h.Releasing
	}
	if len(failed) > 0 {
		if err := s.markReleaseFailed(ctx, saved, failed); err != nil {
			return err
		}
	}
	if len(released) == 0 {
		return nil
	}
	if len(failed) > 0 { // the write above moved the task on
		if saved, err = s.store.GetTask(ctx, t.ID); err != nil {
			return err
		}
	}
	return s.markReleased(ctx, saved, released)
}

// setPauseKeepingTimers stores p and recomputes only the hold timer: a
// hold release must not move the question's wake timer.
func (s *Engine) setPauseKeepingTimers(next *store.Task, p *pauseState) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	next.Pause = raw
	next.HoldAt = p.nextRelease()
	return nil
}

// holdKey is the idempotency key of a hold's release: unique per task,
// pause and hold.
func holdKey(taskID, questionID, name string) string {
	return taskID + "/" + questionID + "/hold/" + name
}

func (s *Engine) callRelease(ctx context.Context, agent Agent, t *store.Task, key string, h HoldStatus) (err error) {
	r, ok := agent.(Releaser)
	if !ok {
		return Permanent(fmt.Errorf("agent %q cannot release holds", t.Agent))
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the release panicked: %v", p)
		}
	}()
	call := &Call{TaskID: t.ID, ContextID: t.ContextID, Tenant: t.Tenant, Principal: t.Owner, Key: key, wake: s, agent: t.Agent, task: t.ID}
	return r.Release(ctx, call, h)
}

// markReleased records released holds on the task, retrying the
// compare-and-set while the task changes under it. A task that resumed in
// the meantime took its holds back; there is nothing left to record.
func (s *Engine) markReleased(ctx context.Context, t *store.Task, claims map[string]time.Time) error {
	return s.updateHolds(ctx, t, func(h *heldThing) bool {
		if at, ok := claims[h.Name]; ok && !h.Released && h.Releasing.Equal(at) {
			h.Released, h.Releasing = true, time.Time{}
			return true
		}
		return false
	})
}

// updateHolds applies change to the holds of t's pause and writes the ones
// it changed, retrying the compare-and-set while the task changes under it.
// A task that resumed in the meantime took its holds back; there is
// nothing left to record.
func (s *Engine) updateHolds(ctx context.Context, t *store.Task, change func(h *heldThing) bool) error {
	first := true
	return retryCAS(func() error {
		if !first {
			var err error
			if t, err = s.store.GetTask(ctx, t.ID); err != nil {
				return err
			}
		}
		first = false
		p, err := decodePause(t)
		if err != nil {
			return err
		}
		changed := false
		for i := range p.Holds {
			// Only the holds this node claimed (change compares the
			// claim): the same name in a later pause is another hold.
			if change(&p.Holds[i]) {
				changed = true
			}
		}
		if !changed || t.Runnable {
			return nil
		}
		next := *t
		if err := s.setPauseKeepingTimers(&next, p); err != nil {
			return err
		}
		if next.HoldAt.IsZero() && next.State.Terminal() {
			next.Pause = nil // an ended task keeps only its wake digest
			keepDigest(&next, p.WakeDigest)
		}
		_, err = s.commit(ctx, commitNote{prev: t, cause: "hold"}, &next, nil, false)
		return err
	})
}
