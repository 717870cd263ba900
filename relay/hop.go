package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
)

// Hop drives one sub-agent for an agent that drives several in an order of
// its own (the workflow package drives one per participant): it sends a
// message, reads the sub-task until it settles, answers the sub-agent's
// questions from Config.Resolvers while they can, restates a question for
// the agent's own caller, checks and carries the caller's answer down,
// judges the sub-agent's push notifications, and cancels the sub-task when
// the agent's task ends without it. The relay agent ([Agent]) is one hop.
//
// A Hop holds no state of its own: the state of a hop is a [Checkpoint],
// which the agent keeps in its own task's checkpoint and passes to every
// call. A Hop is safe for concurrent use by several tasks.
type Hop struct {
	r *relay
}

// NewHop returns a hop to cfg's sub-agent. cfg is as for [Agent]; Forward
// is not used (the agent gives [Hop.Send] its message).
func NewHop(cfg Config) (*Hop, error) {
	r, err := newRelay(cfg)
	if err != nil {
		return nil, err
	}
	return &Hop{r: r}, nil
}

// Checkpoint is the state of one hop, saved in the checkpoint of the task
// that drives it: the sub-task, and the sub-agent's question that the
// task's own question stands for while its caller thinks. A relay's task
// checkpoint is one Checkpoint; a workflow's state keeps one for the
// participant whose turn is under way. A hop starts from the zero value.
//
// The fields tell where a hop stands (which sub-task, what it asks); the
// Hop's methods keep them, and an agent reads them but leaves them as they
// are (Token aside, see there). They are stored as JSON under the names of
// their tags, and those names do not change: a checkpoint an older version
// saved resumes on a newer one.
type Checkpoint struct {
	// SubTaskID is the sub-task's ID at the sub-agent; empty until the
	// sub-agent has taken the first message.
	SubTaskID a2a.TaskID `json:"subTaskId"`
	// SubContextID is the sub-task's context ID.
	SubContextID string `json:"subContextId,omitempty"`
	// SubQuestion is the sub-agent's open question, as the sub-agent
	// asked it; nil while the sub-task works, or after an answer was sent.
	SubQuestion *question.Question `json:"subQuestion,omitempty"`
	// Token is the wake token a checkpoint of an older version kept in
	// clear. It is empty in every checkpoint written now: a hop's wake
	// token, which is also the token of the sub-agent's push configuration,
	// is its task's own (see [WakeToken]). An older token is honoured until
	// [Hop.Adopt] has moved the sub-agent onto the task's; an agent that
	// kept an older token for all its hops sets it on each new one.
	Token string `json:"token,omitempty"`
	// OwnQuestionID is the ID of the relay agent's own open question, kept
	// when a notification wakes the relay to the same sub-question. Only
	// the relay agent sets it: an agent driving a Hop names its questions
	// itself.
	OwnQuestionID string `json:"ownQuestionId,omitempty"`
	// SubSeenAt is the timestamp of the newest status of the sub-task the
	// hop acted on: a notification of an older status is stale.
	SubSeenAt *time.Time `json:"subSeenAt,omitempty"`
	// Refused counts the caller's answers to SubQuestion that were refused
	// before they reached the sub-agent (translated, they failed its
	// schema); the question asked again counts them in its Attempt.
	Refused int `json:"refused,omitempty"`
	// Resolved counts the sub-agent's questions the hop answered from
	// Config.Resolvers since the caller last answered, across steps; a hop
	// answers at most eight in a row before its caller is asked.
	Resolved int `json:"resolved,omitempty"`
	// Names and Mapped trace the caller's last answer as Config.Translate
	// sent it down, so that the sub-agent's errors about it are re-asked in
	// the caller's terms. Names maps each field sent that carries a
	// caller's field's value as it is to that caller's field (the same
	// name, or the one it was renamed from); Mapped maps each field whose
	// value Translate changed to the caller's field it came from, or to ""
	// when the hop cannot tell. Both are empty when nothing was
	// translated (no Translate, or it failed).
	Names  map[string]string `json:"names,omitempty"`
	Mapped map[string]string `json:"mapped,omitempty"`
	// NoPush says the sub-agent took a message only without the hop's push
	// configuration: the hop reads the sub-task instead of waiting for a
	// notification.
	NoPush bool `json:"noPush,omitempty"`
}

