package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/questionwire"
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
	now     func() time.Time
	log     *slog.Logger
}

func newTimerLoop(name string, every time.Duration, now func() time.Time, log *slog.Logger) *timerLoop {
	return &timerLoop{name: name, every: every, kicks: make(chan struct{}, 1), now: now, log: log}
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

// nextRound is closed when the loop ends its next round (for Idle).
func (l *timerLoop) nextRound() <-chan struct{} {
	_, next := l.rounds.after()
	return next
}

// run runs work in rounds until ctx ends; next, when not nil, tells
// when the next round is due.
func (l *timerLoop) run(ctx context.Context, work func(context.Context) (int, error), next func(context.Context) (time.Time, error)) {
	for {
		l.planned.Store(0)
		n, err := work(ctx)
		l.rounds.ended()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.log.Error("timer round failed; retrying after its interval", slog.String("timer", l.name), slog.Any("err", err))
		}
		if err == nil && n >= dueBatch {
			continue
		}
		wait := l.every
		if err == nil && next != nil {
			if at, err := next(ctx); err == nil && !at.IsZero() {
				wait = min(wait, max(at.Sub(l.now()), time.Millisecond))
			}
		}
		l.planned.Store(l.now().Add(wait).UnixMilli())
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
	return actOnDue(ctx, s.store, store.DueParams{Timer: store.TimerWake, Now: s.now(), Limit: dueBatch}, s.wakeTask, s.log, "act on a due question")
}

// actOnDue runs act on each task the store finds due (p), and returns how
// many it found. A conflict (someone changed the task first) is the next
// round's to see; another failure is logged as what, and the round goes
// on with the next task.
func actOnDue(ctx context.Context, st store.Store, p store.DueParams, act func(context.Context, *store.Task) error, log *slog.Logger, what string) (int, error) {
	tasks, err := st.DueTasks(ctx, p)
	if err != nil {
		return 0, err
	}
	for _, t := range tasks {
		if err := act(ctx, t); err != nil && !errors.Is(err, store.ErrConflict) {
			if ctx.Err() != nil {
				return len(tasks), nil
			}
			log.Error(what, slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
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
			next, e, err := s.outcomes.endRow(t, a2a.TaskStateFailed,
				fmt.Sprintf("Stopped waiting at %s: %s", p.Expires.UTC().Format(time.RFC3339), p.Await), now)
			if err != nil {
				return err
			}
			return s.write(ctx, t, next, []store.LogEntry{e})
		}
	}
	var p *pauseState
	var expires time.Time
	switch {
	case t.State == a2a.TaskStateInputRequired && len(t.Question) > 0:
		var q question.Question
		if err := questionwire.Decode(t.Question, &q); err != nil {
			return fmt.Errorf("decode open question: %w", err)
		}
		expires = q.Expires
		if !now.Before(expires) {
			_, err := s.expire(ctx, t)
			return err
		}
		var err error
		if p, err = decodePause(t); err != nil {
			return err
		}
		if p.Expires.IsZero() {
			// A question paused before the runtime kept pause state (or by
			// hand): its expiry is the question's, and no reminders are owed.
			p.Asked, p.Expires, p.Reminded = q.Expires, q.Expires, len(s.cfg.Reminders)
		}
	case t.State == a2a.TaskStateAuthRequired:
		var err error
		if p, err = decodePause(t); err != nil {
			return err
		}
		if p.Auth == "" {
			break // paused with no end (before pauses for a credential expired)
		}
		expires = p.Expires
		if !now.Before(expires) {
			_, err := s.expire(ctx, t)
			return err
		}
	}
	if expires.IsZero() {
		// Nothing open is left to remind of or expire.
		next := *t
		next.WakeAt = time.Time{}
		return s.write(ctx, t, &next, nil)
	}
	next := *t
	var entries []store.LogEntry
	passed := p.Reminded
	for passed < len(s.cfg.Reminders) && !now.Before(s.outcomes.reminderAt(p, passed)) {
		passed++
	}
	if passed > p.Reminded {
		// Points that passed while no sweeper ran fold into one reminder.
		e, err := reminderEntry(t, passed, len(s.cfg.Reminders), expires, now)
		if err != nil {
			return err
		}
		entries = append(entries, e)
		p.Reminded = passed
	}
	if err := s.outcomes.setPause(&next, p); err != nil {
		return err
	}
	return s.write(ctx, t, &next, entries)
}

// ReminderKey is the metadata key of a reminder notification: a status
// update event whose metadata holds {ReminderKey: {"reminder": n, "of": m,
// "expires": RFC 3339}} carries the open question (or the auth-required
// status) unchanged.
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

// expiryEnd is how a task whose question q expired unanswered ends, when
// its expiry action is not a default answer.
func expiryEnd(q *question.Question, action api.ExpiryAction) (a2a.TaskState, string) {
	at := q.Expires.UTC().Format(time.RFC3339Nano)
	if action == api.ExpireCancel {
		return a2a.TaskStateCanceled, fmt.Sprintf("No answer in time: question %s expired at %s, so the task was canceled.", q.ID, at)
	}
	return a2a.TaskStateFailed, fmt.Sprintf("No answer in time: question %s expired at %s.", q.ID, at)
}

// authExpiryEnd is how a task whose request for a credential (p) expired
// ends: a credential has no default answer.
func authExpiryEnd(p *pauseState) (a2a.TaskState, string) {
	at := p.Expires.UTC().Format(time.RFC3339Nano)
	if p.OnExpiry == api.ExpireCancel {
		return a2a.TaskStateCanceled, fmt.Sprintf("No credential in time: the request for it expired at %s, so the task was canceled. It asked: %s", at, p.Auth)
	}
	return a2a.TaskStateFailed, fmt.Sprintf("No credential in time: the request for it expired at %s. It asked: %s", at, p.Auth)
}

// expire acts on a task whose open question expired, as the agent chose
// when it asked: fail (the default), cancel, or resume with its default
// answer; or on a task whose request for a credential expired: fail or
// cancel. It is a compare-and-set like every other transition, so it
// cannot race an answer (or a credential) into two outcomes:
// store.ErrConflict when the task changed first.
func (s *Engine) expire(ctx context.Context, t *store.Task) (*store.Task, error) {
	p, err := decodePause(t)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var next *store.Task
	var entries []store.LogEntry
	logMsg, logAttr := "credential request expired", slog.Attr{}
	if t.State == a2a.TaskStateAuthRequired {
		var e store.LogEntry
		state, text := authExpiryEnd(p)
		next, e, err = s.outcomes.endRow(t, state, text, now)
		entries = []store.LogEntry{e}
	} else {
		var q question.Question
		if err := questionwire.Decode(t.Question, &q); err != nil {
			return nil, fmt.Errorf("decode open question: %w", err)
		}
		logMsg, logAttr = "question expired", slog.String("question", q.ID)
		switch p.OnExpiry {
		case api.ExpireDefault:
			ans := &question.Answer{QuestionID: q.ID, Fields: p.DefaultAnswer}
			in := runInput{Kind: inputAnswer, Question: &q, Answer: ans, Expired: true, Key: t.ID + "/" + q.ID}
			note := fmt.Sprintf("No answer in time: question %s expired at %s. The task continues with the agent's default answer %s.",
				q.ID, q.Expires.UTC().Format(time.RFC3339Nano), p.DefaultAnswer)
			next, entries, err = s.outcomes.resumeRow(t, &in, nil, note)
			if err == nil {
				err = withInput(next, &in)
			}
		default:
			var e store.LogEntry
			state, text := expiryEnd(&q, p.OnExpiry)
			next, e, err = s.outcomes.endRow(t, state, text, now)
			entries = []store.LogEntry{e}
		}
	}
	if err != nil {
		return nil, err
	}
	saved, err := s.commit(ctx, commitNote{prev: t, cause: "expire"}, next, entries, false)
	if err != nil {
		return nil, err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, logMsg, slog.String("task", t.ID), logAttr, slog.String("then", expiryResult(saved)))
	if saved.Runnable {
		s.pool.dispatch(&work{task: saved})
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
