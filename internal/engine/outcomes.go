package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/questionwire"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// outcomes turns what a step or a timer decided into the task's next row
// and log entries: a step's Outcome (applyOutcome, with its question, its
// pause and its holds), a resume (resumeRow) and an end (endRow). It
// writes nothing: commit does.
type outcomes struct {
	node        string        // Config.NodeID: the lease owner of a resumed task
	lease       time.Duration // Config.LeaseDuration
	expiry      time.Duration // Config.QuestionExpiry
	maxAttempts int           // Config.MaxAttempts
	reminders   []float64     // Config.Reminders
	now         func() time.Time
	log         *slog.Logger
	obs         *observer
	// releases reports whether the named agent can release holds.
	releases func(agent string) bool
}

// resumeRow builds the write that resumes a paused task with in: the task
// becomes working and runnable under this node's lease, and gets back what
// it held. msg, when not nil, is the caller's message, appended to the
// history; note, when not empty, is a status message saying why the task
// resumed (for people and push receivers).
func (oc *outcomes) resumeRow(t *store.Task, in *runInput, msg *a2a.Message, note string) (*store.Task, []store.LogEntry, error) {
	now := oc.now()
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
	next.LeaseOwner = oc.node
	next.LeaseUntil = now.Add(oc.lease)
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

// applyOutcome turns an outcome into the task's next row and log entries.
// It appends the entries to entries and returns the list.
// historyIsRequest: the task's history holds only its request so far (the
// run wrote all of it), so a question asked now is the pause's Fresh one.
// trace is the asking span's traceparent a question's pause keeps ("" for
// none).
func (oc *outcomes) applyOutcome(entries []store.LogEntry, next *store.Task, o api.Outcome, historyIsRequest bool, trace string, now time.Time) ([]store.LogEntry, error) {
	next.Runnable = false
	next.LeaseOwner = ""
	next.LeaseUntil = time.Time{}
	next.Input = nil
	next.Question = nil
	var digest string
	if len(next.Pause) > 0 { // without a pause state there is no digest to keep
		if p, err := decodePause(next); err == nil {
			digest = p.WakeDigest
		} else {
			oc.log.Error("the pause state of a task cannot be read; a late wake will be told not found", slog.String("task", next.ID), slog.String("agent", next.Agent), slog.Any("err", err))
		}
	}
	next.Pause, next.WakeAt, next.HoldAt = nil, time.Time{}, time.Time{}
	if o.Kind() == api.OutcomeComplete || o.Kind() == api.OutcomeFail || o.Kind() == api.OutcomeReject {
		// A wake that comes after the end is told it is late.
		defer keepDigest(next, digest)
	}

	var state a2a.TaskState
	var msg *a2a.Message
	var data any // what msg's data part encodes as, when not its value
	switch o.Kind() {
	case api.OutcomeAsk:
		releases := oc.releases(next.Agent)
		q, err := oc.prepareQuestion(o.Question(), next.ID, next.Version, now)
		if err != nil {
			return oc.refuse(entries, next, o, releases, "The agent asked a question that cannot be answered: "+err.Error(), now)
		}
		if q.Attempt > q.MaxAttempts {
			// The agent re-asked (askpoint.Reask) past the cap: the end a
			// re-ask after a validation error would have come to.
			return oc.refuse(entries, next, o, releases, noValidAnswer(q.Attempt-1, q.Errors), now)
		}
		cp, err := json.Marshal(o.Checkpoint())
		if err != nil {
			return oc.refuse(entries, next, o, releases, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		pause, err := oc.preparePause(o, q, releases, now)
		if err != nil {
			return oc.refuse(entries, next, o, releases, "The agent asked a question the runtime cannot keep: "+err.Error(), now)
		}
		if historyIsRequest {
			pause.Fresh = q.ID
		}
		pause.Trace = trace
		q.Holds = nil // the runtime's to say, from the holds it keeps
		for _, h := range pause.Holds {
			q.Holds = append(q.Holds, question.Held{Name: h.Name, Until: h.Until})
		}
		qraw, err := questionwire.Encode(q)
		if err != nil {
			return nil, err
		}
		next.Checkpoint, next.Question = cp, qraw
		if api.WakeTokenOf(o) != "" {
			if len(api.WakeTokenOf(o)) < minWakeToken {
				return oc.refuse(entries, next, o, releases, fmt.Sprintf("The agent's wake token is shorter than %d characters.", minWakeToken), now)
			}
			pause.WakeDigest = tokenDigest(api.WakeTokenOf(o))
		}
		if err := oc.setPause(next, pause); err != nil {
			return nil, err
		}
		msg, data = questionwire.MessageAndWire(q)
		state = a2a.TaskStateInputRequired
		msg.TaskID, msg.ContextID = a2a.TaskID(next.ID), next.ContextID
	case api.OutcomeAuth:
		releases := oc.releases(next.Agent)
		pause, err := oc.prepareAuth(o, next.Version, releases, now)
		if err != nil {
			return oc.refuse(entries, next, o, releases, "The agent asked for a credential the runtime cannot wait for: "+err.Error(), now)
		}
		cp, err := json.Marshal(o.Checkpoint())
		if err != nil {
			return oc.refuse(entries, next, o, releases, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		next.Checkpoint = cp
		if err := oc.setPause(next, pause); err != nil {
			return nil, err
		}
		state, msg = a2a.TaskStateAuthRequired, agentMessage(next, o.Text())
	case api.OutcomeAwait:
		releases := oc.releases(next.Agent)
		if len(api.WakeTokenOf(o)) < minWakeToken {
			return oc.refuse(entries, next, o, releases, fmt.Sprintf("The agent waits for an event with a wake token shorter than %d characters.", minWakeToken), now)
		}
		if !api.DeadlineOf(o).After(now) {
			return oc.refuse(entries, next, o, releases, "The agent waits for an event with a deadline that has passed.", now)
		}
		if !o.Expiry().IsZero() {
			return oc.refuse(entries, next, o, releases, "The agent waits for an event with ExpiresAt set: a wait ends at Await's deadline; ExpiresAt is for RequireAuth.", now)
		}
		cp, err := json.Marshal(o.Checkpoint())
		if err != nil {
			return oc.refuse(entries, next, o, releases, "The agent's checkpoint could not be saved: "+err.Error(), now)
		}
		next.Checkpoint = cp
		// Question names the pause in hold keys: unique per pause.
		p := &pauseState{Asked: now, Await: o.Text(), Question: fmt.Sprintf("await-%d", next.Version),
			Expires: ceilMilli(api.DeadlineOf(o)), WakeDigest: tokenDigest(api.WakeTokenOf(o))}
		if p.Holds, err = prepareHolds(o.Holds(), p.Expires, "the wait's deadline", releases); err != nil {
			return oc.refuse(entries, next, o, releases, "The agent waits while holding what the runtime cannot keep: "+err.Error(), now)
		}
		raw, err := encodePause(p)
		if err != nil {
			return nil, err
		}
		next.Pause, next.WakeAt, next.HoldAt = raw, p.Expires, p.nextRelease()
		state, msg = a2a.TaskStateWorking, agentMessage(next, o.Text())
	case api.OutcomeComplete:
		for _, a := range o.Artifacts() {
			e, err := addArtifact(next, a, now)
			if err != nil {
				return nil, err
			}
			entries = append(entries, e)
		}
		next.Checkpoint = nil
		state = a2a.TaskStateCompleted
		if o.Text() != "" {
			msg = agentMessage(next, o.Text())
		}
	case api.OutcomeFail, api.OutcomeReject:
		next.Checkpoint = nil
		state = a2a.TaskStateFailed
		if o.Kind() == api.OutcomeReject {
			state = a2a.TaskStateRejected
		}
		msg = agentMessage(next, o.Text())
	default:
		return oc.applyOutcome(entries, next, api.Fail("The agent ended its step without an outcome."), false, "", now)
	}
	st, e, err := statusEntryData(next, state, msg, data, now)
	if err != nil {
		return nil, err
	}
	next.State, next.Status = state, st
	return append(entries, e), nil
}

// refuse fails the task of an Ask or Await outcome the runtime cannot
// keep, saying why, and keeps the holds the outcome declared, due for
// release at once: the step reserved them before it asked.
func (oc *outcomes) refuse(entries []store.LogEntry, next *store.Task, o api.Outcome, releases bool, reason string, now time.Time) ([]store.LogEntry, error) {
	entries, err := oc.applyOutcome(entries, next, api.Fail(reason), false, "", now)
	if err != nil {
		return nil, err
	}
	oc.keepRefusedHolds(next, o.Holds(), releases, now)
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
func (oc *outcomes) prepareQuestion(in *question.Question, taskID string, version int64, now time.Time) (*question.Question, error) {
	q := *in
	if q.ID == "" {
		q.ID = questionID(taskID, version)
	}
	if q.Expires.IsZero() {
		q.Expires = now.Add(oc.expiry)
	}
	q.Expires = ceilMilli(q.Expires)
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = oc.maxAttempts
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

// preparePause checks an Ask outcome's expiry action and holds against its
// question and builds the pause state.
func (oc *outcomes) preparePause(o api.Outcome, q *question.Question, releases bool, now time.Time) (*pauseState, error) {
	if !o.Expiry().IsZero() {
		return nil, errors.New("ExpiresAt is for RequireAuth; a question's expiry is its Expires field")
	}
	p := &pauseState{Asked: now, Question: q.ID, Expires: q.Expires, OnExpiry: o.ExpiryAction()}
	if oc.obs.on() {
		p.Kind = oc.obs.kind(q.Schema)
	}
	switch p.OnExpiry {
	case api.ExpireFail, api.ExpireCancel:
	case api.ExpireDefault:
		raw, err := json.Marshal(api.DefaultAnswerOf(o))
		if err != nil {
			return nil, fmt.Errorf("its default answer cannot be encoded: %v", err)
		}
		if errs := q.Validate(raw); len(errs) > 0 {
			var where []string
			for _, e := range errs {
				ptr := e.Pointer
				if ptr == "" {
					ptr = "the answer"
				}
				where = append(where, ptr+": "+e.Message)
			}
			return nil, fmt.Errorf("its default answer %s is not a valid answer (%s)", raw, strings.Join(where, "; "))
		}
		p.DefaultAnswer = raw
	default:
		return nil, fmt.Errorf("unknown expiry action %q (use api.ExpireFail, api.ExpireCancel or DefaultAnswer)", p.OnExpiry)
	}
	holds, err := prepareHolds(o.Holds(), q.Expires, "the question expires", releases)
	if err != nil {
		return nil, err
	}
	p.Holds = holds
	return p, nil
}

// prepareAuth checks a RequireAuth outcome and builds its pause: when it
// expires (the server's question expiry when the agent set none), what
// the expiry does and what the task holds meanwhile.
func (oc *outcomes) prepareAuth(o api.Outcome, version int64, releases bool, now time.Time) (*pauseState, error) {
	if strings.TrimSpace(o.Text()) == "" {
		return nil, errors.New("it does not say which credential it needs (RequireAuth's text is empty)")
	}
	expires := o.Expiry()
	if expires.IsZero() {
		expires = now.Add(oc.expiry)
	}
	expires = ceilMilli(expires)
	if !expires.After(now) {
		return nil, fmt.Errorf("its expiry %s has passed", expires.Format(time.RFC3339Nano))
	}
	// Question names the pause in hold keys: unique per pause.
	p := &pauseState{Asked: now, Auth: o.Text(), Question: fmt.Sprintf("auth-%d", version), Expires: expires, OnExpiry: o.ExpiryAction()}
	switch p.OnExpiry {
	case api.ExpireFail, api.ExpireCancel:
	case api.ExpireDefault:
		return nil, errors.New("a credential has no default answer (DefaultAnswer is for questions; use OnExpiry with ExpireFail or ExpireCancel)")
	default:
		return nil, fmt.Errorf("unknown expiry action %q (use ExpireFail or ExpireCancel)", p.OnExpiry)
	}
	holds, err := prepareHolds(o.Holds(), expires, "the request for a credential expires", releases)
	if err != nil {
		return nil, err
	}
	p.Holds = holds
	return p, nil
}

// setPause stores p on next and sets the task's timers from it: the wake
// timer while a question is open or a credential awaited, the hold timer
// while a hold is unreleased.
func (oc *outcomes) setPause(next *store.Task, p *pauseState) error {
	next.WakeAt, next.HoldAt, next.Pause = time.Time{}, time.Time{}, nil
	if p == nil {
		return nil
	}
	open := len(next.Question) > 0 || p.Auth != ""
	if p.Holds == nil && !open {
		return nil // nothing left to keep
	}
	raw, err := encodePause(p)
	if err != nil {
		return err
	}
	next.Pause = raw
	if open {
		next.WakeAt = oc.nextWake(p)
	}
	next.HoldAt = p.nextRelease()
	return nil
}

// nextWake is when the sweeper must look at an open question (or a
// request for a credential) next: its next reminder point, or its expiry.
func (oc *outcomes) nextWake(p *pauseState) time.Time {
	if p.Reminded < len(oc.reminders) && p.Expires.After(p.Asked) {
		return oc.reminderAt(p, p.Reminded)
	}
	return p.Expires
}

// reminderAt is the time of reminder point i of p.
func (oc *outcomes) reminderAt(p *pauseState, i int) time.Time {
	span := p.Expires.Sub(p.Asked)
	return p.Asked.Add(time.Duration(float64(span) * oc.reminders[i])).Truncate(time.Millisecond)
}

// keepRefusedHolds keeps on next, which a refused Ask or Await ended, the
// holds that outcome declared, due for release at once. Holds without a
// name, or of an agent without a release (releases false), cannot be
// released and are left.
func (oc *outcomes) keepRefusedHolds(next *store.Task, hs []api.Hold, releases bool, now time.Time) {
	if len(hs) == 0 || !releases {
		return
	}
	p, err := decodePause(next)
	if err != nil {
		p = &pauseState{}
	}
	p.Question = fmt.Sprintf("refused-%d", next.Version) // hold keys are unique per pause
	at := now.UTC().Truncate(time.Millisecond)
	seen := map[string]bool{}
	for _, h := range hs {
		if h.Name == "" || seen[h.Name] {
			continue
		}
		seen[h.Name] = true
		data, err := json.Marshal(h.Data)
		if err != nil {
			data = nil
		}
		until := h.Until.UTC().Truncate(time.Millisecond)
		if h.Until.IsZero() {
			until = at
		}
		p.Holds = append(p.Holds, heldThing{Name: h.Name, Until: until, Data: data, Early: at})
	}
	if len(p.Holds) > 0 {
		if err := oc.setPause(next, p); err != nil {
			oc.log.Error("keep the holds of a refused step", slog.String("task", next.ID), slog.String("agent", next.Agent), slog.Any("err", err))
		}
	}
}

// keepHoldsOnEnd keeps the unreleased holds of a paused task that ends
// without resuming, due for release at once.
func (oc *outcomes) keepHoldsOnEnd(t, next *store.Task, now time.Time) {
	next.WakeAt, next.HoldAt, next.Pause = time.Time{}, time.Time{}, nil
	p, err := decodePause(t)
	if err != nil {
		// Nothing is known of what the task held: say so loudly, since
		// its releases will not run.
		oc.log.Error("the pause state of an ending task cannot be read; what it held is not released", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
		return
	}
	defer keepDigest(next, p.WakeDigest)
	if len(p.Holds) == 0 {
		return
	}
	rest := &pauseState{Question: p.Question, WakeDigest: p.WakeDigest}
	for _, h := range p.Holds {
		if h.Released {
			continue
		}
		if h.Releasing.IsZero() && h.Until.After(now) {
			h.Early = now.Truncate(time.Millisecond)
		}
		rest.Holds = append(rest.Holds, h)
	}
	if len(rest.Holds) == 0 {
		return
	}
	_ = oc.setPause(next, rest)
}

// endRow builds the row of t ended in a terminal state with a status
// message for the caller: no work owed, no lease, no open question, no
// checkpoint.
//
// What a paused task held and has not released stays on the row, due for
// release at once.
func (oc *outcomes) endRow(t *store.Task, state a2a.TaskState, text string, now time.Time) (*store.Task, store.LogEntry, error) {
	next := *t
	next.Runnable, next.LeaseOwner, next.LeaseUntil = false, "", time.Time{}
	next.Input, next.Question, next.Checkpoint = nil, nil, nil
	oc.keepHoldsOnEnd(t, &next, now)
	st, e, err := statusEntry(&next, state, agentMessage(&next, text), now)
	if err != nil {
		return nil, store.LogEntry{}, err
	}
	next.State, next.Status = state, st
	return &next, e, nil
}

// noValidAnswer is why a task fails at its question's attempt cap, after
// a validation re-ask or the agent's own (askpoint.Reask) alike.
func noValidAnswer(attempts int, last []question.FieldError) string {
	return fmt.Sprintf("No valid answer after %d attempts. Last errors: %s", attempts, question.ErrorsText(last))
}
