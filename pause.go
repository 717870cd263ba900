package askpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// ExpiryAction says what happens to a task whose question expires
// unanswered.
type ExpiryAction string

const (
	// ExpireFail ends the task failed, with a status message naming the
	// question and when it expired. The default.
	ExpireFail ExpiryAction = "fail"
	// ExpireCancel ends the task canceled.
	ExpireCancel ExpiryAction = "cancel"
	// ExpireDefault resumes the task with the default answer set by
	// [Outcome.DefaultAnswer]; the agent's step sees Call.Expired.
	ExpireDefault ExpiryAction = "default"
)

// OnExpiry sets what an Ask outcome's question does when it expires
// unanswered: [ExpireFail] (the default) or [ExpireCancel]. To resume
// with an answer instead, use [Outcome.DefaultAnswer].
func (o Outcome) OnExpiry(a ExpiryAction) Outcome {
	o.onExpiry = a
	return o
}

// DefaultAnswer makes an Ask outcome's question resume the task with
// answer when it expires unanswered. answer must encode to a JSON object
// valid against the question's schema; the runtime checks it when the
// agent asks.
func (o Outcome) DefaultAnswer(answer any) Outcome {
	o.onExpiry = ExpireDefault
	o.defaultAnswer = answer
	return o
}

// Hold declares something the task holds while its question is open, or
// while it awaits an event ([Await]): a seat, stock, a budget reservation,
// a sub-agent's task. The runtime calls the agent's
// release ([Releaser], or Steps.OnRelease) for it at h.Until if the task
// has not resumed by then, or as soon as the task ends without resuming
// (it expires, or the caller cancels). A task that resumes first gets its
// holds back in [Call.Holds].
func (o Outcome) Hold(h Hold) Outcome {
	o.holds = append(o.holds, h)
	return o
}

// Holds are an Ask outcome's holds.
func (o Outcome) Holds() []Hold { return o.holds }

// ExpiryAction is what an Ask outcome's question does at its expiry.
func (o Outcome) ExpiryAction() ExpiryAction {
	if o.onExpiry == "" {
		return ExpireFail
	}
	return o.onExpiry
}

// Hold is something a paused task holds.
type Hold struct {
	// Name identifies the hold within the task, for people and logs
	// ("seat 14C"). Required and unique per question.
	Name string
	// Until is the release deadline: no later than the question's expiry.
	// Zero means the question's expiry.
	Until time.Time
	// Data is what the release needs (encoded to JSON), such as the
	// reservation's ID.
	Data any
}

// HoldStatus is a hold as the runtime tracks it.
type HoldStatus struct {
	Name  string
	Until time.Time
	Data  json.RawMessage
	// Lapsed: the deadline passed before the task resumed. The thing held
	// may be gone; re-check before acting on it.
	Lapsed bool
	// Released: the runtime started the release. It may still be running,
	// or have failed (then it is not retried once the task resumed): an
	// agent that needs the thing gone releases it itself, which releases
	// being idempotent makes harmless.
	Released bool
}

// Releaser is implemented by agents that hold things while paused. The
// runtime calls Release on the hold's deadline, on whichever node gets to
// it first, even when nobody acts on the question's expiry. call carries the
// task's identity and an idempotency key for the release (call.Key); it has
// no request or message. A release that returns an error is tried again
// after the lease duration.
type Releaser interface {
	Release(ctx context.Context, call *Call, h HoldStatus) error
}

// releases reports whether Steps can release holds.
func (s Steps[C, A]) releases() bool { return s.OnRelease != nil }

func canRelease(a Agent) bool {
	if s, ok := a.(interface{ releases() bool }); ok {
		return s.releases()
	}
	_, ok := a.(Releaser)
	return ok
}

// pauseState is the engine's state of a pause, kept in store.Task.Pause.
// It outlives the question only to release holds of a task that ended
// without resuming.
type pauseState struct {
	// Asked is when the first question of the pause was asked; reminder
	// points are fractions of Asked..Expires.
	Asked         time.Time       `json:"asked,omitzero"`
	Question      string          `json:"question,omitempty"` // the first question's ID: hold keys are unique per pause
	Expires       time.Time       `json:"expires,omitzero"`
	OnExpiry      ExpiryAction    `json:"onExpiry,omitempty"`
	DefaultAnswer json.RawMessage `json:"defaultAnswer,omitempty"`
	Reminded      int             `json:"reminded,omitempty"` // reminder points passed
	// WakeDigest is the SHA-256 of the token Server.Wake needs, "" when
	// no event may resume the task.
	WakeDigest string `json:"wakeDigest,omitempty"`
	// Await says what a working task without a run waits for (Await);
	// Expires is then its deadline.
	Await string      `json:"await,omitempty"`
	Holds []heldThing `json:"holds,omitempty"`
}

type heldThing struct {
	Name  string          `json:"name"`
	Until time.Time       `json:"until"`
	Data  json.RawMessage `json:"data,omitempty"`
	// Early: the task ended without resuming, so the release is due at
	// this time instead of Until.
	Early time.Time `json:"early,omitzero"`
	// Releasing: a node claimed the release until this time.
	Releasing time.Time `json:"releasing,omitzero"`
	Released  bool      `json:"released,omitempty"`
}

// due is when the hold's release is due (or its claim lapses).
func (h *heldThing) due() time.Time {
	switch {
	case !h.Releasing.IsZero():
		return h.Releasing
	case !h.Early.IsZero():
		return h.Early
	}
	return h.Until
}

func decodePause(t *store.Task) (*pauseState, error) {
	p := &pauseState{}
	if len(t.Pause) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(t.Pause, p); err != nil {
		return nil, fmt.Errorf("decode pause state of task %s: %w", t.ID, err)
	}
	return p, nil
}

