package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// A step that returns an error is tried again, durably: the task stays
// runnable with its pending input (the same idempotency key, the attempt
// count one higher) and its lease is set to the retry's due time with no
// owner, so the next node to claim runnable tasks after that time (this
// one or another, before or after a restart) runs it. No goroutine waits
// for a retry. A permanent error (Permanent) or a spent budget fails the
// task with a reason that names the step and the attempts; the error
// itself goes to the log. See docs/decisions/0070-step-retries.md.

// stepName names the step an input runs, for a person reading a reason.
func stepName(in *runInput) string {
	switch in.Kind {
	case inputStart:
		return "start"
	case inputAnswer:
		return "resume with the answer"
	case inputAuth:
		return "resume after the credential"
	case inputEvent:
		return "resume on the event"
	}
	return in.Kind
}

// stepPanic is a step's panic, as the error its run ends with.
type stepPanic struct{ err error }

func (p *stepPanic) Error() string { return p.err.Error() }
func (p *stepPanic) Unwrap() error { return p.err }

// FailPanicsAtOnce makes a step that panics fail its task at once, where it
// is otherwise tried again like a step's error: for askpointtest, where a
// panic is a bug to see at once, not a fault to ride out. Call it before
// Start.
func (s *Engine) FailPanicsAtOnce() { s.panicsFail.Store(true) }

// stepFailed decides what a step's error leads to: ok true when a retry was
// written (the task stays runnable, due again at its backoff); else the
// outcome that fails the task.
func (r *run) stepFailed(ctx context.Context, stepErr error) (api.Outcome, bool) {
	s := r.s
	in := r.in
	if in == nil {
		in = &runInput{}
	}
	attempts := in.Attempt + 1
	// r.latest, not r.task: the working-status timer may be writing it.
	log := s.log.With(slog.String("task", r.latest().ID), slog.String("agent", r.agent),
		slog.String("step", stepName(in)), slog.Int("attempt", attempts), slog.Any("err", stepErr))
	if sp := (*stepPanic)(nil); s.panicsFail.Load() && errors.As(stepErr, &sp) {
		log.Error("agent step panicked; the task fails at once (panics are not tried again on this server)")
		return api.Fail(fmt.Sprintf("The agent's step (%s) panicked, at attempt %d; it was not tried again. The cause is in the server's log.",
			stepName(in), attempts)), false
	}
	if api.IsPermanent(stepErr) {
		log.Warn("agent step failed with a permanent error; the task fails")
		return api.Fail(fmt.Sprintf("The agent's step (%s) failed with an error it marks permanent, at attempt %d; the cause is in the server's log.",
			stepName(in), attempts)), false
	}
	if attempts > max(s.cfg.StepRetries, 0) {
		log.Warn("agent step failed and its retries are spent; the task fails")
		times := fmt.Sprintf("%d times", attempts)
		if attempts == 1 {
			times = "once (retries are off)"
		}
		return api.Fail(fmt.Sprintf("The agent's step (%s) failed %s; it was not tried again. The cause is in the server's log.",
			stepName(in), times)), false
	}
	wait := backoff(attempts-1, s.cfg.StepRetryMin, s.cfg.StepRetryMax)
	retry := *in
	retry.Attempt = attempts
	raw, err := json.Marshal(&retry)
	if err != nil {
		log.Error("encode a step's retry; the task fails", slog.Any("encode", err))
		return api.Fail(fmt.Sprintf("The agent's step (%s) failed and could not be scheduled again.", stepName(in))), false
	}
	note := fmt.Sprintf("The agent's step (%s) failed (attempt %d of %d); retrying in %s.",
		stepName(in), attempts, max(s.cfg.StepRetries, 0)+1, wait.Round(time.Millisecond))
	err = r.writeRetried(ctx, func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error) {
		next.Runnable = true
		next.LeaseOwner = "" // no node holds it: any claims it once due
		next.LeaseUntil = now.Add(wait)
		next.Input = raw
		msg := agentMessage(next, note)
		st, e, err := statusEntry(next, a2a.TaskStateWorking, msg, now)
		if err != nil {
			return nil, err
		}
		next.State, next.Status = a2a.TaskStateWorking, st
		return append(entries, e), nil
	})
	if err != nil {
		if !errors.Is(err, errLost) {
			// Not written: the task keeps its lease, which lapses and
			// gives the step to a claimer, as after a crash.
			log.Error("write a step's retry", slog.Any("write", err))
		}
		return api.Outcome{}, true
	}
	s.stepRetries.Add(1)
	log.Warn("agent step failed; it will be tried again", slog.Duration("in", wait))
	return api.Outcome{}, true
}

// writeRetried is update, tried again while the store fails transiently
// and the run's lease still stands (a quick step's unwritten message has
// no lease: its caller's request decides again). When it gives up, the
// lease lapses and a claimer runs the step again with the same key.
func (r *run) writeRetried(ctx context.Context, change func(next *store.Task, now time.Time, entries []store.LogEntry) ([]store.LogEntry, error)) error {
	for n := 0; ; n++ {
		err := r.update(ctx, change)
		if err == nil || !store.IsTransient(err) {
			return err
		}
		r.mu.Lock()
		until, pending := r.task.LeaseUntil, r.pending != nil || r.lostPending
		r.mu.Unlock()
		wait := backoff(n, 50*time.Millisecond, time.Second)
		if pending || r.s.now().Add(wait).After(until) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-r.s.pool.stopping():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// StepRetries is how many step retries this node scheduled (for tests
// and metrics).
func (s *Engine) StepRetries() int64 { return s.stepRetries.Load() }
