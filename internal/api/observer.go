package api

import (
	"context"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/store"
)

// Observer hears of what a server does, for metrics, traces and logs (the
// telemetry package implements it with Prometheus and OpenTelemetry).
// The engine calls it from the one place each thing happens: Transition
// from commit, for every task change that was written; Event for what
// writes nothing of its own (a redelivery, a losing answer, a lease taken
// over, a push delivery's outcome, a hold's release). Without an observer
// (Config.Observer nil) the engine calls nothing and computes nothing for
// it. Implementations must be safe for concurrent use and return quickly.
type Observer interface {
	// Transition is called after a change of a task was committed. t is
	// passed by value: it is the observer's to keep or not, and a change
	// observed allocates nothing for it.
	Transition(ctx context.Context, t Transition)
	// Event counts one occurrence of e for agent ("" when not known).
	Event(ctx context.Context, agent string, e Event)
	// StartStep starts the span of one agent step (or, for a step run
	// within its request, notes it on that request's span: the telemetry
	// package does); end is called when the step returns. s.Link is the
	// traceparent of the request that asked the question the step resumes
	// from ("" when none).
	StartStep(ctx context.Context, s StepInfo) (context.Context, func(err error))
	// StartPush starts the span of one push delivery for a task; end is
	// called with the delivery's outcome.
	StartPush(ctx context.Context, taskID string) (context.Context, func(err error))
	// TraceParent is the W3C traceparent of the span in ctx, "" when none
	// is recorded (so the engine keeps nothing when tracing is off).
	TraceParent(ctx context.Context) string
	// OpenQuestions is told, once at start, how many questions the store
	// holds open per agent: every registered agent is in byAgent, with 0
	// when it has none open.
	OpenQuestions(byAgent map[string]int)
	// ObserveHTTP wraps the HTTP handler of the A2A bindings (agent
	// cards, JSON-RPC, HTTP+JSON, the wake endpoint): a server span per
	// request, say. It returns next itself to observe nothing there.
	ObserveHTTP(next http.Handler) http.Handler
	// ObserveStore wraps the server's store, to time its operations, say;
	// the wrapper must keep the optional interfaces of s that the engine
	// asks for (store.Notifier, store.Locker, SingleNode). It returns s
	// itself to observe nothing there.
	ObserveStore(s store.Store) store.Store
}

// Event is something the engine counts that is not a transition.
type Event string

const (
	// EventRedelivery: a message that was already taken came again
	// (deduplication answered it).
	EventRedelivery Event = "redelivery"
	// EventAnswerConflict: an answer to a question that is no longer
	// open (it lost a compare-and-set to another answer, or came late).
	EventAnswerConflict Event = "answer_conflict"
	// EventLeaseTakeover: this node took over a run whose lease lapsed.
	EventLeaseTakeover Event = "lease_takeover"
	// EventPushDelivered, EventPushRetried and EventPushGivenUp: the
	// outcome of one push delivery attempt.
	EventPushDelivered Event = "push_delivered"
	EventPushRetried   Event = "push_retried"
	EventPushGivenUp   Event = "push_given_up"
	// EventHoldReleased: a hold's release ran; EventHoldLapsed: it ran
	// because its deadline passed while the task was still paused.
	EventHoldReleased Event = "hold_released"
	EventHoldLapsed   Event = "hold_lapsed"
)

// QuestionEnd says how an open question closed.
type QuestionEnd string

const (
	QuestionAnswered QuestionEnd = "answered" // a valid answer resumed the task
	QuestionDeclined QuestionEnd = "declined" // the caller declined to answer
	QuestionExpired  QuestionEnd = "expired"  // no answer before its expiry
	QuestionCanceled QuestionEnd = "canceled" // the task was canceled
	QuestionEnded    QuestionEnd = "ended"    // the task ended otherwise (attempts used up)
)

// Transition is one committed change of a task, as an Observer sees it.
type Transition struct {
	TaskID    string
	ContextID string
	Agent     string
	From      a2a.TaskState // "" for a new task
	To        a2a.TaskState
	// Cause says what made the change: start, answer, step, expire,
	// remind, cancel, hold, resume.
	Cause string
	// Asked: the first question of a pause opened. Reasked: an invalid
	// answer replaced the open question with a new one.
	Asked, Reasked bool
	// Closed says how the open question closed ("" when none did);
	// Waited is how long after the pause's first question.
	Closed QuestionEnd
	Waited time.Duration
	// Expiry is the expiry action when Closed is QuestionExpired.
	Expiry string
	// Kind is the question kind (QuestionKind) of the question asked;
	// ClosedKind that of the question closed.
	Kind, ClosedKind string
	// Reminder: the change sent a reminder of the open question.
	Reminder bool
	// Ended: the task reached a final state with this change.
	Ended bool
}

// StepInfo describes one agent step for its span.
type StepInfo struct {
	TaskID, ContextID, Agent string
	// Parent is the traceparent of what started the step (the request
	// that took its message), "" when it runs on its own (a takeover) or
	// within that request (Request is set: its span is the parent).
	Parent string
	// Link is the traceparent of the request that asked the question the
	// step resumes from, "" when none.
	Link string
	// Request is the context of the request the step runs within (a
	// quick step, whose changes that request made; the step starts and
	// ends before the request replies), nil when a worker runs it.
	Request context.Context
}

// change is what a commit's caller knows of the change beyond the rows:
