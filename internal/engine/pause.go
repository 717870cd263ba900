package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/askpoint/askpoint/store"
)

// pauseState is the engine's state of a pause (a question, a request for
// a credential, a wait for an event), kept in store.Task.Pause. It
// outlives the pause only to release holds of a task that ended without
// resuming.
type pauseState struct {
	// Kind is the question kind (QuestionKind), kept only when an observer
	// is set, so that counting the question's end decodes no question.
	// First, so that it is found without decoding (rawString).
	Kind string `json:"kind,omitempty"`
	// Asked is when the first question of the pause was asked (or the
	// credential requested); reminder points are fractions of
	// Asked..Expires.
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
	Await string `json:"await,omitempty"`
	// Auth says what credential an auth-required task waits for
	// (RequireAuth's text); Expires is then the pause's expiry, and
	// OnExpiry what it does.
	Auth  string      `json:"auth,omitempty"`
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
	if readPause(t.Pause, p) {
		return p, nil
	}
	*p = pauseState{}
	if err := json.Unmarshal(t.Pause, p); err != nil {
		return nil, fmt.Errorf("decode pause state of task %s: %w", t.ID, err)
	}
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
	raw, err := encodePause(&pauseState{WakeDigest: digest})
	if err == nil {
		next.Pause = raw
	}
}

// storeKeepingTimers stores p on next and recomputes only the hold timer:
// a hold release must not move the question's wake timer.
func (p *pauseState) storeKeepingTimers(next *store.Task) error {
	raw, err := encodePause(p)
	if err != nil {
		return err
	}
	next.Pause = raw
	next.HoldAt = p.nextRelease()
	return nil
}
