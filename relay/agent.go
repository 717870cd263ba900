package relay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// relay is the relay agent [Agent] returns, and what every [Hop] runs on:
// its methods are the machinery that drives one sub-agent.
type relay struct {
	cfg Config
}

// maxResolved bounds the sub-agent's questions the relay answers itself in
// one step, so that a sub-agent that keeps asking reaches the caller.
const maxResolved = 8

// Start sends the request on to the sub-agent.
func (r *relay) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	msg, err := r.forward(ctx, call)
	if err != nil {
		return askpoint.Outcome{}, err
	}
	c, err := r.cfg.Dial(ctx, r.cfg.SubAgentURL)
	if err != nil {
		return r.unreachable("reach", err), nil
	}
	defer c.Destroy()
	cp := &Checkpoint{}
	sub, err := r.send(ctx, call, c, cp, msg)
	if err != nil {
		return r.unreachable("send the request to", err), nil
	}
	return r.handle(ctx, call, c, cp, sub)
}

// unreachable fails the relay's task in words that name the sub-agent
// only; the error itself (URLs, addresses) goes to the log.
func (r *relay) unreachable(what string, err error) askpoint.Outcome {
	r.cfg.Logger.Warn("relay: cannot "+what+" the sub-agent", slog.String("subAgent", r.cfg.SubAgentName), slog.Any("err", err))
	return askpoint.Fail(fmt.Sprintf("I could not reach %s, so the task could not be done.", r.cfg.SubAgentName))
}

// Resume carries the caller's answer down, or acts on the sub-agent's
// notification.
func (r *relay) Resume(ctx context.Context, call *askpoint.Call, res *askpoint.Resumption) (askpoint.Outcome, error) {
	var cp Checkpoint
	if err := json.Unmarshal(res.Checkpoint, &cp); err != nil {
		return askpoint.Outcome{}, fmt.Errorf("relay: read checkpoint: %w", err)
	}
	out, err := r.resume(ctx, call, res, &cp)
	if err != nil {
		r.cfg.Logger.Warn("relay: step failed", slog.String("subAgent", r.cfg.SubAgentName), slog.Any("err", err))
		out, err = askpoint.Fail(fmt.Sprintf("I lost touch with %s, so the task could not be done.", r.cfg.SubAgentName)), nil
	}
	if (out.Kind() == askpoint.OutcomeFail || out.Kind() == askpoint.OutcomeReject) && cp.SubTaskID != "" {
		// The sub-task was handed back with the resume: the relay ends,
		// so it cancels what it held (best effort; it may have ended),
		// and no task below is left paused.
		_ = r.cancelSub(context.WithoutCancel(ctx), cp.SubTaskID)
	}
	return out, err
}

func (r *relay) resume(ctx context.Context, call *askpoint.Call, res *askpoint.Resumption, cpp *Checkpoint) (askpoint.Outcome, error) {
	cp := *cpp
	defer func() { *cpp = cp }()
	c, err := r.cfg.Dial(ctx, r.cfg.SubAgentURL)
	if err != nil {
		return askpoint.Outcome{}, fmt.Errorf("reach %s: %w", r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	r.adopt(ctx, call, c, &cp)
	if res.Event != nil || res.Answer == nil || cp.SubQuestion == nil {
		// A notification (or a resume with nothing to carry): the
		// sub-task as it stands decides.
		sub, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: cp.SubTaskID})
		if err != nil {
			return askpoint.Outcome{}, fmt.Errorf("read the sub-task: %w", err)
		}
		return r.handle(ctx, call, c, &cp, sub)
	}
	ans := &client.Answer{By: "caller"}
	switch res.Answer.Action {
	case question.ActionDecline, question.ActionCancel:
		ans.Action, ans.Reason = res.Answer.Action, res.Answer.Reason
	default:
		fields := map[string]any{}
		if err := json.Unmarshal(res.Answer.Fields, &fields); err != nil {
			return askpoint.Outcome{}, fmt.Errorf("relay: read the answer: %w", err)
		}
		if fields, err = r.translate(ctx, call, &cp, fields); err != nil {
			return r.reAsk(ctx, call, &cp, []question.FieldError{{Message: err.Error()}})
		}
		raw, err := json.Marshal(fields)
		if err != nil {
			return askpoint.Outcome{}, err
		}
		if errs := cp.SubQuestion.Validate(raw); len(errs) > 0 {
			// The second validation: what the sub-agent would refuse is
			// re-asked here, without a round trip down.
			return r.reAsk(ctx, call, &cp, errs)
		}
		ans.Fields = fields
	}
	cp.Resolved = 0 // the caller has spoken: the relay may answer again
	sub, err := r.answer(ctx, call, c, &cp, ans, call.Key)
	if errors.Is(err, a2a.ErrInvalidParams) || errors.Is(err, a2a.ErrUnsupportedOperation) {
		// The sub-task moved on before the answer reached it (its
		// question changed, or it ended): it decides as it stands.
		sub, err = c.GetTask(ctx, &a2a.GetTaskRequest{ID: cp.SubTaskID})
	}
	if err != nil {
		return askpoint.Outcome{}, err
	}
	return r.handle(ctx, call, c, &cp, sub)
}

