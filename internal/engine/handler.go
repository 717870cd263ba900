package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/auth"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/internal/questionwire"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// handler implements a2asrv.RequestHandler for one agent.
type Handler struct {
	s    *Engine
	name string
}

var _ a2asrv.RequestHandler = (*Handler)(nil)

// admit names the caller of a request that reaches the handler with none
// named (a transport mounted by hand, not askpoint's fronts, which name it
// first): from the Authorization of its a2asrv call context when the
// server takes tokens, so that such a transport refuses a tokenless call as
// the fronts do. A context that names its caller (auth.WithPrincipal, the
// fronts' or Go code's) is taken as it is; without tokens every caller is
// anonymous.
func (h *Handler) admit(ctx context.Context) (context.Context, error) {
	if !h.s.tokens.Required() || auth.Named(ctx) {
		return ctx, nil
	}
	var authorization string
	if cc, ok := a2asrv.CallContextFrom(ctx); ok {
		if v, ok := cc.ServiceParams().Get("authorization"); ok && len(v) > 0 {
			authorization = v[0]
		}
	}
	principal, err := h.s.tokens.Authenticate(authorization)
	if err != nil {
		return nil, err
	}
	return auth.WithPrincipal(ctx, principal), nil
}

func principalFrom(ctx context.Context) string { return auth.Principal(ctx) }

