package askpointtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/question"
)

// Runner runs an agent's steps one at a time without a server, as a
// server runs them: the question gets its ID and expiry and is checked,
// the checkpoint goes through JSON, an answer is read and validated
// against the question (a text answer as a person's words, a re-ask on
// errors, the task's end at the attempt cap), and the resumed step gets
// the Resumption and the Call a server gives it (Question, Answer,
// Checkpoint; the step's Key, the holds). An agent that keeps its state in
// its checkpoint behaves as it does on a server; what a server adds
// (storage, the wire, timers, retries) is Env's.
type Runner struct {
	// Agent is the agent under test.
	Agent askpoint.Agent
	// Now is the server's clock: question expiries and whether a hold
	// lapsed are read on it (a Clock's Now, to move it). Nil: time.Now.
	Now func() time.Time
}

// Run runs agent's first step on a user's message of text, on the real
// clock (Runner for another).
func Run(t testing.TB, agent askpoint.Agent, text string) *Step {
	t.Helper()
	return Runner{Agent: agent}.Start(t, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
}

// Start runs the agent's first step on m, a new task's request. The test
// fails when the step returns an error or panics, or ends in an outcome a
// server refuses (a question that cannot be answered, a checkpoint that
// does not encode), saying why.
func (r Runner) Start(t testing.TB, m *a2a.Message) *Step {
	t.Helper()
	if r.Now == nil {
		r.Now = time.Now
	}
	id := fmt.Sprintf("run-%d", runs.Add(1))
	task := &stepTask{r: r, id: id, off: engine.NewOffline(api.Config{Now: r.Now}), request: m}
	call := &askpoint.Call{TaskID: id, ContextID: "ctx-" + id, Request: m, Message: m, Key: id + "/start"}
	return task.run(t, call, nil)
}

var runs atomic.Int64

// stepTask is the task a Runner's steps belong to.
type stepTask struct {
	r       Runner
	id      string
	off     *engine.Offline
	request *a2a.Message
	version int64
}

// Step is the task after one step that Run (or a Runner, or a Step's
// Answer, Decline, Expire or Again) ran: what the step returned and what a
// server makes of it.
type Step struct {
	// Outcome is what the step returned; zero when no step ran (an answer
	// the server re-asks or that ends the task).
	Outcome askpoint.Outcome
	// State is the task's state as a server leaves it: input-required
	// while a question is open, completed, failed, rejected, canceled,
	// auth-required, or working while it awaits an event.
	State a2a.TaskState
	// Text is the status text a server shows with State: a Fail's or a
	// Reject's reason, a Complete's message, why an answer ended the task.
	Text string
	// Question is the open question as a server sends it (ID, expiry and
	// attempt filled; a re-ask's errors), nil unless input-required.
	Question *question.Question
	// Checkpoint is the checkpoint as the store keeps it: what the next
	// step reads.
	Checkpoint json.RawMessage
	// Holds are what the task holds while its question is open, as the
	// next step gets them back (Call.Holds).
	Holds []askpoint.HoldStatus
	// Call is the call the step ran with, nil when no step ran.
	Call *askpoint.Call

	task  *stepTask
	pause *engine.Pause
	res   *askpoint.Resumption // the step's resumption, nil for a start
}

// run runs one step of the task and reads its outcome as a server does.
func (k *stepTask) run(t testing.TB, call *askpoint.Call, res *askpoint.Resumption) *Step {
	t.Helper()
	k.version++
	out, err := runStep(t.Context(), k.r.Agent, call, res)
	if err != nil {
		t.Fatalf("askpointtest: the agent's step (task %s, key %s) failed: %v", k.id, call.Key, err)
	}
	s := &Step{Outcome: out, Call: call, task: k, res: res, Text: out.Text()}
	switch out.Kind() {
	case askpoint.OutcomeAsk:
		_, releases := k.r.Agent.(askpoint.Releaser)
		p, err := k.off.Ask(out, releases, k.id, k.version, k.r.Now())
		if err != nil {
			t.Fatalf("askpointtest: a server fails task %s here: %v", k.id, err)
		}
		s.State, s.Question, s.Checkpoint, s.Holds, s.pause = a2a.TaskStateInputRequired, p.Question, p.Checkpoint, p.Holds, p
	case askpoint.OutcomeComplete:
		s.State = a2a.TaskStateCompleted
	case askpoint.OutcomeFail:
		s.State = a2a.TaskStateFailed
	case askpoint.OutcomeReject:
		s.State = a2a.TaskStateRejected
	case askpoint.OutcomeAuth, askpoint.OutcomeAwait:
		s.State = a2a.TaskStateAuthRequired
		if out.Kind() == askpoint.OutcomeAwait {
			s.State = a2a.TaskStateWorking
		}
		if s.Checkpoint, err = json.Marshal(out.Checkpoint()); err != nil {
			t.Fatalf("askpointtest: a server fails task %s here: the agent's checkpoint could not be saved: %v", k.id, err)
		}
	default:
		t.Fatalf("askpointtest: the agent's step (task %s) returned no outcome (build one with askpoint.Ask, Complete, Fail, ...)", k.id)
	}
	return s
}

// runStep runs the step, a panic made its error.
func runStep(ctx context.Context, a askpoint.Agent, call *askpoint.Call, res *askpoint.Resumption) (out askpoint.Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("it panicked: %v", p)
		}
	}()
	if res == nil {
		return a.Start(ctx, call)
	}
	return a.Resume(ctx, call, res)
}

