package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// Observer hears of what the engine does, for metrics, traces and logs
// (internal/telemetry implements it with Prometheus and OpenTelemetry).
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
	// StartStep starts the span of one agent step; end is called when the
	// step returns. link is the traceparent of the request that asked the
	// question the step resumes from ("" when none).
	StartStep(ctx context.Context, s StepInfo) (context.Context, func(err error))
	// StartPush starts the span of one push delivery for a task; end is
	// called with the delivery's outcome.
	StartPush(ctx context.Context, taskID string) (context.Context, func(err error))
	// TraceParent is the W3C traceparent of the span in ctx, "" when none
	// is recorded (so the engine keeps nothing when tracing is off).
	TraceParent(ctx context.Context) string
	// OpenQuestions is told, once at start, how many questions the store
	// holds open per agent.
	OpenQuestions(byAgent map[string]int)
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
	// that took its message), "" when it runs on its own (a takeover).
	Parent string
	// Link is the traceparent of the request that asked the question the
	// step resumes from, "" when none.
	Link string
	// Request is the context of the request the step runs within (a
	// quick step, whose changes that request made), nil when a worker
	// runs it.
	Request context.Context
}

// change is what a commit's caller knows of the change beyond the rows:
// the task as it was loaded (nil for a new one), what the write gives the
// next run, and the cause.
type commitNote struct {
	prev  *store.Task
	in    *runInput
	cause string
}

// resumes reports whether the write resumes the task from its open
// question (an answer, or the default answer at expiry).
func (ch commitNote) resumes() bool {
	return ch.in != nil && (ch.in.Expired || (ch.in.Kind == inputAnswer && ch.in.Answer != nil))
}

// pausedFrom is the pause state of ch.prev: the one resumeRow decoded
// when the change resumes that row, else decoded now (nil when it does
// not decode).
func (ch commitNote) pausedFrom() *pauseState {
	if ch.in != nil && ch.in.paused != nil && ch.in.pausedRow == ch.prev {
		return ch.in.paused
	}
	p, _ := decodePause(ch.prev)
	return p
}

// observeBefore, on a write that opens a question while tracing records,
// keeps the asking span's traceparent in the pause state, so that the step
// resumed by the answer, however much later, links to it.
func (s *Engine) observeBefore(ctx context.Context, ch commitNote, next *store.Task) {
	if s.obs == nil || len(next.Question) == 0 || len(next.Pause) == 0 {
		return
	}
	if ch.prev != nil && len(ch.prev.Question) > 0 && !ch.resumes() {
		return // a re-ask or a reminder keeps the pause, and its link, as it is
	}
	tp := s.obs.TraceParent(ctx)
	if tp == "" || next.Pause[len(next.Pause)-1] != '}' || bytes.Contains(next.Pause, []byte(`"trace":`)) {
		return
	}
	// Appended as the object's last key: the pause was just built, and
	// traceparents need no escaping.
	raw := make([]byte, 0, len(next.Pause)+len(tp)+12)
	raw = append(raw, next.Pause[:len(next.Pause)-1]...)
	if len(next.Pause) > 2 {
		raw = append(raw, ',')
	}
	raw = append(append(append(raw, `"trace":"`...), tp...), `"}`...)
	next.Pause = raw
}

// observe tells the observer, and the debug log, of a committed change.
func (s *Engine) observe(ctx context.Context, ch commitNote, saved *store.Task, entries []store.LogEntry) {
	debug := s.log.Enabled(ctx, slog.LevelDebug)
	if s.obs == nil && !debug {
		return
	}
	t := Transition{TaskID: saved.ID, ContextID: saved.ContextID, Agent: saved.Agent, To: saved.State, Cause: ch.cause}
	// Whether a question opened, was replaced or closed is told by the
	// question column alone: no decoding on a change that asks nothing.
	var prevQ json.RawMessage
	if ch.prev != nil {
		t.From = ch.prev.State
		prevQ = ch.prev.Question
	}
	nextQ := saved.Question
	hadQ, hasQ := len(prevQ) > 0, len(nextQ) > 0
	replaced := hadQ && hasQ && !bytes.Equal(prevQ, nextQ)
	resumed := ch.resumes()
	if hadQ && (!hasQ || (resumed && replaced) || ch.cause == "expire") {
		p := ch.pausedFrom()
		if p != nil && p.Kind != "" {
			t.ClosedKind = p.Kind
		} else {
			t.ClosedKind = QuestionKind(prevQ)
		}
		if p != nil && !p.Asked.IsZero() {
			t.Waited = s.now().Sub(p.Asked)
		}
		switch {
		case ch.cause == "expire" || (ch.in != nil && ch.in.Expired):
			t.Closed = QuestionExpired
			if p != nil {
				t.Expiry = string(p.OnExpiry)
			}
			if t.Expiry == "" {
				t.Expiry = string(ExpireFail)
			}
		case resumed:
			t.Closed = QuestionAnswered
			if ch.in.Answer.Action != "" {
				t.Closed = QuestionDeclined
			}
		case saved.State == a2a.TaskStateCanceled:
			t.Closed = QuestionCanceled
		default:
			t.Closed = QuestionEnded
		}
	}
	switch {
	case hasQ && (!hadQ || t.Closed != ""):
		t.Asked, t.Kind = true, pausedKind(saved)
	case replaced && questionChanged(ch.prev, saved):
		t.Reasked, t.Kind = true, pausedKind(saved)
	}
	for _, e := range entries {
		if e.Kind == store.KindReminder {
			t.Reminder = true
		}
	}
	t.Ended = saved.State.Terminal() && (ch.prev == nil || !ch.prev.State.Terminal())
	if debug {
		attrs := []slog.Attr{slog.String("task", t.TaskID), slog.String("agent", t.Agent), slog.String("cause", t.Cause),
			slog.String("from", string(t.From)), slog.String("to", string(t.To)), slog.Int64("version", saved.Version)}
		if t.Closed != "" {
			attrs = append(attrs, slog.String("question", string(t.Closed)), slog.Duration("waited", t.Waited))
		}
		if t.Asked || t.Reasked {
			attrs = append(attrs, slog.Bool("asked", t.Asked), slog.Bool("reasked", t.Reasked), slog.String("kind", t.Kind))
		}
		s.log.LogAttrs(ctx, slog.LevelDebug, "transition", attrs...)
	}
	if s.obs != nil {
		s.obs.Transition(ctx, t)
	}
}

