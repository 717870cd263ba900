package askpoint

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/engine"
)

// The engine runs its own types; an author's Agent is adapted to them here,
// the one place the agent API meets the engine.

type agentAdapter struct{ a Agent }

func adapt(a Agent) engine.Agent { return agentAdapter{a} }

func (x agentAdapter) Start(ctx context.Context, ec *engine.Call) (engine.Outcome, error) {
	o, err := x.a.Start(ctx, callOf(ec))
	return o.engine(), err
}

func (x agentAdapter) Resume(ctx context.Context, ec *engine.Call, r *engine.Resumption) (engine.Outcome, error) {
	o, err := x.a.Resume(ctx, callOf(ec), &Resumption{
		Checkpoint: r.Checkpoint, Question: r.Question, Answer: r.Answer,
		Auth: (*AuthArrival)(r.Auth), Event: r.Event,
	})
	return o.engine(), err
}

func (x agentAdapter) Reply(ctx context.Context, m *a2a.Message) (*a2a.Message, bool) {
	if r, ok := x.a.(Replier); ok {
		return r.Reply(ctx, m)
	}
	return nil, false
}

func (x agentAdapter) Wakes(checkpoint, event json.RawMessage) bool {
	if w, ok := x.a.(Waker); ok {
		return w.Wakes(checkpoint, event)
	}
	return true
}

func (x agentAdapter) Release(ctx context.Context, ec *engine.Call, h engine.HoldStatus) error {
	r, ok := x.a.(Releaser)
	if !ok {
		return errNoRelease
	}
	return r.Release(ctx, callOf(ec), HoldStatus(h))
}

func (x agentAdapter) CanRelease() bool { return canRelease(x.a) }

func callOf(ec *engine.Call) *Call {
	c := &Call{
		TaskID: ec.TaskID, ContextID: ec.ContextID, Tenant: ec.Tenant, Principal: ec.Principal, OnBehalfOf: ec.OnBehalfOf,
		Request: ec.Request, Message: ec.Message, Key: ec.Key, Expired: ec.Expired, ec: ec,
	}
	for _, h := range ec.Holds {
		c.Holds = append(c.Holds, HoldStatus(h))
	}
	return c
}

// engine is o as the engine reads it.
func (o Outcome) engine() engine.Outcome {
	out := engine.Outcome{
		Kind: engine.OutcomeKind(o.kind), Question: o.question, Checkpoint: o.checkpoint,
		Artifacts: o.artifacts, Text: o.text,
		OnExpiry: engine.ExpiryAction(o.onExpiry), DefaultAnswer: o.defaultAnswer,
		WakeToken: o.wakeToken, Deadline: o.deadline,
	}
	for _, h := range o.holds {
		out.Holds = append(out.Holds, engine.Hold(h))
	}
	return out
}

// errNoRelease: the agent held something it cannot release.
var errNoRelease = Permanent(errors.New("askpoint: the agent holds something but has no release (implement Releaser, or set Steps.OnRelease)"))

// releases reports whether Steps can release holds.
func (s Steps[C, A]) releases() bool { return s.OnRelease != nil }

func canRelease(a Agent) bool {
	if s, ok := a.(interface{ releases() bool }); ok {
		return s.releases()
	}
	_, ok := a.(Releaser)
	return ok
}
