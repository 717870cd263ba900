package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// sdkExecutor runs askpoint's expense agent on the a2a-go SDK's default
// request handler (a2asrv.NewHandler, in-memory task store), so that both
// servers do the same work per round trip: the same parsing of the receipt,
// the same question (text part + data part with the answer schema and the
// options), the same schema validation of the answer and the same artifact.
// What differs is only what the servers are: the SDK keeps tasks in memory
// (gob deep copies), askpoint keeps them in a durable store.
//
// The checkpoint travels in the task's metadata (a JSON string under
// "checkpoint"), the question in the input-required status message, as an
// SDK agent would keep them.
type sdkExecutor struct {
	agent   askpoint.Agent
	resumed func(taskID string) // called when a step resumes with an answer
}

var _ a2asrv.AgentExecutor = (*sdkExecutor)(nil)

const checkpointKey = "checkpoint"

func (e *sdkExecutor) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil {
			e.start(ctx, ec, yield)
			return
		}
		e.resume(ctx, ec, yield)
	}
}

func (e *sdkExecutor) start(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	if !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
		return
	}
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	call := &askpoint.Call{
		TaskID: string(ec.TaskID), ContextID: ec.ContextID, Tenant: ec.Tenant,
		Request: ec.Message, Message: ec.Message, Key: string(ec.TaskID) + "/start",
	}
	o, err := e.agent.Start(ctx, call)
	e.outcome(ec, o, err, yield)
}

func (e *sdkExecutor) resume(ctx context.Context, ec *a2asrv.ExecutorContext, yield func(a2a.Event, error) bool) {
	if e.resumed != nil {
		e.resumed(string(ec.TaskID))
	}
	t := ec.StoredTask
	if t.Status.State != a2a.TaskStateInputRequired {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, "the task is not waiting for an answer")), nil)
		return
	}
	q, ok, err := question.FromMessage(t.Status.Message)
	if err != nil || !ok {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, "the open question cannot be read")), nil)
		return
	}
	ans, fieldErrs, err := question.Parse(ec.Message, q, question.DefaultMaxAnswerBytes)
	if err != nil {
		yield(nil, fmt.Errorf("%w: %v", a2a.ErrInvalidParams, err))
		return
	}
	if len(fieldErrs) > 0 {
		// Re-ask, as askpoint does (not exercised by the benchmark).
		nq := q.ReAsk("q-"+randomID(), fieldErrs)
		msg := nq.Message()
		msg.TaskID, msg.ContextID = ec.TaskID, ec.ContextID
		ev := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg)
		yield(ev, nil)
		return
	}
	cp, _ := t.Metadata[checkpointKey].(string)
	if !yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateWorking, nil), nil) {
		return
	}
	var request *a2a.Message
	if len(t.History) > 0 {
		request = t.History[0]
	}
	call := &askpoint.Call{
		TaskID: string(ec.TaskID), ContextID: ec.ContextID, Tenant: ec.Tenant,
		Request: request, Message: ec.Message, Key: string(ec.TaskID) + "/" + q.ID,
	}
	o, err := e.agent.Resume(ctx, call, &askpoint.Resumption{Checkpoint: json.RawMessage(cp), Question: q, Answer: ans})
	e.outcome(ec, o, err, yield)
}

// outcome turns the agent's outcome into the SDK's events.
func (e *sdkExecutor) outcome(ec *a2asrv.ExecutorContext, o askpoint.Outcome, err error, yield func(a2a.Event, error) bool) {
	if err != nil {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, "The agent failed: "+err.Error())), nil)
		return
	}
	switch o.Kind() {
	case askpoint.OutcomeAsk:
		q, err := prepareQuestion(o.Question(), time.Now())
		if err != nil {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, err.Error())), nil)
			return
		}
		cp, err := json.Marshal(o.Checkpoint())
		if err != nil {
			yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, err.Error())), nil)
			return
		}
		msg := q.Message()
		msg.TaskID, msg.ContextID = ec.TaskID, ec.ContextID
		ev := a2a.NewStatusUpdateEvent(ec, a2a.TaskStateInputRequired, msg)
		ev.Metadata = map[string]any{checkpointKey: string(cp)}
		yield(ev, nil)
	case askpoint.OutcomeComplete:
		for _, a := range o.Artifacts() {
			cp := *a
			if cp.ID == "" {
				cp.ID = a2a.NewArtifactID()
			}
			ev := &a2a.TaskArtifactUpdateEvent{TaskID: ec.TaskID, ContextID: ec.ContextID, Artifact: &cp, LastChunk: true}
			if !yield(ev, nil) {
				return
			}
		}
		var msg *a2a.Message
		if o.Text() != "" {
			msg = agentText(ec, o.Text())
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, msg), nil)
	case askpoint.OutcomeFail:
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, o.Text())), nil)
	case askpoint.OutcomeReject:
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateRejected, agentText(ec, o.Text())), nil)
	default:
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateFailed, agentText(ec, "unexpected outcome "+string(o.Kind()))), nil)
	}
}

func (e *sdkExecutor) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

func agentText(ec *a2asrv.ExecutorContext, text string) *a2a.Message {
	return a2a.NewMessageForTask(a2a.MessageRoleAgent, ec, a2a.NewTextPart(text))
}

// prepareQuestion fills in what askpoint's runtime fills in for an agent's
// question (ID, expiry, attempt cap) and checks it, as the engine does.
func prepareQuestion(in *question.Question, now time.Time) (*question.Question, error) {
	if in == nil {
		return nil, errors.New("no question")
	}
	q := *in
	if q.ID == "" {
		q.ID = "q-" + randomID()
	}
	if q.Expires.IsZero() {
		q.Expires = now.Add(24 * time.Hour)
	}
	q.Expires = q.Expires.UTC().Truncate(time.Second)
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = question.DefaultMaxAttempts
	}
	if q.Attempt <= 0 {
		q.Attempt = 1
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	return &q, nil
}

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