// event counts e for agent when an observer is set.
func (s *Engine) event(ctx context.Context, agent string, e Event) {
	if s.obs != nil {
		s.obs.Event(ctx, agent, e)
	}
}

// traceParent is the traceparent of ctx's span, "" without an observer.
func (s *Engine) traceParent(ctx context.Context) string {
	if s.obs == nil {
		return ""
	}
	return s.obs.TraceParent(ctx)
}

// QuestionKind names what a question asks, for metrics and askpoint
// stats: the sorted names of the fields its answer schema requires, joined
// by "+" ("any" when it requires none), at most 80 characters. Agents ask
// few kinds of question, so the label stays bounded (decision 0066).
func QuestionKind(raw json.RawMessage) string {
	var q struct {
		Schema json.RawMessage `json:"answerSchema"`
	}
	if json.Unmarshal(raw, &q) != nil {
		return "any"
	}
	return schemaKind(q.Schema)
}

// pausedKind is the kind of t's open question, from its pause state when
// it keeps it (a smaller read than the question).
func pausedKind(t *store.Task) string {
	if k := rawString(t.Pause, "kind"); k != nil {
		return string(k)
	}
	return QuestionKind(t.Question)
}

// schemaKind is the question kind of an answer schema.
func schemaKind(schema json.RawMessage) string {
	var sc struct {
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &sc) != nil || len(sc.Required) == 0 {
		return "any"
	}
	names := append([]string(nil), sc.Required...)
	sort.Strings(names)
	k := strings.Join(names, "+")
	if len(k) > 80 {
		k = k[:80]
	}
	return k
}

// kindCache keeps schemaKind by answer schema: an agent asks the same few
// questions again and again, so each schema is decoded once, not at every
// question. Bounded in entries and in the size of a schema kept; when full
// it starts again.
type kindCache struct {
	mu sync.RWMutex
	m  map[string]string
}

const (
	maxKinds      = 256
	maxKindSchema = 8 << 10
)

func (c *kindCache) kind(schema json.RawMessage) string {
	if len(schema) > maxKindSchema {
		return schemaKind(schema)
	}
	c.mu.RLock()
	k, ok := c.m[string(schema)]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = schemaKind(schema)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxKinds {
		c.m = make(map[string]string)
	}
	c.m[string(schema)] = k
	c.mu.Unlock()
	return k
}

// countOpenQuestions reads, once at start, how many questions the store
// holds open per agent: every open question has its wake timer set.
func (s *Engine) countOpenQuestions(ctx context.Context) {
	if s.obs == nil {
		return
	}
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	tasks, err := s.store.DueTasks(ctx, store.DueParams{Timer: store.TimerWake, Now: far, Limit: maxOpenCount})
	if err != nil {
		s.log.Warn("count the open questions for askpoint_questions_open; it starts from 0", slog.Any("err", err))
		tasks = nil
	}
	by := map[string]int{}
	for _, t := range tasks {
		if t.State == a2a.TaskStateInputRequired && len(t.Question) > 0 {
			by[t.Agent]++
		}
	}
	s.obs.OpenQuestions(by)
}

// maxOpenCount bounds the start-up count of open questions.
const maxOpenCount = 1_000_000

// WithObserver returns cfg, an askpoint.Config, with o as its engine's
// observer. The root package sets it at init: the observer is for this
// module's own command and tests (internal/telemetry), not part of the
// public agent API.
var WithObserver func(cfg any, o Observer) any

// questionChanged reports whether the open question of b is another
// than a's.
func questionChanged(a, b *store.Task) bool {
	x, y := questionIDOf(a.Question), questionIDOf(b.Question)
	if x == nil || y == nil {
		return openQuestionID(a) != openQuestionID(b)
	}
	return !bytes.Equal(x, y)
}

// questionIDOf is the raw questionId of an encoded question, found
// without decoding it (the engine writes questionId first); nil when it
// cannot be found, which then compares as a change.
func questionIDOf(raw json.RawMessage) []byte { return rawString(raw, "questionId") }

// rawString is the string value of the first key of an object the engine
// encoded, when that key is key and the value has no escapes (IDs,
// kinds), found without decoding the object; nil otherwise.
func rawString(raw json.RawMessage, key string) []byte {
	if len(raw) < len(key)+6 || raw[0] != '{' || raw[1] != '"' || string(raw[2:2+len(key)]) != key {
		return nil
	}
	rest := raw[2+len(key):]
	if !bytes.HasPrefix(rest, []byte(`":"`)) {
		return nil
	}
	rest = rest[3:]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return nil
	}
	return rest[:j]
}
