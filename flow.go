package askpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/question"
)

// Flow is an [Agent] written as straight-line code: one function that asks
// its questions where it needs their answers, each with its own answer type,
// and does its work in between.
//
//	travel := askpoint.Flow(func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
//		city, err := askpoint.AskFor[string](call, question.Question{Text: "Where to?", Options: cities})
//		if err != nil {
//			return askpoint.Outcome{}, err
//		}
//		ok, err := askpoint.AskFor[bool](call, question.Question{Text: "Book " + city + "?"})
//		if err != nil {
//			return askpoint.Outcome{}, err
//		}
//		...
//	})
//
// No goroutine waits for an answer. When the function reaches a question
// that has no answer yet, [AskFor] returns an error that pauses the task
// (return it as it is, or wrapped): the answers so far and the results of
// [Once] are the task's checkpoint. When the answer comes, the function
// runs again from the top, on whichever node: every question answered
// before returns its recorded answer at once, every Once its recorded
// result without running again, and the code carries on past the new
// answer. So everything outside Once must be free of side effects and
// must reach the same questions in the same order given the same answers;
// a task whose recorded questions no longer match the code (a new
// version of the agent asks in another order) fails with a reason saying
// where, instead of handing one question's answer to another. Progress
// and artifacts a replayed part of the function sends again are dropped:
// the caller has them.
//
// A caller who declines a question makes AskFor return a [*Declined]
// error: returned as it is, the task ends rejected as with [Steps];
// handled, the function decides what follows. A question that expires
// unanswered fails the task (q.Expires, else the server's question
// expiry). An agent that holds things while paused, waits for events or
// for a credential is written with [Steps].
type Flow func(ctx context.Context, call *Call) (Outcome, error)

// Start implements [Agent].
func (f Flow) Start(ctx context.Context, call *Call) (Outcome, error) {
	return f.run(ctx, call, &flowState{V: flowVersion}, nil)
}

// Resume implements [Agent].
func (f Flow) Resume(ctx context.Context, call *Call, r *Resumption) (Outcome, error) {
	st := &flowState{}
	if len(r.Checkpoint) == 0 || json.Unmarshal(r.Checkpoint, st) != nil || st.V != flowVersion {
		return Fail("This task was paused by an agent that was not a flow, or by a version of askpoint whose flows this one cannot resume."), nil
	}
	if r.Event != nil || r.Auth != nil || r.Answer == nil {
		return Fail("A flow resumes only with an answer; this task was resumed by something else."), nil
	}
	n := len(st.Steps)
	if n == 0 || st.Steps[n-1].Kind != kindAsk || st.Steps[n-1].Done {
		return Fail("This task's checkpoint has no open question for the answer."), nil
	}
	last := &st.Steps[n-1]
	if r.Answer.Action == question.ActionDecline {
		last.Done, last.Declined, last.Reason = true, true, r.Answer.Reason
	} else {
		last.Value = r.Answer.Fields
	}
	return f.run(ctx, call, st, r.Question)
}

// run runs the function over st; answered is the question the newest
// answer (the last step's) is to, nil on Start.
func (f Flow) run(ctx context.Context, call *Call, st *flowState, answered *question.Question) (Outcome, error) {
	fr := &flowRun{state: st, answered: answered, call: call}
	if rt := api.RuntimeOf(call); rt != nil {
		api.Bind(call, replayRuntime{inner: rt, fr: fr})
	}
	api.SetFlow(call, fr)
	o, err := f(ctx, call)
	switch {
	case fr.mismatch != "":
		return Fail(fr.mismatch), nil
	case fr.pause != nil:
		return *fr.pause, nil
	}
	var d *Declined
	if errors.As(err, &d) {
		return Reject(DeclinedText(d.Reason)), nil
	}
	if err == nil && fr.replaying() {
		// The code ended before the steps it took on an earlier run, so
		// the newest answer would be dropped unread.
		return Fail(fmt.Sprintf("This task paused under another version of the agent: its step %d was %s and the agent's code now ends before it.",
			fr.next+1, describeStep(st.Steps[fr.next].Kind, st.Steps[fr.next].Name))), nil
	}
	return o, err
}

// flowVersion tags a flow's checkpoint, so that a later format can read
// this one or refuse it in words.
const flowVersion = 1

// flowState is a flow's checkpoint: what each step of the function so far
// gave, in order.
type flowState struct {
	V     int         `json:"flow"`
	Steps []flowEntry `json:"steps"`
}