// Wakes implements askpoint.Waker: a notification that says nothing new
// (a reminder, the question the relay already relays, progress while the
// sub-agent works) does not resume the task.
func (r *relay) Wakes(checkpoint json.RawMessage, event json.RawMessage) bool {
	var cp Checkpoint
	if json.Unmarshal(checkpoint, &cp) != nil {
		return true
	}
	return wakes(&cp, event)
}

// wakes reports whether a notification about cp's sub-task says something
// the relay does not know yet.
func wakes(cp *Checkpoint, event json.RawMessage) bool {
	var sr a2a.StreamResponse
	if json.Unmarshal(event, &sr) != nil {
		return false // not a notification
	}
	var status *a2a.TaskStatus
	switch ev := sr.Event.(type) {
	case *a2a.TaskStatusUpdateEvent:
		if ev.TaskID != cp.SubTaskID {
			return false
		}
		if _, ok := ev.Metadata[askpoint.ReminderKey]; ok {
			return false
		}
		status = &ev.Status
	case *a2a.Task:
		if ev.ID != cp.SubTaskID {
			return false
		}
		status = &ev.Status
	default:
		return false // artifacts arrive with the task at its end
	}
	if cp.SubSeenAt != nil && status.Timestamp != nil && status.Timestamp.Before(*cp.SubSeenAt) {
		return false // late: the relay has seen a newer status already
	}
	// A status as old as the newest seen may still be news (two statuses
	// within one tick of the sub-agent's clock): the state decides.
	switch status.State {
	case a2a.TaskStateWorking, a2a.TaskStateSubmitted:
		return cp.SubQuestion != nil // our question is moot: someone answered it
	case a2a.TaskStateInputRequired:
		q, ok, _ := question.FromMessage(status.Message)
		return cp.SubQuestion == nil || !ok || q.ID != cp.SubQuestion.ID
	}
	return true
}

// handle decides what the sub-task's state means for the relay's task.
func (r *relay) handle(ctx context.Context, call *askpoint.Call, c *a2aclient.Client, cp *Checkpoint, sub *a2a.Task) (askpoint.Outcome, error) {
	name := r.cfg.SubAgentName
	sub, q, err := r.settleSub(ctx, call, c, cp, sub, "", func(ans *client.Answer) string {
		return fmt.Sprintf("I answered %s's question myself (%s): %s", name, ans.By, summary(ans.Fields))
	})
	if errors.Is(err, ErrUnreadableQuestion) {
		return askpoint.Fail(capitalize(name) + " asked something I cannot relay (its question has no machine-readable part)."), nil
	}
	if err != nil {
		return askpoint.Outcome{}, err
	}
	switch sub.Status.State {
	case a2a.TaskStateCompleted:
		return askpoint.Complete(sub.Artifacts...).WithMessage(capitalize(name) + " finished the task."), nil
	case a2a.TaskStateRejected:
		// A decline below (or a refusal) is a refusal here: the same
		// meaning at every level of a chain.
		return askpoint.Reject(r.endedText(sub)), nil
	case a2a.TaskStateFailed, a2a.TaskStateCanceled:
		return askpoint.Fail(r.endedText(sub)), nil
	case a2a.TaskStateAuthRequired:
		return askpoint.Fail(capitalize(name) + " needs a credential that I cannot give it."), nil
	case a2a.TaskStateInputRequired:
		return r.askUp(ctx, call, cp, q)
	default: // submitted, working
		return askpoint.Await(fmt.Sprintf("Waiting for %s to finish.", name), cp, WakeToken(call, cp), r.cfg.Now().Add(r.cfg.MaxWait)).
			Hold(r.subTaskHold(cp)), nil
	}
}