// Answer answers the step's open question as Env.Answer does (a string as
// a person's text, anything else as the answer's JSON object) and returns
// the task after it: the next step's, or a re-ask, or the task's end when
// the server ends it (the attempt cap). The test fails when the task has
// no open question or a server refuses the message (an expired question).
func (s *Step) Answer(t testing.TB, v any) *Step {
	t.Helper()
	q := s.open(t)
	return s.reply(t, a2a.NewMessageForTask(a2a.MessageRoleUser, s.taskInfo(), answerPart(t, q, v)))
}

// Decline declines the step's open question with reason; the agent's step
// decides what follows.
func (s *Step) Decline(t testing.TB, reason string) *Step {
	t.Helper()
	q := s.open(t)
	return s.reply(t, a2a.NewMessageForTask(a2a.MessageRoleUser, s.taskInfo(), declinePart(q, reason)))
}

func (s *Step) taskInfo() a2a.TaskInfo {
	return a2a.TaskInfo{TaskID: a2a.TaskID(s.task.id), ContextID: "ctx-" + s.task.id}
}

func (s *Step) reply(t testing.TB, m *a2a.Message) *Step {
	t.Helper()
	k := s.task
	ans, reask, end, text, err := k.off.Answer(s.pause, m, k.id, k.version, k.r.Now())
	if err != nil {
		t.Fatalf("askpointtest: a server refuses this answer to task %s: %v", k.id, err)
	}
	switch {
	case reask != nil:
		k.version++
		p := *s.pause
		p.Question = reask
		next := *s
		next.Outcome, next.Call, next.res, next.Question, next.pause = askpoint.Outcome{}, nil, nil, reask, &p
		next.Text = reask.Text
		return &next
	case ans == nil:
		s.releaseAll(t)
		return &Step{State: end, Text: text, task: k}
	}
	call := &askpoint.Call{TaskID: k.id, ContextID: "ctx-" + k.id, Request: k.request, Message: m,
		Key: k.id + "/" + s.Question.ID, Holds: s.holdsNow()}
	return k.run(t, call, &askpoint.Resumption{Checkpoint: s.Checkpoint, Question: s.Question, Answer: ans})
}

// Expire is what the step's question does at its expiry, as if nobody
// answered: the next step, resumed with the agent's default answer
// (Call.Expired), or the task's end (failed, or canceled), its holds
// released.
func (s *Step) Expire(t testing.TB) *Step {
	t.Helper()
	q := s.open(t)
	k := s.task
	ans, end, text := k.off.Expire(s.pause)
	if ans == nil {
		s.releaseAll(t)
		return &Step{State: end, Text: text, task: k}
	}
	call := &askpoint.Call{TaskID: k.id, ContextID: "ctx-" + k.id, Request: k.request,
		Key: k.id + "/" + q.ID, Holds: s.holdsNow(), Expired: true}
	return k.run(t, call, &askpoint.Resumption{Checkpoint: s.Checkpoint, Question: q, Answer: ans})
}

// Release runs the agent's release of every hold not released yet, as a
// server does at a hold's deadline (or when the task ends without
// resuming), with the key a server gives it; the holds the next step gets
// back say Released. The test fails when the agent has no release or a
// release returns an error.
func (s *Step) Release(t testing.TB) {
	t.Helper()
	s.open(t)
	s.releaseAll(t)
}

func (s *Step) releaseAll(t testing.TB) {
	t.Helper()
	if s.pause == nil {
		return
	}
	r, ok := s.task.r.Agent.(askpoint.Releaser)
	for i := range s.Holds {
		h := &s.Holds[i]
		if h.Released {
			continue
		}
		if !ok {
			t.Fatalf("askpointtest: agent %T holds %q but cannot release it", s.task.r.Agent, h.Name)
		}
		call := &askpoint.Call{TaskID: s.task.id, ContextID: "ctx-" + s.task.id, Key: s.pause.ReleaseKey(s.task.id, h.Name)}
		st := *h
		st.Lapsed = !s.task.r.Now().Before(h.Until)
		st.Released = true
		if err := r.Release(t.Context(), call, st); err != nil {
			t.Fatalf("askpointtest: the release of %q failed: %v", h.Name, err)
		}
		h.Released = true
	}
}

// holdsNow are the holds as a step resumed now gets them back.
func (s *Step) holdsNow() []askpoint.HoldStatus {
	var out []askpoint.HoldStatus
	now := s.task.r.Now()
	for _, h := range s.Holds {
		h.Lapsed = !now.Before(h.Until)
		out = append(out, h)
	}
	return out
}

// Again runs the same step again with the same call (the same Key, the
// same answer and holds), as a server does after a crash or a lapsed
// lease, and returns what that run did: a step whose side effects are
// keyed by call.Key does them once.
func (s *Step) Again(t testing.TB) *Step {
	t.Helper()
	if s.Call == nil {
		t.Fatal("askpointtest: Again on a task no step of which ran here (a re-ask, or an end)")
	}
	s.task.version--
	return s.task.run(t, s.Call, s.res)
}

func (s *Step) open(t testing.TB) *question.Question {
	t.Helper()
	if s.State != a2a.TaskStateInputRequired || s.Question == nil {
		msg := strings.TrimSpace(string(s.State) + " " + fmt.Sprintf("%q", s.Text))
		t.Fatalf("askpointtest: task %s has no open question: it is %s", s.task.id, msg)
	}
	return s.Question
}
