package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// pauseState is the engine's state of a pause, kept in store.Task.Pause.
// It outlives the question only to release holds of a task that ended
// without resuming.
type pauseState struct {
	// Kind is the question kind (QuestionKind), kept only when an observer
	// is set, so that counting the question's end decodes no question.
	// First, so that it is found without decoding (rawString).
	Kind string `json:"kind,omitempty"`
	// Asked is when the first question of the pause was asked; reminder
	// points are fractions of Asked..Expires.
	Asked         time.Time        `json:"asked,omitzero"`
	Question      string           `json:"question,omitempty"` // the first question's ID: hold keys are unique per pause
	Expires       time.Time        `json:"expires,omitzero"`
	OnExpiry      api.ExpiryAction `json:"onExpiry,omitempty"`
	DefaultAnswer json.RawMessage  `json:"defaultAnswer,omitempty"`
	Reminded      int              `json:"reminded,omitempty"` // reminder points passed
	// WakeDigest is the SHA-256 of the token Server.Wake needs, "" when
	// no event may resume the task.
	WakeDigest string `json:"wakeDigest,omitempty"`
	// Fresh names the open question when the task's history is exactly
	// its request and that question: the answer's reply is then built
	// without reading the history back. A re-ask gives the question a new
	// ID, so Fresh no longer matches it.
	Fresh string `json:"fresh,omitempty"`
	// Await says what a working task without a run waits for (Await);
	// Expires is then its deadline.
	Await string      `json:"await,omitempty"`
	Holds []heldThing `json:"holds,omitempty"`
	// Trace is the W3C traceparent of the request that asked, kept only
	// while tracing records: the step the answer resumes links to it.
	Trace string `json:"trace,omitempty"`
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
	// Failures counts the release's failed tries (see faults.go).
	Failures int `json:"failures,omitempty"`
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
func (s *Engine) preparePause(o api.Outcome, q *question.Question, releases bool, now time.Time) (*pauseState, error) {
	p := &pauseState{Asked: now, Question: q.ID, Expires: q.Expires, OnExpiry: o.ExpiryAction()}
	if s.obs.on() {
		p.Kind = s.obs.kind(q.Schema)
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

// prepareHolds checks an outcome's holds against the end of the pause
// (until, what ends it) and returns them as the pause keeps them; releases
// says whether the agent can release them.
func prepareHolds(hs []api.Hold, end time.Time, ends string, releases bool) ([]heldThing, error) {
	if len(hs) > 0 && !releases {
		return nil, errors.New("it holds something but has no release (implement api.Releaser, or set Steps.OnRelease)")
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
func (s *Engine) setPause(next *store.Task, p *pauseState) error {
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
func (s *Engine) nextWake(p *pauseState) time.Time {
	if p.Reminded < len(s.cfg.Reminders) && p.Expires.After(p.Asked) {
		return s.reminderAt(p, p.Reminded)
	}
	return p.Expires
}

// reminderAt is the time of reminder point i of p.
func (s *Engine) reminderAt(p *pauseState, i int) time.Time {
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
func holdsOnResume(p *pauseState, now time.Time) []api.HoldStatus {
	var out []api.HoldStatus
	for _, h := range p.Holds {
		out = append(out, api.HoldStatus{
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
// name, or of an agent without a release (releases false), cannot be
// released and are left.
func (s *Engine) keepRefusedHolds(next *store.Task, hs []api.Hold, releases bool, now time.Time) {
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
		if err := s.setPause(next, p); err != nil {
			s.log.Error("keep the holds of a refused step", slog.String("task", next.ID), slog.String("agent", next.Agent), slog.Any("err", err))
		}
	}
}

// keepHoldsOnEnd keeps the unreleased holds of a paused task that ends
// without resuming, due for release at once.
func (s *Engine) keepHoldsOnEnd(t, next *store.Task, now time.Time) {
	next.WakeAt, next.HoldAt, next.Pause = time.Time{}, time.Time{}, nil
	p, err := decodePause(t)
	if err != nil {
		// Nothing is known of what the task held: say so loudly, since
		// its releases will not run.
		s.log.Error("the pause state of an ending task cannot be read; what it held is not released", slog.String("task", t.ID), slog.String("agent", t.Agent), slog.Any("err", err))
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
