package engine

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/store"
)

// releaser releases what paused tasks hold once it is due (a hold's
// deadline, or at once when the task ended without resuming): its timer
// loop finds the due tasks, claims their holds with a compare-and-set (so
// that no other node runs the same release while the claim lasts), runs
// the agent's release for each and records what was released, or
// schedules a failed release again with the step backoff. It runs apart
// from the sweeper, so a hold is released on time even when nobody sweeps
// expiries.
type releaser struct {
	e        *Engine // commit, the task locks and the agents
	store    store.Store
	log      *slog.Logger
	obs      *observer
	now      func() time.Time
	lease    time.Duration // Config.LeaseDuration: how long a claim lasts
	retries  int           // Config.StepRetries
	retryMin time.Duration // Config.StepRetryMin
	retryMax time.Duration // Config.StepRetryMax
	loop     *timerLoop
}

// wake makes the releaser run a round soon, if at is before its next one.
func (rel *releaser) wake(at time.Time) { rel.loop.wake(at) }

// kick makes the releaser run a round soon.
func (rel *releaser) kick() { rel.loop.kick() }

// timer is the releaser's timer loop (for Start and Idle).
func (rel *releaser) timer() *timerLoop { return rel.loop }

// releaseDue runs the release of every hold whose deadline passed. It
// runs on its own timer, apart from the sweeper, so a hold is released on
// time even when nobody sweeps expiries.
func (rel *releaser) releaseDue(ctx context.Context) (int, error) {
	return actOnDue(ctx, rel.store, store.DueParams{Timer: store.TimerHold, Now: rel.now(), Limit: dueBatch}, rel.releaseHolds, rel.log, "release what a task holds")
}

// releaseHolds releases a task's due holds: it claims them with a
// compare-and-set (so no other node runs the same release while the claim
// lasts), runs the agent's release for each, and records what was
// released. A release cut short by a crash runs again when its claim
// lapses; the call's key lets the agent make that harmless.
func (rel *releaser) releaseHolds(ctx context.Context, t *store.Task) error {
	unlock := rel.e.lockTask(t.ID).Unlock
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
	now := rel.now()
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
		h.Releasing = now.Add(rel.lease).Truncate(time.Millisecond)
		claimed = append(claimed, i)
	}
	next := *t
	if err := p.storeKeepingTimers(&next); err != nil {
		return err
	}
	saved, err := rel.e.commit(ctx, commitNote{prev: t, cause: "hold"}, &next, nil, false)
	if err != nil {
		return err
	}
	unlock() // the claim is written: the releases run without the lock
	locked = false
	if len(claimed) == 0 {
		return nil
	}

	agent := rel.e.agentByName(t.Agent)
	released := map[string]time.Time{}
	failed := map[string]releaseFailure{}
	for _, i := range claimed {
		h := p.Holds[i]
		status := api.HoldStatus{Name: h.Name, Until: h.Until, Data: h.Data, Lapsed: true, Released: true}
		if agent == nil {
			rel.log.Error("cannot release a hold: its agent is not served here", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.String("hold", h.Name))
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, rel.lease)
		err := rel.callRelease(rctx, agent.agent, t, holdKey(t.ID, p.Question, h.Name), status)
		cancel()
		if err != nil {
			failed[h.Name] = releaseFailure{claim: h.Releasing, failures: h.Failures, err: err}
			continue
		}
		rel.log.Info("released a hold", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.String("hold", h.Name), slog.Time("deadline", h.Until))
		rel.obs.event(ctx, t.Agent, api.EventHoldReleased)
		if h.Early.IsZero() {
			rel.obs.event(ctx, t.Agent, api.EventHoldLapsed) // its deadline came while the task was still paused
		}
		released[h.Name] = h.Releasing
	}
	if len(failed) > 0 {
		if err := rel.markReleaseFailed(ctx, saved, failed); err != nil {
			return err
		}
	}
	if len(released) == 0 {
		return nil
	}
	if len(failed) > 0 { // the write above moved the task on
		if saved, err = rel.store.GetTask(ctx, t.ID); err != nil {
			return err
		}
	}
	return rel.markReleased(ctx, saved, released)
}