// settleSub records sub in cp and, while sub asks a question the relay's
// resolvers can answer, answers it (recording note in the history; by, when
// set, says who answered) and reads on. It returns the sub-task as it then
// stands and, when it asks, its question. A question already seen (relayed
// before) is not resolved again, nor a re-ask of what was sent, nor more
// than maxResolved since the caller last answered.
func (r *relay) settleSub(ctx context.Context, call *askpoint.Call, c *a2aclient.Client, cp *Checkpoint, sub *a2a.Task,
	by string, note func(*client.Answer) string) (*a2a.Task, *question.Question, error) {
	for {
		cp.SubTaskID, cp.SubContextID = sub.ID, sub.ContextID
		if ts := sub.Status.Timestamp; ts != nil {
			cp.SubSeenAt = ts
		}
		if sub.Status.State != a2a.TaskStateInputRequired {
			cp.SubQuestion = nil // it asks nothing now
			return sub, nil, nil
		}
		q, ok, err := question.FromMessage(sub.Status.Message)
		if err != nil || !ok {
			return sub, nil, ErrUnreadableQuestion
		}
		seen := cp.SubQuestion != nil && cp.SubQuestion.ID == q.ID
		if !seen {
			cp.OwnQuestionID, cp.Refused = "", 0 // a new question below: a new one here
		}
		cp.SubQuestion = q
		if seen || cp.Resolved >= maxResolved || len(q.Errors) > 0 {
			return sub, q, nil
		}
		ans := r.resolve(ctx, call, sub, q)
		if ans == nil {
			return sub, q, nil
		}
		cp.Resolved++
		if by != "" {
			ans.By = by
		}
		if err := call.Progress(ctx, note(ans)); err != nil {
			return nil, nil, err
		}
		if sub, err = r.answer(ctx, call, c, cp, ans, fmt.Sprintf("%s/auto/%s", call.Key, q.ID)); err != nil {
			return nil, nil, err
		}
	}
}

// endedText says, in the relay's words, how the sub-task ended.
func (r *relay) endedText(sub *a2a.Task) string {
	name := capitalize(r.cfg.SubAgentName)
	why := ""
	if sub.Status.Message != nil {
		why = text.Parts(sub.Status.Message.Parts, " ")
	}
	switch {
	case strings.Contains(why, "No answer in time"):
		return name + "'s question expired before it was answered, so the task could not be done."
	case sub.Status.State == a2a.TaskStateCanceled:
		return name + " canceled the task." + reason(why)
	case sub.Status.State == a2a.TaskStateRejected:
		return name + " refused the task." + reason(why)
	}
	return name + " could not do the task." + reason(why)
}

func reason(why string) string {
	if why == "" {
		return ""
	}
	return " It said: " + why
}

// askUp pauses the relay's task with its own question for the sub-agent's q.
func (r *relay) askUp(ctx context.Context, call *askpoint.Call, cp *Checkpoint, q *question.Question) (askpoint.Outcome, error) {
	if !q.Expires.IsZero() && !r.cfg.Now().Before(q.Expires) {
		return askpoint.Fail(capitalize(r.cfg.SubAgentName) + "'s question expired before it could be asked, so the task could not be done."), nil
	}
	own, err := r.ownQuestion(ctx, call, cp, q)
	if err != nil {
		return askpoint.Outcome{}, err
	}
	if cp.OwnQuestionID == "" {
		cp.OwnQuestionID = "q-" + text.RandomHex(24)[:16]
	}
	own.ID = cp.OwnQuestionID
	// The sub-task is what the relay holds while its caller thinks: if the
	// relay's task ends unanswered (the caller cancels, the question
	// expires), the sub-task is canceled instead of waiting for its own
	// expiry.
	return askpoint.Ask(own, cp).WakeOn(WakeToken(call, cp)).Hold(r.subTaskHold(cp)), nil
}