// WakeToken is the wake token of cp's task: the task's own
// (askpoint.Call.WakeToken), or the one an older checkpoint kept until
// [Hop.Adopt] has moved the sub-agent off it. Pass it to askpoint.Await and
// Outcome.WakeOn when the task waits on the sub-agent.
func WakeToken(call *askpoint.Call, cp *Checkpoint) string {
	if cp.Token != "" {
		return cp.Token
	}
	return call.WakeToken()
}

// Adopt moves a checkpoint of an older version, which kept its wake token
// in clear, onto the task's own: the sub-agent's push configuration gets
// the task's token and cp forgets the old one. When the sub-agent cannot be
// reached or refuses, the old token stays in cp for this step (it still
// wakes the task). Call it when a step resumes, before cp's token is used.
func (h *Hop) Adopt(ctx context.Context, call *askpoint.Call, cp *Checkpoint) {
	if cp.Token == "" || cp.NoPush || cp.SubTaskID == "" {
		cp.Token = "" // nobody else holds it
		return
	}
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		h.r.cfg.Logger.Warn("relay: cannot reach the sub-agent to move it off an older checkpoint's wake token",
			slog.String("subAgent", h.r.cfg.SubAgentName), slog.Any("err", err))
		return
	}
	defer c.Destroy()
	h.r.adopt(ctx, call, c, cp)
}

// Name is how the hop names its sub-agent to people (Config.SubAgentName).
func (h *Hop) Name() string { return h.r.cfg.SubAgentName }

// Send sends msg to the sub-agent with the hop's push configuration: as a
// new sub-task, or on cp's sub-task when msg.TaskID is set. The message ID
// is derived from key, so that a rerun of the step (the same key) is a
// redelivery the sub-agent deduplicates, and a rerun of a first message
// finds the sub-task it started. Send waits at most Config.SettleWithin for
// the sub-task to pause or finish and returns it as it then stands, for
// [Hop.Settle]; cp records the sub-task.
func (h *Hop) Send(ctx context.Context, call *askpoint.Call, cp *Checkpoint, msg *a2a.Message, key string) (*a2a.Task, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	out := *msg
	out.ID, out.Role = messageID(key), a2a.MessageRoleUser
	sub, err := h.r.send(ctx, call, c, cp, &out)
	if err == nil {
		cp.SubTaskID, cp.SubContextID = sub.ID, sub.ContextID
	}
	return sub, err
}

// Answer carries the caller's answer down to cp's open sub-question (ans
// as [Hop.Check] returned its fields, or a decline), with a message ID
// derived from key as for [Hop.Send], and returns the sub-task as it then
// stands. The caller having spoken, the hop may answer the sub-agent's
// next questions from its resolvers again. An error that is
// a2a.ErrInvalidParams or a2a.ErrUnsupportedOperation says the sub-task
// moved on before the answer reached it: read it with [Hop.Get].
func (h *Hop) Answer(ctx context.Context, call *askpoint.Call, cp *Checkpoint, ans *client.Answer, key string) (*a2a.Task, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	cp.Resolved = 0
	return h.r.answer(ctx, call, c, cp, ans, key)
}

// Get reads cp's sub-task as it stands, for a step woken by a notification.
func (h *Hop) Get(ctx context.Context, cp *Checkpoint) (*a2a.Task, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	return c.GetTask(ctx, &a2a.GetTaskRequest{ID: cp.SubTaskID})
}

