package api

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
// Most agents are written with askpoint.Steps, which decodes checkpoints
// and answers into Go types. Agent is the untyped form the runtime drives.
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

// Releaser is implemented by agents that hold things while paused. The
// runtime calls Release on the hold's deadline, on whichever node gets to
// it first, even when nobody acts on the question's expiry. call carries the
// task's identity and an idempotency key for the release (call.Key); it has
// no request or message. A release that returns an error is tried again
// after the lease duration.
type Releaser interface {
	Release(ctx context.Context, call *Call, h HoldStatus) error
}

// Waker is implemented by agents whose tasks wait for events. Wakes
// reports whether event (the body given to Server.Wake) should resume
// the task saved with checkpoint; an event that does not (a reminder, a
// repeat of what the agent already knows) is dropped without a write.
// Resume then gets the event in Resumption.Event.
type Waker interface {
	Wakes(checkpoint json.RawMessage, event json.RawMessage) bool
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
// from the caller, or a call to Server.CredentialArrived.
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
	// OnBehalfOf is the principal of the caller an orchestrator calls for:
	// set only when the request came from one of
	// Config.OnBehalfOfPrincipals (a relay's own principal) and named the
	// caller (askpoint.OnBehalfOfKey in its metadata); "" for every other
	// request, whatever its metadata says. Use Caller to act for the right
	// person.
	OnBehalfOf string

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
	// [Outcome.Hold]), when it resumes from a question, a request for a
	// credential or a wait. A hold that Lapsed may be gone: re-check it
	// before acting on it.
	Holds []HoldStatus
	// Expired: the question expired unanswered and the answer is the
	// default the agent set with [Outcome.DefaultAnswer].
	Expired bool
	// Question is the question this step's answer is to (a resume with
	// an answer or a decline), nil on every other step. A rule the
	// schema cannot express is checked by the step, which re-asks this
	// question with askpoint.Reask: the re-ask counts toward the
	// question's attempt cap like a re-ask after a validation error.
	Question *question.Question

	rt   Runtime // the run the call belongs to, nil for a Call built by hand (tests)
	flow any     // the journal of a straight-line agent's run (askpoint.Flow)
}

// Runtime is what a Call reaches its run through: the engine's side of
// Progress, AddArtifact, AppendArtifact and WakeToken.
type Runtime interface {
	Progress(ctx context.Context, text string) error
	AddArtifact(ctx context.Context, a *a2a.Artifact) error
	AppendArtifact(ctx context.Context, a *a2a.Artifact, last bool) error
	WakeToken() string
}

// Bind makes c's methods reach rt, the run c describes.
func Bind(c *Call, rt Runtime) { c.rt = rt }

// RuntimeOf is the run c is bound to, nil for a Call built by hand.
func RuntimeOf(c *Call) Runtime { return c.rt }

// SetFlow attaches the state of a straight-line agent's run to c (the root
// package's Flow, which alone reads it back with FlowOf).
func SetFlow(c *Call, v any) { c.flow = v }

// FlowOf is what SetFlow attached to c, nil when nothing was.
func FlowOf(c *Call) any { return c.flow }

// Caller is the principal this step acts for: OnBehalfOf when a trusted
// orchestrator named one, else Principal.
func (c *Call) Caller() string {
	if c.OnBehalfOf != "" {
		return c.OnBehalfOf
	}
	return c.Principal
}

// Progress streams a working-state status message to the caller and records
// it in the task's log. It returns an error when the task is no longer this
// run's (canceled, or taken over after a lapsed lease). On a Call built by
// hand it does nothing.
func (c *Call) Progress(ctx context.Context, text string) error {
	if c.rt == nil {
		return nil
	}
	return c.rt.Progress(ctx, text)
}

// AddArtifact streams an artifact to the caller now, before the step ends.
// The artifact is also kept on the task.
func (c *Call) AddArtifact(ctx context.Context, a *a2a.Artifact) error {
	if c.rt == nil {
		return nil
	}
	return c.rt.AddArtifact(ctx, a)
}

// AppendArtifact streams one chunk of an artifact now, before the step
// ends: the first chunk of a.ID creates the artifact (append false), later
// chunks add their parts to it (append true); last marks the final chunk
// (lastChunk). a.ID is required. The task keeps the whole artifact.
func (c *Call) AppendArtifact(ctx context.Context, a *a2a.Artifact, last bool) error {
	if a == nil || a.ID == "" {
		return fmt.Errorf("askpoint: AppendArtifact needs an artifact with an ID")
	}
	if c.rt == nil {
		return nil
	}
	return c.rt.AppendArtifact(ctx, a, last)
}

// WakeToken is this task's wake token, for an agent that waits for an
// event (Await, [Outcome.WakeOn]) and hands the token to whoever will
// send it (a sub-agent's push configuration): the same on every step of the
// task, on every run of a step and on every node, and kept nowhere. The
// server derives it from the task and a secret in its store; the task row
// holds only its digest, so a checkpoint need not (and should not) keep it.
// A Call built by hand (tests) gets a token derived from its TaskID and a
// secret of the process.
func (c *Call) WakeToken() string {
	if c.rt != nil {
		if t := c.rt.WakeToken(); t != "" {
			return t
		}
	}
	return handBuiltWakeToken(c.TaskID)
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

// HoldStatus is a hold as the runtime tracks it. (Its field names are
// part of the pending input the store keeps: keep them.)
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
