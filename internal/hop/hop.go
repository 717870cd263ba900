package hop

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
)

// Hop is one sub-agent as the relay drives it, for agents that drive
// several sub-agents in their own order (the workflow package): send a
// message, carry an answer down, read the sub-task, restate its question,
// judge a notification. The state of a hop is a [Checkpoint], which the
// caller keeps in its own checkpoint.
type Hop struct {
	r *relay
}

// New returns a hop to cfg's sub-agent (Config as for [Agent]).
func New(cfg Config) (*Hop, error) {
	a, err := Agent(cfg)
	if err != nil {
		return nil, err
	}
	return &Hop{r: a.(*relay)}, nil
}

// NewCheckpoint starts a hop's state. It keeps no wake token: the hop's
// is its task's (Call.WakeToken, see [WakeToken]).
func NewCheckpoint() *Checkpoint { return &Checkpoint{} }

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
		slog.Default().Warn("relay: cannot reach the sub-agent to move it off an older checkpoint's wake token",
			slog.String("subAgent", h.r.cfg.SubAgentName), slog.Any("err", err))
		return
	}
	defer c.Destroy()
	h.r.adopt(ctx, call, c, cp)
}

// Name is how the hop names its sub-agent to people.
func (h *Hop) Name() string { return h.r.cfg.SubAgentName }

// Send sends msg (with a message ID derived from key, so that a rerun of
// the step is a redelivery) as a new sub-task, or on cp's sub-task when
// msg.TaskID is set.
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

// Answer carries ans down to cp's open sub-question.
func (h *Hop) Answer(ctx context.Context, call *askpoint.Call, cp *Checkpoint, ans *client.Answer, key string) (*a2a.Task, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	return h.r.answer(ctx, call, c, cp, ans, key)
}

// Get reads cp's sub-task as it stands.
func (h *Hop) Get(ctx context.Context, cp *Checkpoint) (*a2a.Task, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	return c.GetTask(ctx, &a2a.GetTaskRequest{ID: cp.SubTaskID})
}

// Settle records sub in cp and answers its questions from the hop's
// resolvers while they can, as the relay does (note says, in the history,
// what was answered; by, when set, who answered). It returns the sub-task
// as it then stands and, when it asks, its question; ErrUnreadableQuestion
// when it asks without the question extension.
func (h *Hop) Settle(ctx context.Context, call *askpoint.Call, cp *Checkpoint, sub *a2a.Task, by string, note func(*client.Answer) string) (*a2a.Task, *question.Question, error) {
	c, err := h.r.cfg.Dial(ctx, h.r.cfg.SubAgentURL)
	if err != nil {
		return nil, nil, fmt.Errorf("reach %s: %w", h.r.cfg.SubAgentName, err)
	}
	defer c.Destroy()
	return h.r.settleSub(ctx, call, c, cp, sub, by, note)
}

// Question is the caller-facing question for the sub-agent's q: restated,
// expiring earlier, a re-ask when q is one. Its ID is left to the caller.
func (h *Hop) Question(ctx context.Context, call *askpoint.Call, cp *Checkpoint, q *question.Question) (question.Question, error) {
	return h.r.ownQuestion(ctx, call, cp, q)
}

// Check validates an answer for cp's open sub-question, translated
// (Config.Translate); errors when the sub-agent would refuse it.
func (h *Hop) Check(ctx context.Context, call *askpoint.Call, cp *Checkpoint, fields map[string]any) (map[string]any, []question.FieldError) {
	var err error
	if h.r.cfg.Translate != nil {
		given := fields
		if fields, err = h.r.cfg.Translate(ctx, call, cp.SubQuestion, cloneFields(fields)); err != nil {
			return nil, []question.FieldError{{Message: err.Error()}}
		}
		cp.Names = fieldNames(given, fields)
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, []question.FieldError{{Message: err.Error()}}
	}
	return fields, cp.SubQuestion.Validate(raw)
}

// Wakes reports whether a push notification about cp's sub-task says
// something new (see askpoint.Waker).
func (h *Hop) Wakes(cp *Checkpoint, event json.RawMessage) bool { return wakes(cp, event) }

// Ended says, in the relay's words, how a finished sub-task ended badly.
func (h *Hop) Ended(sub *a2a.Task) string { return h.r.endedText(sub) }

// Release cancels the sub-task a hold names (see askpoint.Releaser): hold a
// sub-task with [Hop.Hold] while the caller is asked, and call Release from
// the agent's own release.
func (h *Hop) Release(ctx context.Context, call *askpoint.Call, hs askpoint.HoldStatus) error {
	return h.r.Release(ctx, call, hs)
}

// CancelSubTask cancels cp's sub-task (best effort: one that has ended is
// fine), for a caller that ends without the sub-task.
func (h *Hop) CancelSubTask(ctx context.Context, cp *Checkpoint) error {
	return h.r.cancelSub(ctx, cp.SubTaskID)
}

// Hold is the hold of cp's sub-task: released (the sub-task canceled) when
// the caller's task ends without an answer.
func (h *Hop) Hold(cp *Checkpoint) askpoint.Hold {
	return h.r.subTaskHold(cp)
}