// pushConfig is the push configuration the relay gives the sub-agent: its
// wake endpoint for the relay's task, with token.
func (r *relay) pushConfig(call *askpoint.Call, token string) *a2a.PushConfig {
	return &a2a.PushConfig{ID: "relay", URL: r.cfg.CallbackURL + "/wake/" + call.TaskID, Token: token}
}

// adopt moves a checkpoint of an older version, which kept its wake token
// in clear, onto the task's derived one: the sub-agent's push
// configuration is replaced by one with the derived token, and the
// checkpoint forgets the old. A sub-task without the relay's configuration
// (NoPush) holds no token to replace. When the sub-agent refuses, the old
// token stays for this step (it still wakes the task) and the next step
// tries again.
func (r *relay) adopt(ctx context.Context, call *askpoint.Call, c *a2aclient.Client, cp *Checkpoint) {
	if cp.Token == "" || cp.Token == call.WakeToken() {
		cp.Token = ""
		return
	}
	if cp.NoPush || cp.SubTaskID == "" {
		cp.Token = ""
		return
	}
	push := r.pushConfig(call, call.WakeToken())
	push.TaskID = cp.SubTaskID
	if _, err := c.CreateTaskPushConfig(ctx, push); err != nil {
		r.cfg.Logger.Warn("relay: the sub-agent kept the wake token of an older checkpoint; it stays in the checkpoint for now",
			slog.String("subAgent", r.cfg.SubAgentName), slog.Any("err", err))
		return
	}
	cp.Token = ""
}

func (r *relay) subTaskHold(cp *Checkpoint) askpoint.Hold {
	return askpoint.Hold{Name: "sub-task", Data: map[string]string{"subTaskId": string(cp.SubTaskID), "agent": r.cfg.SubAgentName}}
}

// Release implements askpoint.Releaser: it cancels the sub-task the relay
// held when its own task ended without an answer (or its question's
// deadline passed). A sub-task that has ended already is fine.
func (r *relay) Release(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
	var data struct {
		SubTaskID string `json:"subTaskId"`
	}
	if err := json.Unmarshal(h.Data, &data); err != nil || data.SubTaskID == "" {
		return nil // nothing the relay can name
	}
	return r.cancelSub(ctx, a2a.TaskID(data.SubTaskID))
}

