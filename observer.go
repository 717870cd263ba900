package askpoint

import "github.com/askpoint/askpoint/internal/api"

// Observer hears of what a server does, for metrics and traces
// (Config.Observer): every committed task change (Transition), what writes
// nothing of its own (Event), each agent step and push delivery (spans).
// The telemetry package implements it with Prometheus and OpenTelemetry;
// nil observes nothing and costs nothing. Implementations must be safe for
// concurrent use and return quickly. See [api.Observer].
type Observer = api.Observer

// Transition is one committed change of a task, as an [Observer] sees it.
// See [api.Transition].
type Transition = api.Transition

// StepInfo describes one agent step for its span. See [api.StepInfo].
type StepInfo = api.StepInfo

// Event is something a server counts that is not a transition: a
// redelivery, a losing answer, a lease taken over, a push delivery's
// outcome, a hold's release. See [api.Event].
type Event = api.Event

// QuestionEnd says how an open question closed (Transition.Closed).
type QuestionEnd = api.QuestionEnd

// The events an [Observer] counts (see each in [api.Event]'s constants).
const (
	EventRedelivery     = api.EventRedelivery
	EventAnswerConflict = api.EventAnswerConflict
	EventLeaseTakeover  = api.EventLeaseTakeover
	EventPushDelivered  = api.EventPushDelivered
	EventPushRetried    = api.EventPushRetried
	EventPushGivenUp    = api.EventPushGivenUp
	EventHoldReleased   = api.EventHoldReleased
	EventHoldLapsed     = api.EventHoldLapsed
)

// How an open question closed (Transition.Closed).
const (
	QuestionAnswered = api.QuestionAnswered
	QuestionDeclined = api.QuestionDeclined
	QuestionExpired  = api.QuestionExpired
	QuestionCanceled = api.QuestionCanceled
	QuestionEnded    = api.QuestionEnded
)
