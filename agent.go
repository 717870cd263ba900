package askpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// Agent is a resumable step function: the runtime calls Start when a task
// begins and Resume each time the task is resumed. Each call returns one
// Outcome. Nothing of the agent needs to stay in memory between a question
// and its answer: what it needs later goes into the checkpoint it returns
// with Ask.
//
// Most agents are written with [Steps], which decodes checkpoints and
// answers into Go types. Agent is the untyped form the runtime drives.
type Agent interface {
	Start(ctx context.Context, call *Call) (Outcome, error)
	Resume(ctx context.Context, call *Call, r *Resumption) (Outcome, error)
}

// Replier is an optional interface an [Agent] implements to answer some
// first messages with a message of its own instead of a task. The runtime
// consults it before it creates a task for a message that names no task: when
// Reply returns ok, the caller gets reply (role agent) and nothing is stored,
// so a redelivery of the message is answered again. Reply should decide
// quickly and from the message alone; work that takes time, pauses or must
// survive a restart belongs in a task.
//
// The runtime sets the reply's role to agent, gives it a messageId when it has
// none and the request's contextId (a new one when the request has none).
type Replier interface {
	Reply(ctx context.Context, msg *a2a.Message) (reply *a2a.Message, ok bool)
}

// Resumption is what a resumed step reads.
type Resumption struct {
	// Checkpoint is what the agent saved when it paused.
	Checkpoint json.RawMessage
	// Question is the question that was answered (input-required resumes).
	Question *question.Question
	// Answer is the caller's validated answer (input-required resumes).
	// When Answer.Action is question.ActionDecline the caller refused to
	// answer (Answer.Reason says why) and the agent decides what follows.
	Answer *question.Answer
	// Auth is set when the task resumes from auth-required.
	Auth *AuthArrival
	// Event is set when the task was resumed by Server.Wake: the event
	// as given (a push notification's StreamResponse, for instance). A
	// question the task had open is withdrawn.
	Event json.RawMessage
}

// AuthArrival says how an auth-required pause ended: a follow-up message
// from the caller, or a call to [Server.CredentialArrived].
type AuthArrival struct {
	Message *a2a.Message    // the caller's follow-up, nil when resumed by a Go call
	Data    json.RawMessage // what CredentialArrived was given, nil otherwise
}

// Call describes the step being run.
type Call struct {
	TaskID    string
	ContextID string
	Tenant    string
	Principal string

	// Request is the message that started the task.
	Request *a2a.Message
	// Message is the message that triggered this step: the request for
	// Start, the caller's answer or follow-up for Resume (nil when the step
	// was resumed by a Go call).
	Message *a2a.Message
	// Key is an idempotency key for this step's side effects: the same for
	// every run of the same step, even after a crash and a takeover, and
	// different for every other step of every task.
	Key string
	// Holds are what the task held while it was paused (see
	// [Outcome.Hold]), when it resumes from a question. A hold that
	// Lapsed may be gone: re-check it before acting on it.
	Holds []HoldStatus
	// Expired: the question expired unanswered and the answer is the
	// default the agent set with [Outcome.DefaultAnswer].
	Expired bool

	run *run
}

// Progress streams a working-state status message to the caller and records
// it in the task's log. It returns an error when the task is no longer this
// run's (canceled, or taken over after a lapsed lease).
func (c *Call) Progress(ctx context.Context, text string) error {
	if c.run == nil {
		return nil
	}
	return c.run.progress(ctx, text)
}

// AddArtifact streams an artifact to the caller now, before the step ends.
// The artifact is also kept on the task.
func (c *Call) AddArtifact(ctx context.Context, a *a2a.Artifact) error {
	if c.run == nil {
		return nil
	}
	return c.run.artifact(ctx, a)
}

// AppendArtifact streams one chunk of an artifact now, before the step
// ends: the first chunk of a.ID creates the artifact (append false), later
// chunks add their parts to it (append true); last marks the final chunk
// (lastChunk). a.ID is required. The task keeps the whole artifact.
func (c *Call) AppendArtifact(ctx context.Context, a *a2a.Artifact, last bool) error {
	if a == nil || a.ID == "" {
		return fmt.Errorf("askpoint: AppendArtifact needs an artifact with an ID")
	}
	if c.run == nil {
		return nil
	}
	return c.run.artifactChunk(ctx, a, last)
}

// OutcomeKind names what an outcome does.
type OutcomeKind string

// The outcomes a step can end with.
const (
	OutcomeNone     OutcomeKind = ""
	OutcomeAsk      OutcomeKind = "ask"
	OutcomeAuth     OutcomeKind = "auth"
	OutcomeComplete OutcomeKind = "complete"
	OutcomeFail     OutcomeKind = "fail"
	OutcomeReject   OutcomeKind = "reject"
)