// Settle records sub in cp and, while sub asks a question one of
// Config.Resolvers answers, answers it and reads on, as the relay does: a
// question already relayed to the caller, a re-ask, or a ninth in a row is
// left for the caller. Each answer is told in the agent's task history as
// note says it, and recorded as given by by (when not empty; else as the
// resolver said). Settle returns the sub-task as it then stands and, when
// it asks, its question; [ErrUnreadableQuestion] when it asks without the
// question extension's machine-readable part.
func (h *Hop) Settle(ctx context.Context, call *askpoint.Call, cp *Checkpoint, sub *a2a.Task, by string, note func(*client.Answer) string) (*a2a.Task, *question.Question, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	return h.r.settleSub(ctx, call, c, cp, sub, by, note)
}

// Question is the question to ask the caller for the sub-agent's q, as a
// relay asks it: restated (Config.Restate), expiring a Config.Margin
// earlier, and a re-ask, in the caller's terms, when q is one. Its ID is
// left empty for the agent to set.
func (h *Hop) Question(ctx context.Context, call *askpoint.Call, cp *Checkpoint, q *question.Question) (question.Question, error) {
	return h.r.ownQuestion(ctx, call, cp, q)
}

// Check translates the caller's answer fields for cp's open sub-question
// (Config.Translate) and validates them against its schema. It returns
// the fields to send down with [Hop.Answer], or the reasons the sub-agent
// would refuse them, for [Hop.Refuse].
func (h *Hop) Check(ctx context.Context, call *askpoint.Call, cp *Checkpoint, fields map[string]any) (map[string]any, []question.FieldError) {
	fields, err := h.r.translate(ctx, call, cp, fields)
	if err != nil {
		return nil, []question.FieldError{{Message: err.Error()}}
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, []question.FieldError{{Message: err.Error()}}
	}
	return fields, cp.SubQuestion.Validate(raw)
}

// Refuse counts a refused answer to cp's open sub-question (errs, from
// [Hop.Check]) and returns the sub-question to ask the caller again, for
// [Hop.Question]: with errs and the caller's next attempt. ok is false
// when the attempts have run out (the question's MaxAttempts, else
// question.DefaultMaxAttempts): q.Attempt-1 answers were refused, and the
// agent's task should fail.
func (h *Hop) Refuse(cp *Checkpoint, errs []question.FieldError) (q question.Question, ok bool) {
	return refuse(cp, errs)
}

// Wakes reports whether a push notification (event, as the sub-agent's
// server posted it) says something about cp's sub-task that the hop does
// not know yet: the agent's askpoint.Waker.
func (h *Hop) Wakes(cp *Checkpoint, event json.RawMessage) bool { return wakes(cp, event) }

// Ended says, in the relay's words, how a sub-task that did not complete
// ended (failed, canceled, refused, or its question expired), for the
// agent's own failure or refusal.
func (h *Hop) Ended(sub *a2a.Task) string { return h.r.endedText(sub) }

// Hold is the hold of cp's sub-task, for the agent's outcome while it asks
// its caller or waits on the sub-agent: if the agent's task ends without
// an answer, the engine releases the hold ([Hop.Release]) and the sub-task
// is canceled instead of waiting for its own expiry.
func (h *Hop) Hold(cp *Checkpoint) askpoint.Hold {
	return h.r.subTaskHold(cp)
}

// Release cancels the sub-task a hold of [Hop.Hold] names; one that has
// ended already is fine. Call it from the agent's askpoint.Releaser.
func (h *Hop) Release(ctx context.Context, call *askpoint.Call, hs askpoint.HoldStatus) error {
	return h.r.Release(ctx, call, hs)
}

// CancelSubTask cancels cp's sub-task, for an agent whose task ends
// without it; one that has ended already is fine.
func (h *Hop) CancelSubTask(ctx context.Context, cp *Checkpoint) error {
	return h.r.cancelSub(ctx, cp.SubTaskID)
}