// cancelSub cancels a sub-task; one that has ended already, or is gone, is
// fine.
func (r *relay) cancelSub(ctx context.Context, id a2a.TaskID) error {
	c, err := r.cfg.Dial(ctx, r.cfg.SubAgentURL)
	if err != nil {
		return fmt.Errorf("reach %s: %w", r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
	if err != nil && (errors.Is(err, a2a.ErrTaskNotCancelable) || errors.Is(err, a2a.ErrUnsupportedOperation) || errors.Is(err, a2a.ErrTaskNotFound)) {
		return nil // ended already, or gone
	}
	return err
}

// ownQuestion is the relay's own question for the sub-agent's q: restated,
// expiring Margin earlier, a re-ask when q is one.
func (r *relay) ownQuestion(ctx context.Context, call *askpoint.Call, cp *Checkpoint, q *question.Question) (question.Question, error) {
	own := question.Question{Text: q.Text, Schema: q.Schema, Options: q.Options, OptionsFor: q.OptionsFor}
	if r.cfg.Restate != nil {
		var err error
		if own, err = r.cfg.Restate(ctx, call, q); err != nil {
			return question.Question{}, fmt.Errorf("relay: restate the question: %w", err)
		}
	}
	if own.Subject == nil {
		own.Subject = q.Subject // what it is about does not change on the way up
	}
	own.ID = ""
	own.Expires = r.ownExpiry(q.Expires)
	if len(q.Errors) > 0 {
		// A re-ask below is a re-ask here: the errors as Restate put
		// them, else as the sub-agent did.
		own.Attempt, own.MaxAttempts = max(q.Attempt, 2), q.MaxAttempts
		if len(own.Errors) == 0 {
			own.Errors = r.ownErrors(ctx, call, cp, q, &own)
		}
	}
	return own, nil
}

// reAsk asks the caller again after the translated answer failed the
// sub-agent's schema.
func (r *relay) reAsk(ctx context.Context, call *askpoint.Call, cp *Checkpoint, errs []question.FieldError) (askpoint.Outcome, error) {
	q, ok := refuse(cp, errs)
	if !ok {
		return askpoint.Fail(fmt.Sprintf("No valid answer after %d attempts. Last errors: %s", q.Attempt-1, question.ErrorsText(errs))), nil
	}
	return r.askUp(ctx, call, cp, &q)
}

// refuse counts a refused answer to cp's sub-question and returns the
// sub-question to ask again, with errs and the next attempt; false when
// the attempts have run out.
func refuse(cp *Checkpoint, errs []question.FieldError) (question.Question, bool) {
	q := *cp.SubQuestion
	cp.Refused++
	q.Errors = errs
	q.Attempt = max(q.Attempt, 1) + cp.Refused
	if q.MaxAttempts <= 0 {
		q.MaxAttempts = question.DefaultMaxAttempts
	}
	cp.OwnQuestionID = "" // a re-ask is a new question
	return q, q.Attempt <= q.MaxAttempts
}

// ownExpiry is the relay's question's expiry for a sub-question that
// expires at sub.
func (r *relay) ownExpiry(sub time.Time) time.Time {
	if sub.IsZero() {
		return time.Time{}
	}
	now := r.cfg.Now()
	left := sub.Sub(now)
	if left > 2*r.cfg.Margin {
		return sub.Add(-r.cfg.Margin)
	}
	return now.Add(left / 2)
}

// resolve asks the relay's resolvers, in order; nil when none answers
// with an answer the sub-agent's schema takes.
func (r *relay) resolve(ctx context.Context, call *askpoint.Call, sub *a2a.Task, q *question.Question) *client.Answer {
	query := &client.Query{
		Caller: call.Caller(), TaskID: sub.ID, ContextID: sub.ContextID,
		Request: call.Request, Status: sub.Status.Message, Question: q, Text: q.Text, Round: 1, MaxRounds: 1,
	}
	for _, res := range r.cfg.Resolvers {
		ans, err := res.Resolve(ctx, query)
		if err != nil || ans == nil || ans.Action != "" || ans.Fields == nil {
			continue
		}
		raw, err := json.Marshal(ans.Fields)
		if err != nil || len(q.Validate(raw)) > 0 {
			continue
		}
		if ans.By == "" {
			ans.By = client.ByContext
		}
		return ans
	}
	return nil
}

// answer sends ans to the sub-agent's open question. key makes the message
// ID the same on every run of the step, so a rerun is a redelivery the
// sub-agent deduplicates.
func (r *relay) answer(ctx context.Context, call *askpoint.Call, c *a2aclient.Client, cp *Checkpoint, ans *client.Answer, key string) (*a2a.Task, error) {
	q := cp.SubQuestion
	if q == nil {
		return nil, errors.New("relay: no open sub-question to answer")
	}
	obj := map[string]any{"questionId": q.ID}
	if ans.Action != "" {
		obj["action"] = ans.Action
		if ans.Reason != "" {
			obj["reason"] = ans.Reason
		}
	} else {
		for k, v := range ans.Fields {
			obj[k] = v
		}
	}
	p := a2a.NewDataPart(obj)
	p.MediaType = question.MediaTypeJSON
	msg := &a2a.Message{
		ID: messageID(key), Role: a2a.MessageRoleUser, TaskID: cp.SubTaskID,
		Parts: a2a.ContentParts{p}, Extensions: []string{question.ExtensionURI},
		Metadata: map[string]any{client.MetaAnsweredBy: ans.By},
	}
	sub, err := r.send(ctx, call, c, cp, msg)
	if err != nil {
		return nil, fmt.Errorf("send the answer to %s: %w", r.cfg.SubAgentName, err)
	}
	cp.SubQuestion = nil
	return sub, nil
}

// send sends msg to the sub-agent with the relay's push configuration and
// returns at once (returnImmediately), then reads the sub-task until it
// pauses or finishes, for at most SettleWithin: a sub-agent still busy
// after that is left to notify. The message is sent once: a sub-agent
// without deduplication must not get it twice. A first message carries a
// context ID derived from its ID, so that a rerun of the step finds the
// sub-task it started (ListTasks) instead of starting another.
func (r *relay) send(ctx context.Context, call *askpoint.Call, c *a2aclient.Client, cp *Checkpoint, msg *a2a.Message) (*a2a.Task, error) {
	if msg.TaskID == "" {
		// The sub-task runs as the relay's principal: name the caller it
		// is for, which the sub-agent's server trusts from the relay's
		// principal only (askpoint.Config.OnBehalfOfPrincipals).
		if caller := call.Caller(); caller != "" {
			if msg.Metadata == nil {
				msg.Metadata = map[string]any{}
			}
			msg.Metadata[askpoint.OnBehalfOfKey] = caller
		}
		msg.ContextID = "relay-ctx-" + strings.TrimPrefix(msg.ID, "relay-")
		if got, err := c.ListTasks(ctx, &a2a.ListTasksRequest{ContextID: msg.ContextID, PageSize: 1}); err == nil && len(got.Tasks) > 0 {
			return r.settle(ctx, c, got.Tasks[0], true)
		}
	}
	pushed := !cp.NoPush
	var (
		res a2a.SendMessageResult
		err error
	)
	if pushed {
		push := r.pushConfig(call, WakeToken(call, cp))
		res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{PushConfig: push, ReturnImmediately: true}})
	}
	if !pushed || refusesPush(err) {
		// A sub-agent without push notifications, or one that refuses the
		// relay's webhook (its address, its scheme), cannot wake the
		// relay: the step reads the sub-task until it pauses or finishes
		// (the one case where a goroutine waits on a sub-agent). A refused
		// request changed nothing there, so sending it again is safe.
		if pushed {
			r.cfg.Logger.Info("relay: the sub-agent takes no push notifications to the relay; reading its task instead",
				slog.String("subAgent", r.cfg.SubAgentName), slog.Any("err", err))
		}
		pushed = false
		res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		if err == nil {
			cp.NoPush = true // later sends to this sub-task skip the webhook
		}
	}
	if err != nil {
		return nil, err
	}
	sub, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("%s answered with a message instead of a task", r.cfg.SubAgentName)
	}
	return r.settle(ctx, c, sub, pushed)
}

