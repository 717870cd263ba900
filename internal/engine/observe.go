package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// observer is what the engine tells of itself: the configured observer
// (api.Observer, behind a recover) and the debug log of transitions. Its
// methods do nothing observable when no observer is set.
type observer struct {
	obs   api.Observer // nil: nothing is observed
	log   *slog.Logger
	kinds kindCache // question kinds by answer schema
	now   func() time.Time
}

func newObserver(o api.Observer, log *slog.Logger, now func() time.Time) *observer {
	return &observer{obs: guardObserver(o, log), log: log, now: now}
}

// on reports whether an observer is set.
func (o *observer) on() bool { return o.obs != nil }

// kind is the question kind of an answer schema (see QuestionKind).
func (o *observer) kind(schema json.RawMessage) string { return o.kinds.kind(schema) }

// startStep starts the span of a step; end ends it.
func (o *observer) startStep(ctx context.Context, info api.StepInfo) (context.Context, func(error)) {
	if o.obs == nil {
		return ctx, func(error) {}
	}
	return o.obs.StartStep(ctx, info)
}

// startPush starts the span of a push delivery; traceparent is the one
// the receiver joins ("" without an observer).
func (o *observer) startPush(ctx context.Context, taskID string) (_ context.Context, end func(error), traceparent string) {
	if o.obs == nil {
		return ctx, func(error) {}, ""
	}
	ctx, end = o.obs.StartPush(ctx, taskID)
	return ctx, end, o.obs.TraceParent(ctx)
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

// before, on a write that opens a question while tracing records,
// keeps the asking span's traceparent in the pause state, so that the step
// resumed by the answer, however much later, links to it. A step's
// question has it from the step (run.finish, written with the pause); this
// is for a pause built without it.
func (o *observer) before(ctx context.Context, ch commitNote, next *store.Task) {
	if o.obs == nil || len(next.Question) == 0 || len(next.Pause) == 0 {
		return
	}
	if ch.prev != nil && len(ch.prev.Question) > 0 && !ch.resumes() {
		return // a re-ask or a reminder keeps the pause, and its link, as it is
	}
	if next.Pause[len(next.Pause)-1] != '}' || bytes.Contains(next.Pause, []byte(`"trace":`)) {
		return
	}
	tp := o.obs.TraceParent(ctx)
	if tp == "" {
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

// transition tells the observer, and the debug log, of a committed change.
func (o *observer) transition(ctx context.Context, ch commitNote, saved *store.Task, entries []store.LogEntry) {
	debug := o.log.Enabled(ctx, slog.LevelDebug)
	if o.obs == nil && !debug {
		return
	}
	t := api.Transition{TaskID: saved.ID, ContextID: saved.ContextID, Agent: saved.Agent, To: saved.State, Cause: ch.cause}
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
			t.Waited = o.now().Sub(p.Asked)
		}
		switch {
		case ch.cause == "expire" || (ch.in != nil && ch.in.Expired):
			t.Closed = api.QuestionExpired
			if p != nil {
				t.Expiry = string(p.OnExpiry)
			}
			if t.Expiry == "" {
				t.Expiry = string(api.ExpireFail)
			}
		case resumed:
			t.Closed = api.QuestionAnswered
			if ch.in.Answer.Action != "" {
				t.Closed = api.QuestionDeclined
			}
		case saved.State == a2a.TaskStateCanceled:
			t.Closed = api.QuestionCanceled
		default:
			t.Closed = api.QuestionEnded
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
		o.log.LogAttrs(ctx, slog.LevelDebug, "transition", attrs...)
	}
	if o.obs != nil {
		o.obs.Transition(ctx, t)
	}
}

// event counts e for agent when an observer is set.
func (o *observer) event(ctx context.Context, agent string, e api.Event) {
	if o.obs != nil {
		o.obs.Event(ctx, agent, e)
	}
}

// traceParent is the traceparent of ctx's span, "" without an observer.
func (o *observer) traceParent(ctx context.Context) string {
	if o.obs == nil {
		return ""
	}
	return o.obs.TraceParent(ctx)
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
	if len(k) > maxKindBytes {
		// Cut on a character's first byte: a label must be valid UTF-8.
		cut := maxKindBytes
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		k = k[:cut]
	}
	return k
}

// maxKindBytes bounds a question kind's length.
const maxKindBytes = 80

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

// countOpen reads, once at start, how many questions st holds open per
// agent (every one of agents counted, at zero when it has none): every
// open question has its wake timer set.
func (o *observer) countOpen(ctx context.Context, st store.Store, agents []string) {
	if o.obs == nil {
		return
	}
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	tasks, err := st.DueTasks(ctx, store.DueParams{Timer: store.TimerWake, Now: far, Limit: maxOpenCount})
	if err != nil {
		o.log.Warn("count the open questions for askpoint_questions_open; it starts from 0", slog.Any("err", err))
		tasks = nil
	}
	by := make(map[string]int, len(agents))
	for _, name := range agents { // every agent, so that its series show at zero
		by[name] = 0
	}
	for _, t := range tasks {
		if t.State == a2a.TaskStateInputRequired && len(t.Question) > 0 {
			by[t.Agent]++
		}
	}
	o.obs.OpenQuestions(by)
}

// maxOpenCount bounds the start-up count of open questions.
const maxOpenCount = 1_000_000

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

// safeObserver is the engine's observer behind a recover: a panic in the
// observer (a metrics library refusing a label, say) is logged, once per
// method, and never takes a worker, and with it the process, down.
type safeObserver struct {
	o      api.Observer
	log    *slog.Logger
	logged sync.Map // method name -> struct{}: panics already logged
}

func guardObserver(o api.Observer, log *slog.Logger) api.Observer {
	if o == nil {
		return nil
	}
	return &safeObserver{o: o, log: log}
}

// recovered logs a panic of method, the first time it happens.
func (g *safeObserver) recovered(method string) {
	if p := recover(); p != nil {
		if _, seen := g.logged.LoadOrStore(method, struct{}{}); !seen {
			g.log.Error("the observer panicked; what it observed there is lost (logged once per method)",
				slog.String("method", method), slog.Any("panic", p), slog.String("stack", string(debug.Stack())))
		}
	}
}

func (g *safeObserver) Transition(ctx context.Context, t api.Transition) {
	defer g.recovered("Transition")
	g.o.Transition(ctx, t)
}

func (g *safeObserver) Event(ctx context.Context, agent string, e api.Event) {
	defer g.recovered("Event")
	g.o.Event(ctx, agent, e)
}

func (g *safeObserver) StartStep(ctx context.Context, s api.StepInfo) (out context.Context, end func(error)) {
	out, end = ctx, func(error) {} // what a panic leaves: the step runs unobserved
	defer g.recovered("StartStep")
	c, e := g.o.StartStep(ctx, s)
	return c, g.safeEnd("StartStep end", e)
}

func (g *safeObserver) StartPush(ctx context.Context, taskID string) (out context.Context, end func(error)) {
	out, end = ctx, func(error) {} // what a panic leaves: the delivery runs unobserved
	defer g.recovered("StartPush")
	c, e := g.o.StartPush(ctx, taskID)
	return c, g.safeEnd("StartPush end", e)
}

func (g *safeObserver) safeEnd(method string, end func(error)) func(error) {
	return func(err error) {
		defer g.recovered(method)
		end(err)
	}
}

func (g *safeObserver) TraceParent(ctx context.Context) string {
	defer g.recovered("TraceParent")
	return g.o.TraceParent(ctx)
}

func (g *safeObserver) OpenQuestions(by map[string]int) {
	defer g.recovered("OpenQuestions")
	g.o.OpenQuestions(by)
}

func (g *safeObserver) ObserveHTTP(next http.Handler) http.Handler { return g.o.ObserveHTTP(next) }

func (g *safeObserver) ObserveStore(s store.Store) store.Store { return g.o.ObserveStore(s) }
