package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/question"
)

// Offline is the engine's reading of an Ask outcome and of an answer,
// without a store or a server: askpointtest.Run drives an agent's steps
// through it, so that a step run in a test gets its question, checkpoint,
// holds and answer as it gets them on a server.
type Offline struct {
	oc       *outcomes
	maxBytes int
}

// NewOffline reads questions and answers as a server on cfg does (its
// question expiry, attempt cap and answer size; cfg needs no store).
func NewOffline(cfg api.Config) *Offline {
	cfg = api.Defaults(cfg)
	return &Offline{
		oc:       &outcomes{expiry: cfg.QuestionExpiry, maxAttempts: cfg.MaxAttempts, now: cfg.Now, log: cfg.Logger, obs: &observer{}},
		maxBytes: cfg.MaxAnswerBytes,
	}
}

// Pause is what a task keeps while its question is open.
type Pause struct {
	// Question is the question as sent: ID, expiry and attempts filled.
	Question *question.Question
	// Checkpoint is the step's checkpoint as the store keeps it.
	Checkpoint json.RawMessage
	// Holds are what the task holds, with their deadlines as kept.
	Holds []api.HoldStatus

	first         string // the pause's first question: hold keys name it
	onExpiry      api.ExpiryAction
	defaultAnswer json.RawMessage
}

// ReleaseKey is the idempotency key the release of p's hold named name
// runs with on task taskID.
func (p *Pause) ReleaseKey(taskID, name string) string { return holdKey(taskID, p.first, name) }

// Ask prepares an Ask outcome as the step's write does, for task taskID at
// its version; releases says whether the agent can release holds. An
// error is why the server would fail the task instead of asking.
func (o *Offline) Ask(out api.Outcome, releases bool, taskID string, version int64, now time.Time) (*Pause, error) {
	if out.Kind() != api.OutcomeAsk {
		return nil, fmt.Errorf("the outcome is %q, not a question", out.Kind())
	}
	q, err := o.oc.prepareQuestion(out.Question(), taskID, version, now)
	if err != nil {
		return nil, fmt.Errorf("the agent asked a question that cannot be answered: %w", err)
	}
	cp, err := json.Marshal(out.Checkpoint())
	if err != nil {
		return nil, fmt.Errorf("the agent's checkpoint could not be saved: %w", err)
	}
	p, err := o.oc.preparePause(out, q, releases, now)
	if err != nil {
		return nil, fmt.Errorf("the agent asked a question the runtime cannot keep: %w", err)
	}
	pause := &Pause{Question: q, Checkpoint: cp, first: q.ID, onExpiry: p.OnExpiry, defaultAnswer: p.DefaultAnswer}
	for _, h := range p.Holds {
		pause.Holds = append(pause.Holds, api.HoldStatus{Name: h.Name, Until: h.Until, Data: h.Data})
	}
	return pause, nil
}

// Answer reads msg as the server reads an answer to p's question: a valid
// answer or a decline to resume the task with (answer), a re-ask at the
// task's next version (reask), or the task's end (end, text). An error
// refuses the message, as the server does.
func (o *Offline) Answer(p *Pause, msg *a2a.Message, taskID string, version int64, now time.Time) (answer *question.Answer, reask *question.Question, end a2a.TaskState, text string, err error) {
	v, err := judgeAnswer(p.Question, msg, taskID, version, o.maxBytes, now)
	return v.answer, v.reask, v.end, v.text, err
}

// Expire is what p's question does at its expiry: the default answer to
// resume the task with, or the task's end (end, text).
func (o *Offline) Expire(p *Pause) (answer *question.Answer, end a2a.TaskState, text string) {
	if p.onExpiry == api.ExpireDefault {
		return &question.Answer{QuestionID: p.Question.ID, Fields: p.defaultAnswer}, "", ""
	}
	end, text = expiryEnd(p.Question, p.onExpiry)
	return nil, end, text
}
