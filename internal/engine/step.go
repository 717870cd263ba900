package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// What the engine runs. The root package's agent API (askpoint.Agent,
// askpoint.Steps, askpoint.Outcome) is adapted to these types; the engine
// never sees the author's Go types.

// Agent is a resumable step function, as the engine drives it.
type Agent interface {
	Start(ctx context.Context, call *Call) (Outcome, error)
	Resume(ctx context.Context, call *Call, r *Resumption) (Outcome, error)
}

// Replier is implemented by agents that may answer a first message with a
// message instead of a task.
type Replier interface {
	Reply(ctx context.Context, msg *a2a.Message) (*a2a.Message, bool)
}

// Releaser is implemented by agents that can release what a paused task
// holds. CanRelease reports whether this agent really can (a Steps value
// without OnRelease cannot).
type Releaser interface {
	Release(ctx context.Context, call *Call, h HoldStatus) error
	CanRelease() bool
}

// Waker is implemented by agents that decide whether an event resumes a
// task.
type Waker interface {
	Wakes(checkpoint json.RawMessage, event json.RawMessage) bool
}

// Resumption is what a resumed step reads.
type Resumption struct {
	Checkpoint json.RawMessage
	Question   *question.Question
	Answer     *question.Answer
	Auth       *AuthArrival
	Event      json.RawMessage
}

// AuthArrival says how an auth-required pause ended.
type AuthArrival struct {
	Message *a2a.Message
	Data    json.RawMessage
}

// Call describes the step being run.
type Call struct {
	TaskID    string
	ContextID string
	Tenant    string
	Principal string
	// OnBehalfOf is the principal a trusted orchestrator (one of
	// Config.OnBehalfOfPrincipals) says it calls for; "" otherwise.
	OnBehalfOf string
	Request    *a2a.Message
	Message    *a2a.Message
	Key        string
	Holds      []HoldStatus
	Expired    bool

	run *run
	// wake, agent and task derive the task's wake token when a step asks for
	// it (most never do, and it costs an HMAC).
	wake        *Engine
	agent, task string
}

// WakeToken is the task's wake token (see Engine.wakeToken): the same on
// every step and every node, stored nowhere.
func (c *Call) WakeToken() string {
	if c == nil || c.wake == nil {
		return ""
	}
	if c.run != nil {
		c.run.handOutToken()
	}
	return c.wake.wakeToken(c.agent, c.task)
}

// Progress streams a working-state status message and records it.
func (c *Call) Progress(ctx context.Context, text string) error {
	if c == nil || c.run == nil {
		return nil
	}
	return c.run.progress(ctx, text)
}

// AddArtifact streams an artifact now and keeps it on the task.
func (c *Call) AddArtifact(ctx context.Context, a *a2a.Artifact) error {
	if c == nil || c.run == nil {
		return nil
	}
	return c.run.artifact(ctx, a)
}

// AppendArtifact streams one chunk of an artifact now.
func (c *Call) AppendArtifact(ctx context.Context, a *a2a.Artifact, last bool) error {
	if a == nil || a.ID == "" {
		return fmt.Errorf("askpoint: AppendArtifact needs an artifact with an ID")
	}
	if c == nil || c.run == nil {
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
	OutcomeAwait    OutcomeKind = "await"
	OutcomeComplete OutcomeKind = "complete"
	OutcomeFail     OutcomeKind = "fail"
	OutcomeReject   OutcomeKind = "reject"
)

// ExpiryAction says what happens to a task whose question expires
// unanswered.
type ExpiryAction string

// The expiry actions.
const (
	ExpireFail    ExpiryAction = "fail"
	ExpireCancel  ExpiryAction = "cancel"
	ExpireDefault ExpiryAction = "default"
)

// Outcome is what a step ends with.
type Outcome struct {
	Kind       OutcomeKind
	Question   *question.Question
	Checkpoint any
	Artifacts  []*a2a.Artifact
	Text       string

	OnExpiry      ExpiryAction // "" means ExpireFail
	DefaultAnswer any
	Holds         []Hold

	WakeToken string
	Deadline  time.Time

	// historyIsRequest: the task's history holds only its request so far
	// (set by the run, which wrote all of it).
	historyIsRequest bool
}

// Fail is an outcome that ends the task failed with reason.
func Fail(reason string) Outcome { return Outcome{Kind: OutcomeFail, Text: reason} }

// expiryAction is o's expiry action, the default filled in.
func (o Outcome) expiryAction() ExpiryAction {
	if o.OnExpiry == "" {
		return ExpireFail
	}
	return o.OnExpiry
}

// Hold is something a paused task holds.
type Hold struct {
	Name  string
	Until time.Time
	Data  any
}

// HoldStatus is a hold as the runtime tracks it.
type HoldStatus struct {
	Name     string
	Until    time.Time
	Data     json.RawMessage
	Lapsed   bool
	Released bool
}
