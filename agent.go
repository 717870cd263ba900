package askpoint

import (
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/engine"
)

// The agent API's types are defined once, in internal/api, where the engine
// reads them too; these are their names for an agent author
// (docs/decisions/0084-one-set-of-types.md). Each alias's definition holds
// its full documentation and its methods.

// Agent is a resumable step function: the runtime calls Start when a task
// begins and Resume each time the task is resumed, and each returns one
// [Outcome]. Nothing of the agent stays in memory between a question and its
// answer: what it needs later goes into the checkpoint it saves with [Ask].
// Most agents are written with [Steps]. See [api.Agent].
type Agent = api.Agent

// Replier is an optional interface of an [Agent] that answers some first
// messages with a message instead of a task (nothing is stored). See
// [api.Replier].
type Replier = api.Replier

// Releaser is implemented by agents that hold things while paused
// ([Outcome.Hold]): the runtime calls Release at a hold's deadline, or when
// the task ends without resuming, on whichever node gets to it first. See
// [api.Releaser].
type Releaser = api.Releaser

// Waker is implemented by agents whose tasks wait for events ([Await],
// [Outcome.WakeOn]): Wakes decides whether an event resumes the task. See
// [api.Waker].
type Waker = api.Waker

// Resumption is what a resumed step reads: the checkpoint, and the
// validated answer to the question it asked (or the credential's arrival,
// or the event that woke it). See [api.Resumption].
type Resumption = api.Resumption

// AuthArrival says how an auth-required pause ended. See [api.AuthArrival].
type AuthArrival = api.AuthArrival

// Call describes the step being run: the task's identity and caller
// (Caller), the request, the message that triggered the step, an
// idempotency key for its side effects (Key), and what the task held. Its
// methods stream progress and artifacts before the step ends (Progress,
// AddArtifact, AppendArtifact) and give the task's wake token (WakeToken).
// A Call built by hand, as a test does, streams nothing. See [api.Call].
type Call = api.Call

// Hold is something a paused task holds ([Outcome.Hold]). See [api.Hold].
type Hold = api.Hold

// HoldStatus is a hold as the runtime tracks it ([Call.Holds]): Lapsed
// when its deadline passed before the task resumed, Released when the
// runtime started its release. See [api.HoldStatus].
type HoldStatus = api.HoldStatus

// OnBehalfOfKey is the request metadata key under which an orchestrator
// names the caller it calls a sub-agent for (see Call.OnBehalfOf).
const OnBehalfOfKey = engine.OnBehalfOfKey