// flowEntry is one question or one Once of a flow.
type flowEntry struct {
	Kind string `json:"kind"` // kindAsk or kindOnce
	// Name identifies the step: a question's ID when the agent gave one,
	// else its answer type and a digest of its schema; a Once's name.
	Name string `json:"name"`
	// Value is the question's accepted answer (its fields) or the Once's
	// result; with Done false, an answer not yet checked.
	Value json.RawMessage `json:"value,omitempty"`
	// Done: the answer was accepted (or declined), the Once ran.
	Done     bool   `json:"done,omitempty"`
	Declined bool   `json:"declined,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

const (
	kindAsk  = "ask"
	kindOnce = "once"
)

// flowRun is one run of a flow's function.
type flowRun struct {
	state    *flowState
	answered *question.Question
	call     *Call
	next     int      // the step the function reaches next
	pause    *Outcome // set once the function reached a question to ask
	mismatch string   // set when the recorded steps do not match the code
}

// replaying reports whether the function is still before the newest step
// of its checkpoint: what it sends now it sent on an earlier run.
func (fr *flowRun) replaying() bool { return fr.next < len(fr.state.Steps) }

// errFlowPaused is what AskFor and Once return once the function has
// reached a question it must wait for; Flow pauses the task, whatever the
// function returns after it.
var errFlowPaused = errors.New("askpoint: the flow is paused for an answer; return this error")

// errFlowChanged is what AskFor and Once return once the recorded steps no
// longer match the code; Flow fails the task with the reason.
var errFlowChanged = errors.New("askpoint: the flow's recorded steps do not match its code")

// Declined is the error AskFor returns when the caller declined to answer.
type Declined struct {
	Reason string // the caller's reason, "" when none was given
}

func (d *Declined) Error() string {
	if d.Reason == "" {
		return "askpoint: the caller declined to answer"
	}
	return "askpoint: the caller declined to answer: " + d.Reason
}

// flowOf is the run a flow function's call belongs to.
func flowOf(call *Call, what string) (*flowRun, error) {
	fr, ok := api.FlowOf(call).(*flowRun)
	if !ok {
		return nil, Permanent(fmt.Errorf("askpoint: %s called outside a Flow's function", what))
	}
	return fr, nil
}

// step returns the recorded step the function reaches now, or nil when it
// is past the checkpoint; the error stops the function.
func (fr *flowRun) step(kind, name string) (*flowEntry, error) {
	if fr.mismatch != "" {
		return nil, errFlowChanged
	}
	if fr.pause != nil {
		return nil, errFlowPaused
	}
	i := fr.next
	if i >= len(fr.state.Steps) {
		return nil, nil
	}
	e := &fr.state.Steps[i]
	if e.Kind != kind || e.Name != name {
		fr.mismatch = fmt.Sprintf("This task paused under another version of the agent: its step %d was %s and the agent's code now has %s there, so its answers cannot be given to the questions they were for.",
			i+1, describeStep(e.Kind, e.Name), describeStep(kind, name))
		return nil, errFlowChanged
	}
	return e, nil
}

func describeStep(kind, name string) string {
	if kind == kindOnce {
		return fmt.Sprintf("the work %q", name)
	}
	return fmt.Sprintf("the question %q", name)
}

// AskFor asks q in a [Flow] and returns its answer decoded into T. When q
// has no schema it is derived from T with [question.SchemaFor]: a struct's
// fields, or for a single value (a string, bool, number) one field
// [question.ScalarField], so that what is asked and what the code reads
// cannot disagree. checks are rules the schema cannot say (the end date
// after the start): an answer that fails one is asked again with the
// check's error (a [question.FieldError] names a field), and the re-ask
// counts toward the question's attempt cap like a re-ask after a
// validation error.
//
// On the run that reaches it first AskFor returns an error that pauses the
// task: return it. On later runs it returns the recorded answer. When the
// caller declined it returns a [*Declined]. Give q an ID when an agent
// asks two questions of the same answer type and schema: a changed order
// of such questions between versions is then found as well.
func AskFor[T any](call *Call, q question.Question, checks ...func(T) error) (T, error) {
	var zero T
	fr, err := flowOf(call, "AskFor")
	if err != nil {
		return zero, err
	}
	if len(q.Schema) == 0 {
		schema, err := question.SchemaFor[T]()
		if err != nil {
			return zero, Permanent(err)
		}
		q.Schema = schema
	}
	name := q.ID
	if name == "" {
		sum := sha256.Sum256(q.Schema)
		name = reflect.TypeFor[T]().String() + "@" + hex.EncodeToString(sum[:4])
	}
	e, err := fr.step(kindAsk, name)
	if err != nil {
		return zero, err
	}
	if e == nil {
		// A new question: the task pauses for it.
		fr.state.Steps = append(fr.state.Steps, flowEntry{Kind: kindAsk, Name: name})
		fr.next++
		o := Ask(q, fr.state)
		fr.pause = &o
		return zero, errFlowPaused
	}
	if e.Declined {
		fr.next++
		return zero, &Declined{Reason: e.Reason}
	}
	v, err := question.Decode[T](&question.Answer{Fields: e.Value})
	if err != nil {
		return zero, Permanent(fmt.Errorf("askpoint: the answer to question %q does not decode into %T: %w", name, zero, err))
	}
	if !e.Done {
		// The newest answer: check it before the code sees it.
		var problems []question.FieldError
		for _, check := range checks {
			if err := check(v); err != nil {
				var fe question.FieldError
				if !errors.As(err, &fe) {
					fe = question.FieldError{Message: err.Error()}
				}
				problems = append(problems, fe)
			}
		}
		if len(problems) > 0 {
			e.Value = nil
			asked := fr.answered
			if asked == nil {
				asked = &q
			}
			o := Reask(asked, fr.state, problems...)
			fr.pause = &o
			return zero, errFlowPaused
		}
		e.Done = true
	}
	fr.next++
	return v, nil
}

// Once runs fn the first time a [Flow]'s function reaches it and records
// its result in the task's checkpoint; on every later run of the function
// it returns the recorded result without running fn. Work with side
// effects (a booking, a payment, a call that costs money) goes in Once,
// so that answering a later question never repeats it. name identifies
// the work within the flow. fn gets a key, the same on every try of this
// work (after a crash, a retry or on another node, before its result was
// recorded) and different for every other, to make the work idempotent
// where it is done. An error from fn is returned and nothing is
// recorded: returned from the function, it retries the step (see
// [Permanent]).
func Once[T any](call *Call, name string, fn func(key string) (T, error)) (T, error) {
	var zero T
	fr, err := flowOf(call, "Once")
	if err != nil {
		return zero, err
	}
	e, err := fr.step(kindOnce, name)
	if err != nil {
		return zero, err
	}
	if e != nil {
		var v T
		if err := json.Unmarshal(e.Value, &v); err != nil {
			return zero, Permanent(fmt.Errorf("askpoint: the recorded result of %q does not decode into %T: %w", name, zero, err))
		}
		fr.next++
		return v, nil
	}
	v, err := fn(call.TaskID + "/once/" + strconv.Itoa(fr.next) + "/" + name)
	if err != nil {
		return zero, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return zero, Permanent(fmt.Errorf("askpoint: the result of %q cannot be recorded: %w", name, err))
	}
	fr.state.Steps = append(fr.state.Steps, flowEntry{Kind: kindOnce, Name: name, Value: raw, Done: true})
	fr.next++
	return v, nil
}

// Reask asks q again with problems: a rule the schema cannot express found
// the answer wrong. It is q's next attempt (a new question ID, the same
// text, schema, options and expiry, and the problems to show), so it counts
// toward q's attempt cap like a re-ask after a validation error: past the
// cap the task fails, saying so. In a Steps agent q is [Call.Question],
// the question the step's answer was to.
func Reask(q *question.Question, checkpoint any, problems ...question.FieldError) Outcome {
	if len(problems) == 0 {
		problems = []question.FieldError{{Message: "the answer was not accepted"}}
	}
	return Ask(*q.ReAsk("", problems), checkpoint)
}

// replayRuntime is a flow's run's side of its call: what the function
// sends while it replays steps recorded before was sent on an earlier run,
// and is dropped.
type replayRuntime struct {
	inner api.Runtime
	fr    *flowRun
}

func (r replayRuntime) Progress(ctx context.Context, text string) error {
	if r.fr.replaying() {
		return nil
	}
	return r.inner.Progress(ctx, text)
}

func (r replayRuntime) AddArtifact(ctx context.Context, a *a2a.Artifact) error {
	if r.fr.replaying() {
		return nil
	}
	return r.inner.AddArtifact(ctx, a)
}

func (r replayRuntime) AppendArtifact(ctx context.Context, a *a2a.Artifact, last bool) error {
	if r.fr.replaying() {
		return nil
	}
	return r.inner.AppendArtifact(ctx, a, last)
}

func (r replayRuntime) WakeToken() string { return r.inner.WakeToken() }