// getOwned loads a task the caller may see: one of this agent's, in the
// caller's tenant, created by the caller. Anything else is not found, so a
// stranger cannot learn a task exists.
func (h *Handler) getOwned(ctx context.Context, tenant, id string) (*store.Task, error) {
	if id == "" {
		return nil, errInvalidParams("id is required: name the task")
	}
	var t *store.Task
	err := h.s.retryTransient(ctx, "GetTask", func() (err error) {
		t, err = h.s.store.GetTask(ctx, id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errTaskNotFound(id)
	}
	if IsUnavailable(err) {
		return nil, err
	}
	if err != nil {
		return nil, errInternal(err)
	}
	if t.Agent != h.name || t.Tenant != tenant || t.Owner != principalFrom(ctx) {
		return nil, errTaskNotFound(id)
	}
	return t, nil
}

func checkHistoryLength(n *int) error {
	if n != nil && *n < 0 {
		return errInvalidParams("historyLength must be 0 or more, got %d", *n)
	}
	return nil
}

// GetTask implements a2asrv.RequestHandler.
func (h *Handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (_ *a2a.Task, err error) {
	defer func() { logInternal(h.s.log, "GetTask", string(req.ID), err) }()
	if ctx, err = h.admit(ctx); err != nil {
		return nil, err
	}
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	t, err := h.getOwned(ctx, req.Tenant, string(req.ID))
	if err != nil {
		return nil, err
	}
	return h.view(ctx, t, req.HistoryLength)
}

func (h *Handler) view(ctx context.Context, t *store.Task, historyLength *int) (*a2a.Task, error) {
	return h.viewKnown(ctx, t, historyLength, nil)
}

// viewKnown is view for a task whose newest log entries this node wrote:
// what they hold is not read back.
func (h *Handler) viewKnown(ctx context.Context, t *store.Task, historyLength *int, known *knownLog) (*a2a.Task, error) {
	var out *a2a.Task
	err := h.s.retryTransient(ctx, "view", func() (err error) {
		out, err = h.s.toA2A(ctx, t, taskView{historyLength: historyLength, artifacts: true, known: known})
		return err
	})
	if IsUnavailable(err) {
		return nil, err
	}
	if err != nil {
		return nil, errInternal(err)
	}
	return out, nil
}

type pageToken struct {
	U int64  `json:"u"`
	I string `json:"i"`
	// T is the listing's total, counted with its first page: later pages
	// carry it instead of counting again (0 in a token from before).
	T int `json:"t,omitempty"`
}

// ListTasks implements a2asrv.RequestHandler.
func (h *Handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (_ *a2a.ListTasksResponse, err error) {
	defer func() { logInternal(h.s.log, "ListTasks", "", err) }()
	if ctx, err = h.admit(ctx); err != nil {
		return nil, err
	}
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	size := req.PageSize
	if size == 0 {
		size = min(50, h.s.cfg.MaxPageSize)
	}
	if size < 1 || size > h.s.cfg.MaxPageSize {
		return nil, errInvalidParams("pageSize must be between 1 and %d, got %d", h.s.cfg.MaxPageSize, req.PageSize)
	}
	switch req.Status {
	case a2a.TaskStateUnspecified, a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired,
		a2a.TaskStateAuthRequired, a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected:
	default:
		return nil, errInvalidParams("status %q is not a task state; use one of TASK_STATE_SUBMITTED, TASK_STATE_WORKING, TASK_STATE_INPUT_REQUIRED, TASK_STATE_AUTH_REQUIRED, TASK_STATE_COMPLETED, TASK_STATE_FAILED, TASK_STATE_CANCELED, TASK_STATE_REJECTED", req.Status)
	}
	p := store.ListParams{
		Tenant: req.Tenant, Owner: principalFrom(ctx), Agent: h.name,
		ContextID: req.ContextID, State: req.Status, PageSize: size,
	}
	if req.StatusTimestampAfter != nil {
		p.UpdatedAfter = *req.StatusTimestampAfter
	}
	var tok pageToken
	if req.PageToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(req.PageToken)
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil || tok.I == "" {
			return nil, errInvalidParams("pageToken %q was not issued by this server; pass nextPageToken from the previous page", req.PageToken)
		}
		p.After = &store.Cursor{UpdatedAt: time.UnixMilli(tok.U).UTC(), ID: tok.I}
		p.NoTotal = tok.T > 0
	}
	var out *a2a.ListTasksResponse
	var res *store.ListResult
	err = h.s.retryTransient(ctx, "ListTasks", func() error {
		var err error
		out, res, err = h.listPage(ctx, req, p, size)
		return err
	})
	if err != nil {
		return nil, err
	}
	if p.NoTotal {
		out.TotalSize = tok.T
	}
	if res.Next != nil {
		raw, _ := json.Marshal(pageToken{U: res.Next.UpdatedAt.UnixMilli(), I: res.Next.ID, T: out.TotalSize})
		out.NextPageToken = base64.RawURLEncoding.EncodeToString(raw)
	}
	return out, nil
}

// CancelTask implements a2asrv.RequestHandler.
func (h *Handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	ctx, err := h.admit(ctx)
	if err != nil {
		return nil, err
	}
	defer h.s.lockTask(string(req.ID)).Unlock()
	var saved *store.Task
	err = h.s.retryTransient(ctx, "CancelTask", func() error {
		return retryCAS(func() error {
			t, err := h.getOwned(ctx, req.Tenant, string(req.ID))
			if err != nil {
				return err
			}
			if t.State.Terminal() {
				return a2a.NewError(a2a.ErrTaskNotCancelable,
					fmt.Sprintf("task %q is already %s and cannot be canceled", t.ID, text.StateWord(t.State)))
			}
			next, e, err := h.s.outcomes.endRow(t, a2a.TaskStateCanceled, "The task was canceled at the caller's request.", h.s.now())
			if err != nil {
				return errInternal(err)
			}
			saved, err = h.s.commit(ctx, commitNote{prev: t, cause: "cancel"}, next, []store.LogEntry{e}, false)
			if err != nil && !errors.Is(err, store.ErrConflict) {
				return errInternal(err)
			}
			return err
		})
	})
	if err != nil {
		logInternal(h.s.log, "CancelTask", string(req.ID), err)
		return nil, err
	}
	h.s.pool.cancel(saved.ID)
	return h.view(ctx, saved, nil)
}

// settled: the point where a blocking call returns.
func settled(t *store.Task) bool {
	return t.State.Terminal() || (interrupted(t.State) && !t.Runnable)
}

// waitSettled waits until the task is terminal or interrupted. It holds no
// goroutine of its own: the caller's request goroutine waits on the broker,
// and re-reads the store now and then in case a change was made elsewhere.
func (s *Engine) waitSettled(ctx context.Context, t *store.Task) (*store.Task, error) {
	for !settled(t) {
		ch, release := s.broker.watch(t.ID)
		latest, err := s.store.GetTask(ctx, t.ID)
		if err != nil && store.IsTransient(err) {
			// The store is away for a moment: the task is safe in it,
			// and the call waits for it to come back (its context
			// bounds the wait).
			latest = t
		} else if err != nil {
			release()
			return nil, errInternal(err)
		}
		if settled(latest) {
			release()
			return latest, nil
		}
		t = latest
		timer := time.NewTimer(s.cfg.RecheckInterval)
		select {
		case <-ch:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			release()
			return nil, ctx.Err()
		}
		timer.Stop()
		release()
	}
	return t, nil
}

// ValidateMessage checks a message request as the engine takes it: a
// messageId, a user role, 1 to maxParts parts each with content.
func ValidateMessage(req *a2a.SendMessageRequest, maxParts int) error {
	if req == nil || req.Message == nil {
		return errInvalidParams("message is required")
	}
	m := req.Message
	if m.ID == "" {
		return errInvalidParams("message.messageId is required")
	}
	if m.Role == a2a.MessageRoleAgent {
		return errInvalidParams("message.role must be ROLE_USER: a caller's message cannot speak for the agent")
	}
	if len(m.Parts) == 0 {
		return errInvalidParams("message.parts must hold at least one part")
	}
	if len(m.Parts) > maxParts {
		return errInvalidParams("message.parts holds %d parts; the server takes at most %d", len(m.Parts), maxParts)
	}
	for i, p := range m.Parts {
		if p == nil || p.Content == nil {
			return errInvalidParams("message.parts[%d] has no content: set exactly one of text, raw, data or url", i)
		}
	}
	return nil
}

// checkInputModes refuses a message with a part whose media type the
// agent's card does not accept (its defaultInputModes, or text/plain and
// application/json when it names none, and its skills' inputModes) with
// ContentTypeNotSupported (A2A 1.0 §3.1.1), before anything is stored or the
// agent sees it. A part's media type is its mediaType, else text/plain for
// text and application/json for data; a raw or url part without one is
// taken. See docs/decisions/0031-parts-the-agent-does-not-accept.md.
func (h *Handler) checkInputModes(m *a2a.Message) error {
	e := h.s.agentByName(h.name)
	if e == nil {
		return nil
	}
	modes := e.card.DefaultInputModes
	if len(modes) == 0 {
		modes = []string{"text/plain", "application/json"}
	}
	for _, sk := range e.card.Skills {
		modes = append(modes, sk.InputModes...)
	}
	for i, p := range m.Parts {
		mt := p.MediaType
		if mt == "" {
			switch p.Content.(type) {
			case a2a.Text:
				mt = "text/plain"
			case a2a.Data:
				mt = "application/json"
			default:
				continue
			}
		}
		if !mediaTypeIn(mt, modes) {
			return a2a.NewError(a2a.ErrUnsupportedContentType, fmt.Sprintf(
				"message.parts[%d] has media type %q, which this agent does not accept; it accepts %s (its card's input modes)",
				i, mt, strings.Join(modes, ", ")))
		}
	}
	return nil
}

// mediaTypeIn says whether media type mt is one of modes, which may hold
// wildcards (*/*, image/*); parameters and case do not count.
func mediaTypeIn(mt string, modes []string) bool {
	base := func(s string) string {
		if i := strings.IndexByte(s, ';'); i >= 0 {
			s = s[:i]
		}
		return strings.ToLower(strings.TrimSpace(s))
	}
	mt = base(mt)
	top, _, _ := strings.Cut(mt, "/")
	for _, m := range modes {
		switch m = base(m); {
		case m == "*/*" || m == "*" || m == mt:
			return true
		case strings.HasSuffix(m, "/*") && strings.TrimSuffix(m, "/*") == top:
			return true
		}
	}
	return false
}

// reply asks an agent that implements Replier whether it answers a first
// message with a message instead of a task. It returns nil when a task is
// to be made; nothing is stored either way.
func (h *Handler) reply(ctx context.Context, req *a2a.SendMessageRequest) (out *a2a.Message, err error) {
	if err := ValidateMessage(req, h.s.cfg.MaxParts); err != nil {
		return nil, err
	}
	if err := h.checkInputModes(req.Message); err != nil {
		return nil, err
	}
	if req.Message.TaskID != "" {
		return nil, nil
	}
	e := h.s.agentByName(h.name)
	if e == nil {
		return nil, nil
	}
	r, ok := e.agent.(api.Replier)
	if !ok {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			h.s.log.Error("agent Reply panicked", slog.String("agent", h.name), slog.Any("panic", p))
			out, err = nil, errInternal(fmt.Errorf("the agent failed to reply"))
		}
	}()
	m, ok := r.Reply(ctx, req.Message)
	if !ok || m == nil {
		return nil, nil
	}
	msg := *m
	msg.Role = a2a.MessageRoleAgent
	msg.TaskID = ""
	if msg.ID == "" {
		msg.ID = a2a.NewMessageID()
	}
	if msg.ContextID == "" {
		msg.ContextID = req.Message.ContextID
	}
	if msg.ContextID == "" {
		msg.ContextID = a2a.NewContextID()
	}
	return &msg, nil
}

// answer decides what an answer to an input-required task does: resume it,
// re-ask with errors, fail it at the cap, or end it by the caller's action.
func (h *Handler) answer(t *store.Task, msg *a2a.Message) (*store.Task, []store.LogEntry, *runInput, error) {
	s := h.s
	var q question.Question
	if err := questionwire.Decode(t.Question, &q); err != nil {
		return nil, nil, nil, errInternal(fmt.Errorf("decode open question of task %s: %w", t.ID, err))
	}
	now := s.now()
	v, err := judgeAnswer(&q, msg, t.ID, t.Version, s.cfg.MaxAnswerBytes, now)
	if err != nil {
		return nil, nil, nil, err
	}
	if v.answer != nil {
		in := &runInput{Kind: inputAnswer, Message: msg, Question: &q, Answer: v.answer, Key: t.ID + "/" + q.ID}
		next, entries, err := s.outcomes.resumeRow(t, in, msg, "")
		return next, entries, in, err
	}

	userEntry, err := messageEntry(msg, now)
	if err != nil {
		return nil, nil, nil, err
	}
	if v.reask == nil {
		ended, e, err := s.outcomes.endRow(t, v.end, v.text, now)
		if err != nil {
			return nil, nil, nil, errInternal(err)
		}
		return ended, []store.LogEntry{userEntry, e}, nil, nil
	}
	// Re-ask: the task stays in input-required with a new question.
	next := *t
	raw, err := questionwire.Encode(v.reask)
	if err != nil {
		return nil, nil, nil, errInternal(err)
	}
	next.Question = raw
	status, data := questionwire.MessageAndWire(v.reask)
	status.TaskID, status.ContextID = a2a.TaskID(t.ID), t.ContextID
	st, e, err := statusEntryData(&next, a2a.TaskStateInputRequired, status, data, now)
	if err != nil {
		return nil, nil, nil, errInternal(err)
	}
	next.State, next.Status = a2a.TaskStateInputRequired, st
	return &next, []store.LogEntry{userEntry, e}, nil, nil
}

// verdict is what an answer to an open question does: exactly one of
// resume the task with answer, ask reask instead, or end the task in end
// with text.
type verdict struct {
	answer *question.Answer
	reask  *question.Question
	end    a2a.TaskState
	text   string
}

// judgeAnswer reads msg as an answer to q, the question task taskID asked
// at its version: the one reading of an answer, for the handler and for
// askpointtest's steps without a server (Offline). An error refuses the
// message without storing it (an expired question, an answer too large,
// one naming another question).
func judgeAnswer(q *question.Question, msg *a2a.Message, taskID string, version int64, maxBytes int, now time.Time) (verdict, error) {
	if !q.Expires.IsZero() && !now.Before(q.Expires) {
		return verdict{}, errExpired
	}
	if size := partsSize(msg.Parts); size > maxBytes {
		// Refused outright, not re-asked: storing it in the history would
		// store what the limit is there to keep out.
		return verdict{}, errInvalidParams("the answer is %d bytes; answers to question %q may be at most %d bytes", size, q.ID, maxBytes)
	}
	ans, fieldErrs, err := question.Parse(msg, q, maxBytes)
	if err != nil {
		// err names the sent and the open question already.
		return verdict{}, errInvalidParams("task %q: %v", taskID, err)
	}
	switch {
	case len(fieldErrs) == 0 && ans != nil && (ans.Action == "" || ans.Action == question.ActionDecline):
		// A valid answer, or a refusal to answer: either way the agent
		// decides what happens next, and sees only what was asked.
		ans.Fields = q.Asked(ans.Fields)
		return verdict{answer: ans}, nil
	case ans != nil && ans.Action == question.ActionCancel:
		return verdict{end: a2a.TaskStateCanceled, text: withReason("The caller canceled the task instead of answering.", ans.Reason)}, nil
	case q.Attempt >= q.MaxAttempts:
		return verdict{end: a2a.TaskStateFailed, text: noValidAnswer(q.Attempt, fieldErrs)}, nil
	}
	return verdict{reask: q.ReAsk(questionID(taskID, version), fieldErrs)}, nil
}

// partsSize is the encoded size of a message's parts (json.Marshal's),
// counted in a scratch buffer instead of copied out.
func partsSize(parts a2a.ContentParts) int {
	sp := scratchBuffers.Get().(*[]byte)
	b, err := appendParts((*sp)[:0], parts, nil)
	n := len(b)
	if cap(b) <= maxScratch {
		*sp = b[:0]
		scratchBuffers.Put(sp)
	}
	if err != nil {
		return 0
	}
	return n
}

func withReason(text, reason string) string {
	if reason == "" {
		return text
	}
	return text + " Reason: " + reason
}

// SendStreamingMessage implements a2asrv.RequestHandler: the task first,
// then its status and artifact updates in order, until it is terminal (or
// input-required, when the server closes streams there).
func (h *Handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		ctx, err := h.admit(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		if reply, err := h.reply(ctx, req); err != nil || reply != nil {
			if err != nil {
				yield(nil, err)
			} else {
				yield(reply, nil)
			}
			return
		}
		var acc *accepted
		err = h.s.retryTransient(ctx, "SendStreamingMessage", func() (err error) {
			acc, err = h.accept(ctx, req, false)
			return err
		})
		if err != nil {
			logInternal(h.s.log, "SendStreamingMessage", messageTask(req), err)
			yield(nil, err)
			return
		}
		t := acc.task
		if acc.work != nil {
			h.s.pool.dispatch(acc.work)
		}
		var hl *int
		if req.Config != nil {
			hl = req.Config.HistoryLength
		}
		closeAtInput := h.s.cfg.InputRequiredStreams == api.CloseStreams
		h.stream(ctx, t, hl, yield, func(s a2a.TaskState) bool {
			return s.Terminal() || (closeAtInput && s == a2a.TaskStateInputRequired)
		})
	}
}

// SubscribeToTask implements a2asrv.RequestHandler: the task as it stands,
// then every later update, until the task is terminal. It stays open while
// the task is paused.
func (h *Handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		ctx, err := h.admit(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		t, err := h.subscribable(ctx, req)
		if err != nil {
			logInternal(h.s.log, "SubscribeToTask", string(req.ID), err)
			yield(nil, err)
			return
		}
		h.stream(ctx, t, nil, yield, a2a.TaskState.Terminal)
	}
}

func (h *Handler) subscribable(ctx context.Context, req *a2a.SubscribeToTaskRequest) (*store.Task, error) {
	t, err := h.getOwned(ctx, req.Tenant, string(req.ID))
	if err != nil {
		return nil, err
	}
	if t.State.Terminal() {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation,
			fmt.Sprintf("task %q is already %s; there is nothing to subscribe to (use GetTask)", t.ID, text.StateWord(t.State)))
	}
	return t, nil
}

// stream yields the task snapshot t, then the log entries after it, until
// ends says a state ends the stream. The log is the source of truth; the
// broker only wakes the loop.
func (h *Handler) stream(ctx context.Context, t *store.Task, hl *int, yield func(a2a.Event, error) bool, ends func(a2a.TaskState) bool) {
	s := h.s
	snap, err := h.view(ctx, t, hl)
	if err != nil {
		logInternal(s.log, "stream", t.ID, err)
		yield(nil, err)
		return
	}
	if !yield(snap, nil) || ends(t.State) {
		return
	}
	seq := t.LastSeq
	for {
		ch, release := s.broker.watch(t.ID)
		entries, err := s.store.ReadLog(ctx, t.ID, seq, 256)
		if err != nil {
			release()
			if ctx.Err() == nil {
				err = errInternal(err)
				logInternal(s.log, "stream", t.ID, err)
				yield(nil, err)
			}
			return
		}
		for _, e := range entries {
			seq = e.Seq
			ev, state, err := logEvent(e)
			if err != nil {
				release()
				err = errInternal(err)
				logInternal(s.log, "stream", t.ID, err)
				yield(nil, err)
				return
			}
			if ev == nil {
				continue
			}
			if !yield(ev, nil) || (state != nil && ends(*state)) {
				release()
				return
			}
		}
		if len(entries) > 0 {
			release()
			continue
		}
		timer := time.NewTimer(s.cfg.RecheckInterval)
		select {
		case <-ch:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
		release()
		if ctx.Err() != nil {
			return
		}
	}
}

// GetExtendedAgentCard implements a2asrv.RequestHandler. askpoint serves
// no extended card: a card that does not declare
// capabilities.extendedAgentCard gets UnsupportedOperation, one that
// declares it ExtendedAgentCardNotConfigured (A2A 1.0 §3.3.4).
func (h *Handler) GetExtendedAgentCard(ctx context.Context, _ *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	if _, err := h.admit(ctx); err != nil {
		return nil, err
	}
	if e := h.s.agentByName(h.name); e == nil || !e.card.Capabilities.ExtendedAgentCard {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this agent's card does not declare capabilities.extendedAgentCard: there is no extended agent card to get")
	}
	return nil, a2a.NewError(a2a.ErrExtendedCardNotConfigured, "this agent's card declares capabilities.extendedAgentCard, but no extended agent card is configured")
}

// errExpired says an answer came at or after its question's expiry, or a
// credential at or after the expiry of its request.
var errExpired = errors.New("the open question has expired")

// CheckSubscribe says, before a transport opens a stream, whether
// SubscribeToTask would refuse req (an unknown or foreign task, a finished
// one), so that the refusal travels as a plain error response.
func (h *Handler) CheckSubscribe(ctx context.Context, req *a2a.SubscribeToTaskRequest) error {
	ctx, err := h.admit(ctx)
	if err != nil {
		return err
	}
	_, err = h.subscribable(ctx, req)
	return err
}

// jsonSize is the length of v's JSON, counted without keeping it.
func jsonSize(v any) (int, error) {
	var c countWriter
	err := json.NewEncoder(&c).Encode(v)
	return int(c), err
}

type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }

// listPage reads one ListTasks page: a few rows at a time, so that a page of
// large tasks stops at the reply's budget (MaxReplyBytes) without having
// loaded the rest of its rows; res.Next is where the next page starts.
func (h *Handler) listPage(ctx context.Context, req *a2a.ListTasksRequest, p store.ListParams, size int) (*a2a.ListTasksResponse, *store.ListResult, error) {
	// The page is read from the store a few rows at a time, so that a
	// page of large tasks stops at the reply's budget without having
	// loaded the rest of its rows.
	const chunk = 8
	p.PageSize = min(size, chunk)
	res, err := h.s.store.ListTasks(ctx, p)
	if err != nil {
		return nil, nil, errInternal(err)
	}
	out := &a2a.ListTasksResponse{Tasks: make([]*a2a.Task, 0, min(size, len(res.Tasks))), TotalSize: res.TotalSize, PageSize: size}
	history := req.HistoryLength
	if history == nil {
		// A list is for finding tasks: a bounded history unless the caller
		// asks for more.
		n := h.s.cfg.ListHistoryLength
		history = &n
	}
	used := 0
	var last *store.Cursor // the last task the page holds
	more := false          // tasks after it
chunks:
	for {
		for i, t := range res.Tasks {
			v, err := h.s.toA2A(ctx, t, taskView{historyLength: history, artifacts: req.IncludeArtifacts})
			if err != nil {
				return nil, nil, errInternal(err)
			}
			// The reply's budget: a page stops early once its tasks' JSON
			// adds up to more than MaxReplyBytes; the next page starts after
			// the last task it holds. A single task over the budget is sent
			// alone.
			n, err := jsonSize(v)
			if err != nil {
				return nil, nil, errInternal(err)
			}
			if used+n > h.s.cfg.MaxReplyBytes && len(out.Tasks) > 0 {
				more = true
				break chunks
			}
			used += n
			out.Tasks = append(out.Tasks, v)
			last = &store.Cursor{UpdatedAt: t.UpdatedAt, ID: t.ID}
			if len(out.Tasks) == size {
				more = i < len(res.Tasks)-1 || res.Next != nil
				break chunks
			}
		}
		if res.Next == nil || len(res.Tasks) == 0 {
			break
		}
		// The page's total was counted with its first rows.
		p.After, p.PageSize, p.NoTotal = res.Next, min(size-len(out.Tasks), chunk), true
		if res, err = h.s.store.ListTasks(ctx, p); err != nil {
			return nil, nil, errInternal(err)
		}
	}
	res.Next = nil
	if more {
		res.Next = last
	}
	return out, res, nil
}