// Outcome is what a step ends with. Build one with [Ask], [RequireAuth],
// [Complete], [Fail] or [Reject].
type Outcome struct {
	kind       OutcomeKind
	question   *question.Question
	checkpoint any
	artifacts  []*a2a.Artifact
	text       string

	// Ask only: what happens at the question's expiry, and what the task
	// holds while it waits.
	onExpiry      ExpiryAction
	defaultAnswer any
	holds         []Hold

	// Ask and Await: the token that lets Server.Wake resume the task;
	// Await: when to stop waiting.
	wakeToken string
	deadline  time.Time
}

// Ask pauses the task in input-required with q and saves checkpoint, which
// must encode to JSON. Ask once with everything: every missing field in one
// question (one schema with several required properties).
//
// When q.ID is empty the runtime assigns one; when q.Expires is zero the
// server's default expiry applies; when q.MaxAttempts is zero the server's
// default cap applies.
func Ask(q question.Question, checkpoint any) Outcome {
	return Outcome{kind: OutcomeAsk, question: &q, checkpoint: checkpoint}
}

// RequireAuth pauses the task in auth-required. text tells the caller what
// credential is needed and how to provide it out of band; it must never
// contain a credential. The task resumes when [Server.CredentialArrived] is
// called or when the caller sends a follow-up message.
func RequireAuth(text string, checkpoint any) Outcome {
	return Outcome{kind: OutcomeAuth, text: text, checkpoint: checkpoint}
}

// Complete ends the task successfully with artifacts.
func Complete(artifacts ...*a2a.Artifact) Outcome {
	return Outcome{kind: OutcomeComplete, artifacts: artifacts}
}

// Fail ends the task in failed with a reason the caller can read.
func Fail(reason string) Outcome {
	return Outcome{kind: OutcomeFail, text: reason}
}

// Reject ends the task in rejected: the agent will not do it.
func Reject(reason string) Outcome {
	return Outcome{kind: OutcomeReject, text: reason}
}

// Kind says what the outcome does.
func (o Outcome) Kind() OutcomeKind { return o.kind }

// Question is the question of an Ask outcome, nil otherwise.
func (o Outcome) Question() *question.Question { return o.question }

// Checkpoint is what an Ask or RequireAuth outcome saves.
func (o Outcome) Checkpoint() any { return o.checkpoint }

// Artifacts are a Complete outcome's artifacts.
func (o Outcome) Artifacts() []*a2a.Artifact { return o.artifacts }

// Text is the status message's text: the reason of Fail and Reject, what
// RequireAuth asks for, or what WithMessage set.
func (o Outcome) Text() string { return o.text }

// WithMessage adds a status message for the caller to a Complete, Fail or
// Reject outcome (Fail and Reject already carry their reason).
func (o Outcome) WithMessage(text string) Outcome {
	o.text = text
	return o
}

// Steps is an [Agent] written as typed functions: C is the checkpoint type
// the agent saves when it pauses, A the answer type its questions ask for.
//
//	agent := askpoint.Steps[Checkpoint, Answer]{
//		OnStart:  func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) { ... },
//		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, a Answer) (askpoint.Outcome, error) { ... },
//	}
//
// An error returned from a step fails the task with the error's text. The
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
		return fmt.Errorf("askpoint: the agent held %q but Steps.OnRelease is nil", h.Name)
	}
	return s.OnRelease(ctx, call, h)
}

// Start implements [Agent].
func (s Steps[C, A]) Start(ctx context.Context, call *Call) (Outcome, error) {
	if s.OnStart == nil {
		return Outcome{}, fmt.Errorf("askpoint: Steps.OnStart is nil")
	}
	return s.OnStart(ctx, call)
}

// Resume implements [Agent].
func (s Steps[C, A]) Resume(ctx context.Context, call *Call, r *Resumption) (Outcome, error) {
	var cp C
	if len(r.Checkpoint) > 0 {
		if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
			return Outcome{}, fmt.Errorf("askpoint: decode checkpoint into %T: %w", cp, err)
		}
	}
	if r.Event != nil {
		if s.OnEvent == nil {
			return Outcome{}, fmt.Errorf("askpoint: the task was woken by an event but Steps.OnEvent is nil")
		}
		return s.OnEvent(ctx, call, cp, r.Event)
	}
	if r.Auth != nil {
		if s.OnAuth == nil {
			return Outcome{}, fmt.Errorf("askpoint: the agent paused for auth but Steps.OnAuth is nil")
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
		return Outcome{}, fmt.Errorf("askpoint: the agent asked a question but Steps.OnAnswer is nil")
	}
	answer, err := question.Decode[A](r.Answer)
	if err != nil {
		return Outcome{}, fmt.Errorf("askpoint: decode answer into %T: %w", answer, err)
	}
	return s.OnAnswer(ctx, call, cp, answer)
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