// refusesPush reports whether a send was refused because of its push
// configuration: push is not supported, or the request (valid but for its
// webhook) is refused as invalid or unsupported. A message the sub-agent
// refuses for itself is refused again without the configuration, and that
// error is the one reported.
func refusesPush(err error) bool {
	return errors.Is(err, a2a.ErrPushNotificationNotSupported) || errors.Is(err, a2a.ErrInvalidParams) ||
		errors.Is(err, a2a.ErrUnsupportedOperation) || errors.Is(err, a2a.ErrInvalidRequest)
}

// settle reads sub until it pauses or finishes: for at most SettleWithin
// when the sub-agent will notify, for as long as it takes otherwise.
func (r *relay) settle(ctx context.Context, c *a2aclient.Client, sub *a2a.Task, notifies bool) (*a2a.Task, error) {
	deadline := time.Now().Add(r.cfg.SettleWithin)
	wait := 5 * time.Millisecond
	for !settled(sub.Status.State) {
		if notifies && time.Now().After(deadline) {
			return sub, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 200*time.Millisecond)
		next, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: sub.ID})
		if err != nil {
			return nil, err
		}
		sub = next
	}
	return sub, nil
}

// settled reports whether a sub-task in state s has paused or finished.
func settled(s a2a.TaskState) bool {
	return s.Terminal() || s == a2a.TaskStateInputRequired || s == a2a.TaskStateAuthRequired
}

func (r *relay) forward(ctx context.Context, call *askpoint.Call) (*a2a.Message, error) {
	var msg *a2a.Message
	if r.cfg.Forward != nil {
		m, err := r.cfg.Forward(ctx, call)
		if err != nil {
			return nil, err
		}
		msg = m
	} else {
		msg = &a2a.Message{Parts: call.Request.Parts}
	}
	out := *msg
	out.ID = messageID(call.Key)
	out.Role = a2a.MessageRoleUser
	out.TaskID, out.ContextID = "", ""
	return &out, nil
}

// messageID is a message ID derived from a step's key: the same on every
// run of the step.
func messageID(key string) string {
	sum := sha256.Sum256([]byte("askpoint-relay\x00" + key))
	return "relay-" + hex.EncodeToString(sum[:12])
}

func summary(fields map[string]any) string {
	raw, _ := json.Marshal(fields)
	return string(raw)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