// holdKey is the idempotency key of a hold's release: unique per task,
// pause and hold.
func holdKey(taskID, questionID, name string) string {
	return taskID + "/" + questionID + "/hold/" + name
}

func (rel *releaser) callRelease(ctx context.Context, agent api.Agent, t *store.Task, key string, h api.HoldStatus) (err error) {
	r, ok := agent.(api.Releaser)
	if !ok {
		return api.Permanent(fmt.Errorf("agent %q cannot release holds", t.Agent))
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the release panicked: %v", p)
		}
	}()
	call := &api.Call{TaskID: t.ID, ContextID: t.ContextID, Tenant: t.Tenant, Principal: t.Owner, Key: key}
	api.Bind(call, releaseRuntime{s: rel.e, agent: t.Agent, task: t.ID})
	return r.Release(ctx, call, h)
}

// releaseRuntime is what a release's Call reaches: the task's wake token.
// A release runs no step, so it has nothing to stream: Progress and the
// artifacts do nothing.
type releaseRuntime struct {
	s           *Engine
	agent, task string
}

func (r releaseRuntime) WakeToken() string                                       { return r.s.wakeToken(r.agent, r.task) }
func (releaseRuntime) Progress(context.Context, string) error                    { return nil }
func (releaseRuntime) AddArtifact(context.Context, *a2a.Artifact) error          { return nil }
func (releaseRuntime) AppendArtifact(context.Context, *a2a.Artifact, bool) error { return nil }

// markReleased records released holds on the task, retrying the
// compare-and-set while the task changes under it. A task that resumed in
// the meantime took its holds back; there is nothing left to record.
func (rel *releaser) markReleased(ctx context.Context, t *store.Task, claims map[string]time.Time) error {
	return rel.updateHolds(ctx, t, func(h *heldThing) bool {
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
func (rel *releaser) updateHolds(ctx context.Context, t *store.Task, change func(h *heldThing) bool) error {
	first := true
	return retryCAS(func() error {
		if !first {
			var err error
			if t, err = rel.store.GetTask(ctx, t.ID); err != nil {
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
		if err := p.storeKeepingTimers(&next); err != nil {
			return err
		}
		if next.HoldAt.IsZero() && next.State.Terminal() {
			next.Pause = nil // an ended task keeps only its wake digest
			keepDigest(&next, p.WakeDigest)
		}
		_, err = rel.e.commit(ctx, commitNote{prev: t, cause: "hold"}, &next, nil, false)
		return err
	})
}

// releaseFailure is a hold's release that returned an error.
type releaseFailure struct {
	claim    time.Time // the claim the release ran under
	failures int       // failed tries before this one
	err      error
}

// markReleaseFailed schedules the failed releases again with the step
// backoff (their claim moves to the retry's due time, so any node's
// releaser takes them then), or gives a release up, logged with its error,
// when the error is permanent or the budget (StepRetries) is spent: the
// hold is then recorded as done and not tried again.
func (rel *releaser) markReleaseFailed(ctx context.Context, t *store.Task, failed map[string]releaseFailure) error {
	now := rel.now()
	return rel.updateHolds(ctx, t, func(h *heldThing) bool {
		f, ok := failed[h.Name]
		if !ok || h.Released || !h.Releasing.Equal(f.claim) {
			return false
		}
		tries := f.failures + 1
		log := rel.log.With(slog.String("task", t.ID), slog.String("hold", h.Name), slog.Int("attempt", tries), slog.Any("err", f.err))
		if api.IsPermanent(f.err) || tries > max(rel.retries, 0) {
			log.Error("release failed and will not be tried again (permanent error or retries spent); the hold is given up")
			h.Released, h.Releasing, h.Failures = true, time.Time{}, tries
			return true
		}
		wait := backoff(tries-1, rel.retryMin, rel.retryMax)
		log.Warn("release failed; it will be tried again", slog.Duration("in", wait))
		h.Failures = tries
		h.Releasing = now.Add(wait).Truncate(time.Millisecond)
		return true
	})
}
