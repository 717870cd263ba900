package askpoint

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// Steps is an [Agent] written as typed functions: C is the checkpoint type
// the agent saves when it pauses, A the answer type its questions ask for.
//
//	agent := askpoint.Steps[Checkpoint, Answer]{
//		OnStart:  func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) { ... },
//		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, a Answer) (askpoint.Outcome, error) { ... },
//	}
//
// An error returned from a step is tried again with backoff (see
// [Permanent] and Config.StepRetries); [Fail] and [Reject] end the task. The
// questions' schema can be derived from A with [question.SchemaFor], so
// that what is asked and what OnAnswer decodes cannot disagree.
type Steps[C, A any] struct {
	// OnStart begins a task. Required.
	OnStart func(ctx context.Context, call *Call) (Outcome, error)
	// OnAnswer continues a task with the caller's validated answer,
	// decoded into A, and the checkpoint saved with the question, decoded
	// into C. Required for agents that Ask.
	OnAnswer func(ctx context.Context, call *Call, checkpoint C, answer A) (Outcome, error)
	// OnDecline decides what follows when the caller declines to answer.
	// When nil the task ends rejected with the caller's reason.
	OnDecline func(ctx context.Context, call *Call, checkpoint C, reason string) (Outcome, error)
	// OnAuth continues a task after auth-required. Required for agents
	// that RequireAuth.
	OnAuth func(ctx context.Context, call *Call, checkpoint C, arrival *AuthArrival) (Outcome, error)
	// OnRelease releases something a task held while paused (see
	// [Outcome.Hold]) when its deadline passes unanswered or the task
	// ends without resuming. Required for agents that hold anything. It
	// may run more than once for one hold (after a crash): use call.Key.
	OnRelease func(ctx context.Context, call *Call, hold HoldStatus) error
	// OnEvent continues a task resumed by Server.Wake (see [Await] and
	// [Outcome.WakeOn]) with the event. Required for agents that wait for
	// events.
	OnEvent func(ctx context.Context, call *Call, checkpoint C, event json.RawMessage) (Outcome, error)
	// WakeIf, when set, decides whether an event resumes the task (see
	// [Waker]); when nil every event does.
	WakeIf func(checkpoint C, event json.RawMessage) bool
	// OnReply, when set, may answer a first message with a message instead
	// of a task (see [Replier]). Returning false starts a task as usual.
	OnReply func(ctx context.Context, msg *a2a.Message) (*a2a.Message, bool)
}

// Reply implements [Replier].
func (s Steps[C, A]) Reply(ctx context.Context, msg *a2a.Message) (*a2a.Message, bool) {
	if s.OnReply == nil {
		return nil, false
	}
	return s.OnReply(ctx, msg)
}

// Wakes implements [Waker].
func (s Steps[C, A]) Wakes(checkpoint json.RawMessage, event json.RawMessage) bool {
	if s.WakeIf == nil {
		return true
	}
	var cp C
	if len(checkpoint) > 0 && json.Unmarshal(checkpoint, &cp) != nil {
		return true // let the step see it and fail loudly
	}
	return s.WakeIf(cp, event)
}

// Release implements [Releaser].
func (s Steps[C, A]) Release(ctx context.Context, call *Call, h HoldStatus) error {
	if s.OnRelease == nil {
		return Permanent(fmt.Errorf("askpoint: the agent held %q but Steps.OnRelease is nil", h.Name))
	}
	return s.OnRelease(ctx, call, h)
}

// Start implements [Agent].
func (s Steps[C, A]) Start(ctx context.Context, call *Call) (Outcome, error) {
	if s.OnStart == nil {
		return Outcome{}, Permanent(fmt.Errorf("askpoint: Steps.OnStart is nil"))
	}
	return s.OnStart(ctx, call)
}

// Resume implements [Agent].
func (s Steps[C, A]) Resume(ctx context.Context, call *Call, r *Resumption) (Outcome, error) {
	var cp C
	if len(r.Checkpoint) > 0 {
		if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
			return Outcome{}, Permanent(fmt.Errorf("askpoint: decode checkpoint into %T: %w", cp, err))
		}
	}
	if r.Event != nil {
		if s.OnEvent == nil {
			return Outcome{}, Permanent(fmt.Errorf("askpoint: the task was woken by an event but Steps.OnEvent is nil"))
		}
		return s.OnEvent(ctx, call, cp, r.Event)
	}
	if r.Auth != nil {
		if s.OnAuth == nil {
			return Outcome{}, Permanent(fmt.Errorf("askpoint: the agent paused for auth but Steps.OnAuth is nil"))
		}
		return s.OnAuth(ctx, call, cp, r.Auth)
	}
	if r.Answer != nil && r.Answer.Action == question.ActionDecline {
		if s.OnDecline != nil {
			return s.OnDecline(ctx, call, cp, r.Answer.Reason)
		}
		return Reject(DeclinedText(r.Answer.Reason)), nil
	}
	if s.OnAnswer == nil {
		return Outcome{}, Permanent(fmt.Errorf("askpoint: the agent asked a question but Steps.OnAnswer is nil"))
	}
	answer, err := question.Decode[A](r.Answer)
	if err != nil {
		return Outcome{}, Permanent(fmt.Errorf("askpoint: decode answer into %T: %w", answer, err))
	}
	return s.OnAnswer(ctx, call, cp, answer)
}

// releases reports whether s can release holds: OnRelease is set.
func (s Steps[C, A]) releases() bool { return s.OnRelease != nil }

// canRelease reports whether a can release what its tasks hold: a Steps
// whose OnRelease is set, or any other Releaser.
func canRelease(a Agent) bool {
	if s, ok := a.(interface{ releases() bool }); ok {
		return s.releases()
	}
	_, ok := a.(Releaser)
	return ok
}

// DeclinedText is the rejection reason used when a caller declines to
// answer and the agent has no OnDecline.
func DeclinedText(reason string) string {
	text := "The caller declined to answer, so the task was not done."
	if reason != "" {
		text += " Reason: " + reason
	}
	return text
}