// preparePause checks an Ask outcome's expiry action and holds against its
// question and builds the pause state.
func (s *Server) preparePause(o Outcome, q *question.Question, agent Agent, now time.Time) (*pauseState, error) {
	p := &pauseState{Asked: now, Question: q.ID, Expires: q.Expires, OnExpiry: o.ExpiryAction()}
	switch p.OnExpiry {
	case ExpireFail, ExpireCancel:
	case ExpireDefault:
		raw, err := json.Marshal(o.defaultAnswer)
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
		return nil, fmt.Errorf("unknown expiry action %q (use ExpireFail, ExpireCancel or DefaultAnswer)", p.OnExpiry)
	}
	holds, err := prepareHolds(o.holds, q.Expires, "the question expires", agent)
	if err != nil {
		return nil, err
	}
	p.Holds = holds
	return p, nil
}

// prepareHolds checks an outcome's holds against the end of the pause
// (until, what ends it) and returns them as the pause keeps them.
func prepareHolds(hs []Hold, end time.Time, ends string, agent Agent) ([]heldThing, error) {
	if len(hs) > 0 && !canRelease(agent) {
		return nil, errors.New("it holds something but has no release (implement Releaser, or set Steps.OnRelease)")
	}
	var out []heldThing
	seen := map[string]bool{}
	for _, h := range hs {
		if h.Name == "" {
			return nil, errors.New("a hold has no name")
		}
		if seen[h.Name] {
			return nil, fmt.Errorf("two holds are named %q", h.Name)
		}
		seen[h.Name] = true
		until := h.Until.UTC().Truncate(time.Millisecond)
		if h.Until.IsZero() || (until.After(end) && !until.Truncate(time.Second).After(end)) {
			until = end // the end, or within the second the end was rounded to
		}
		if until.After(end) {
			return nil, fmt.Errorf("hold %q is kept until %s, after %s at %s; a hold must be released no later than that",
				h.Name, until.Format(time.RFC3339), ends, end.Format(time.RFC3339))
		}
		data, err := json.Marshal(h.Data)
		if err != nil {
			return nil, fmt.Errorf("hold %q: its data cannot be encoded: %v", h.Name, err)
		}
		out = append(out, heldThing{Name: h.Name, Until: until, Data: data})
	}
	return out, nil
}

// setPause stores p on next and sets the task's timers from it: the wake
// timer while a question is open, the hold timer while a hold is unreleased.
func (s *Server) setPause(next *store.Task, p *pauseState) error {
	next.WakeAt, next.HoldAt, next.Pause = time.Time{}, time.Time{}, nil
	if p == nil {
		return nil
	}
	if p.Holds == nil && len(next.Question) == 0 {
		return nil // nothing left to keep
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	next.Pause = raw
	if len(next.Question) > 0 {
		next.WakeAt = s.nextWake(p)
	}
	next.HoldAt = p.nextRelease()
	return nil
}

// nextWake is when the sweeper must look at an open question next: its
// next reminder point, or its expiry.
func (s *Server) nextWake(p *pauseState) time.Time {
	if p.Reminded < len(s.cfg.Reminders) && p.Expires.After(p.Asked) {
		return s.reminderAt(p, p.Reminded)
	}
	return p.Expires
}

// reminderAt is the time of reminder point i of p.
func (s *Server) reminderAt(p *pauseState, i int) time.Time {
	span := p.Expires.Sub(p.Asked)
	return p.Asked.Add(time.Duration(float64(span) * s.cfg.Reminders[i])).Truncate(time.Millisecond)
}

// nextRelease is when the next hold release is due (or its claim lapses),
// zero when every hold is released.
func (p *pauseState) nextRelease() time.Time {
	var next time.Time
	for _, h := range p.Holds {
		if h.Released {
			continue
		}
		at := h.due()
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return next
}

// holdsOnResume hands a resuming task's holds to its step: each says
// whether its deadline passed and whether a release started.
func holdsOnResume(p *pauseState, now time.Time) []HoldStatus {
	var out []HoldStatus
	for _, h := range p.Holds {
		out = append(out, HoldStatus{
			Name: h.Name, Until: h.Until, Data: h.Data,
			Lapsed:   !now.Before(h.Until),
			Released: h.Released || !h.Releasing.IsZero(),
		})
	}
	return out
}

// keepDigest leaves on next, which keeps no pause of its own, the wake
// digest of the pause it had: a wake that comes while the task runs is then
// told it is busy (and sent again), and one that comes after it ended is
// told it is late, instead of not found.
func keepDigest(next *store.Task, digest string) {
	if digest == "" || len(next.Pause) > 0 {
		return
	}
	raw, err := json.Marshal(pauseState{WakeDigest: digest})
	if err == nil {
		next.Pause = raw
	}
}

// keepRefusedHolds keeps on next, which a refused Ask or Await ended, the
// holds that outcome declared, due for release at once. Holds without a
// name, or of an agent without a release, cannot be released and are left.
func (s *Server) keepRefusedHolds(next *store.Task, hs []Hold, agent Agent, now time.Time) {
	if len(hs) == 0 || agent == nil || !canRelease(agent) {
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
		if err := s.setPause(next, p); err != nil {
			s.log.Error("keep the holds of a refused step", slog.String("task", next.ID), slog.Any("err", err))
		}
	}
}

// keepHoldsOnEnd keeps the unreleased holds of a paused task that ends
// without resuming, due for release at once.
func (s *Server) keepHoldsOnEnd(t, next *store.Task, now time.Time) {
	next.WakeAt, next.HoldAt, next.Pause = time.Time{}, time.Time{}, nil
	p, err := decodePause(t)
	if err != nil {
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
	_ = s.setPause(next, rest)
}
