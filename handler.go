package askpoint

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// handler implements a2asrv.RequestHandler for one agent.
type handler struct {
	s    *Server
	name string
}

var _ a2asrv.RequestHandler = (*handler)(nil)

type principalKey struct{}

// WithPrincipal returns a context that names the caller. Authentication
// middleware sets it; every task belongs to the principal that created it
// and is invisible to others. Without it the caller is anonymous.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}

// getOwned loads a task the caller may see: one of this agent's, in the
// caller's tenant, created by the caller. Anything else is not found, so a
// stranger cannot learn a task exists.
func (h *handler) getOwned(ctx context.Context, tenant, id string) (*store.Task, error) {
	if id == "" {
		return nil, errInvalidParams("id is required: name the task")
	}
	t, err := h.s.store.GetTask(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errTaskNotFound(id)
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
func (h *handler) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	if err := checkHistoryLength(req.HistoryLength); err != nil {
		return nil, err
	}
	t, err := h.getOwned(ctx, req.Tenant, string(req.ID))
	if err != nil {
		return nil, err
	}
	return h.view(ctx, t, req.HistoryLength)
}

func (h *handler) view(ctx context.Context, t *store.Task, historyLength *int) (*a2a.Task, error) {
	out, err := h.s.toA2A(ctx, t, taskView{historyLength: historyLength, artifacts: true})
	if err != nil {
		return nil, errInternal(err)
	}
	return out, nil
}

type pageToken struct {
	U int64  `json:"u"`
	I string `json:"i"`
}

// ListTasks implements a2asrv.RequestHandler.
func (h *handler) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
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
	if req.PageToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(req.PageToken)
		var tok pageToken
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil || tok.I == "" {
			return nil, errInvalidParams("pageToken %q was not issued by this server; pass nextPageToken from the previous page", req.PageToken)
		}
		p.After = &store.Cursor{UpdatedAt: time.UnixMilli(tok.U).UTC(), ID: tok.I}
	}
	res, err := h.s.store.ListTasks(ctx, p)
	if err != nil {
		return nil, errInternal(err)
	}
	out := &a2a.ListTasksResponse{Tasks: make([]*a2a.Task, 0, len(res.Tasks)), TotalSize: res.TotalSize, PageSize: size}
	for _, t := range res.Tasks {
		v, err := h.s.toA2A(ctx, t, taskView{historyLength: req.HistoryLength, artifacts: req.IncludeArtifacts})
		if err != nil {
			return nil, errInternal(err)
		}
		out.Tasks = append(out.Tasks, v)
	}
	if res.Next != nil {
		raw, _ := json.Marshal(pageToken{U: res.Next.UpdatedAt.UnixMilli(), I: res.Next.ID})
		out.NextPageToken = base64.RawURLEncoding.EncodeToString(raw)
	}
	return out, nil
}

// CancelTask implements a2asrv.RequestHandler.
func (h *handler) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	for range maxCASRetries {
		t, err := h.getOwned(ctx, req.Tenant, string(req.ID))
		if err != nil {
			return nil, err
		}
		if t.State.Terminal() {
			return nil, a2a.NewError(a2a.ErrTaskNotCancelable,
				fmt.Sprintf("task %q is already %s and cannot be canceled", t.ID, stateWord(t.State)))
		}
		next, e, err := h.s.endRow(t, a2a.TaskStateCanceled, "The task was canceled at the caller's request.", h.s.now())
		if err != nil {
			return nil, errInternal(err)
		}
		saved, err := h.s.store.UpdateTask(ctx, next, []store.LogEntry{e})
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, errInternal(err)
		}
		h.s.committed(saved)
		h.s.cancelLocalRun(saved.ID)
		return h.view(ctx, saved, nil)
	}
	return nil, errInternal(errors.New("the task kept changing while it was being canceled; try again"))
}

func (s *Server) cancelLocalRun(id string) {
	s.mu.Lock()
	cancel := s.running[id]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// SendMessage implements a2asrv.RequestHandler. It blocks until the task is
// terminal or interrupted unless configuration.returnImmediately is set.
func (h *handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	if reply, err := h.reply(ctx, req); err != nil || reply != nil {
		if err != nil {
			return nil, err
		}
		return reply, nil
	}
	t, err := h.accept(ctx, req)
	if err != nil {
		return nil, err
	}
	var hl *int
	if req.Config != nil {
		hl = req.Config.HistoryLength
	}
	if req.Config == nil || !req.Config.ReturnImmediately {
		t, err = h.s.waitSettled(ctx, t)
		if err != nil {
			return nil, err
		}
	}
	return h.view(ctx, t, hl)
}

// settled: the point where a blocking call returns.
func settled(t *store.Task) bool {
	return t.State.Terminal() || (interrupted(t.State) && !t.Runnable)
}

// waitSettled waits until the task is terminal or interrupted. It holds no
// goroutine of its own: the caller's request goroutine waits on the broker,
// and re-reads the store now and then in case a change was made elsewhere.
func (s *Server) waitSettled(ctx context.Context, t *store.Task) (*store.Task, error) {
	for !settled(t) {
		ch, release := s.broker.watch(t.ID)
		latest, err := s.store.GetTask(ctx, t.ID)
		if err != nil {
			release()
			return nil, errInternal(err)
		}
		if settled(latest) {
			release()
			return latest, nil
		}
		t = latest
		timer := time.NewTimer(s.cfg.PollInterval)
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

func validateMessage(req *a2a.SendMessageRequest, maxParts int) error {
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

// reply asks an agent that implements Replier whether it answers a first
// message with a message instead of a task. It returns nil when a task is
// to be made; nothing is stored either way.
func (h *handler) reply(ctx context.Context, req *a2a.SendMessageRequest) (out *a2a.Message, err error) {
	if err := validateMessage(req, h.s.cfg.MaxParts); err != nil {
		return nil, err
	}
	if req.Message.TaskID != "" {
		return nil, nil
	}
	e := h.s.agentByName(h.name)
	if e == nil {
		return nil, nil
	}
	r, ok := e.spec.Agent.(Replier)
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

// accept commits the message: a new task, or an answer or follow-up to a
// paused one. It returns the task as committed.
func (h *handler) accept(ctx context.Context, req *a2a.SendMessageRequest) (*store.Task, error) {
	if err := validateMessage(req, h.s.cfg.MaxParts); err != nil {
		return nil, err
	}
	if req.Config != nil {
		if err := checkHistoryLength(req.Config.HistoryLength); err != nil {
			return nil, err
		}
	}
	var pc *a2a.PushConfig
	if req.Config != nil && req.Config.PushConfig != nil {
		pc = req.Config.PushConfig
		if err := h.s.checkPushConfig(ctx, pc); err != nil {
			return nil, err
		}
	}
	if req.Message.TaskID == "" {
		t, err := h.start(ctx, req)
		if err == nil && pc != nil {
			// From the task's first entry: the run may already have
			// paused or ended by now, and its caller must hear of it.
			_, err = h.s.putPushConfig(ctx, t, pc, 0)
		}
		return t, err
	}
	if pc != nil {
		// Before the message is taken, so that what it causes is sent.
		t, err := h.getOwned(ctx, req.Tenant, string(req.Message.TaskID))
		if err != nil {
			return nil, err
		}
		if _, err := h.s.putPushConfig(ctx, t, pc, t.LastSeq); err != nil {
			return nil, err
		}
	}
	return h.continueTask(ctx, req)
}

func (h *handler) start(ctx context.Context, req *a2a.SendMessageRequest) (*store.Task, error) {
	s := h.s
	owner := principalFrom(ctx)
	// The first use of a messageId gets the plain derived ID; a reuse gets
	// one derived from the content and how many reuses came before, so
	// that a redelivery of any of them finds its own task again.
	id := requestTaskID(req.Tenant, owner, h.name, req.Message.ID, nil)
	salt := contentHash(req.Message)
	for generation := 1; ; generation++ {
		t, err := h.create(ctx, req, id)
		if !errors.Is(err, store.ErrExists) {
			return t, err
		}
		existing, dup, err := s.sameRequest(ctx, id, req.Message)
		if err != nil {
			return nil, errInternal(err)
		}
		if dup {
			return existing, nil
		}
		if generation == 1 {
			s.log.Info("messageId reused for a new request; handled as a new message", slog.String("messageId", req.Message.ID))
		}
		if generation >= 64 {
			id = string(a2a.NewTaskID())
			continue
		}
		id = requestTaskID(req.Tenant, owner, h.name, req.Message.ID, append(salt, byte(generation)))
	}
}

// create commits a new task with the given ID for a first message.
// store.ErrExists when the ID is taken.
func (h *handler) create(ctx context.Context, req *a2a.SendMessageRequest, id string) (*store.Task, error) {
	s := h.s
	msg := *req.Message
	msg.TaskID = a2a.TaskID(id)
	if msg.ContextID == "" {
		msg.ContextID = a2a.NewContextID()
	}
	msg.Role = a2a.MessageRoleUser
	now := s.now()
	t := &store.Task{
		ID: string(msg.TaskID), ContextID: msg.ContextID, Tenant: req.Tenant, Owner: principalFrom(ctx), Agent: h.name,
		State:    a2a.TaskStateSubmitted,
		Runnable: true, LeaseOwner: s.cfg.NodeID, LeaseUntil: now.Add(s.cfg.LeaseDuration),
	}
	if len(req.Metadata) > 0 {
		raw, err := json.Marshal(req.Metadata)
		if err != nil {
			return nil, errInvalidParams("metadata cannot be encoded: %v", err)
		}
		t.Metadata = raw
	}
	ts := now
	status, err := json.Marshal(a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &ts})
	if err != nil {
		return nil, errInternal(err)
	}
	t.Status = status
	in, err := json.Marshal(runInput{Kind: inputStart, Key: t.ID + "/start", Message: &msg})
	if err != nil {
		return nil, errInternal(err)
	}
	t.Input = in
	e, err := messageEntry(&msg, now)
	if err != nil {
		return nil, err
	}
	saved, err := s.store.CreateTask(ctx, t, []store.LogEntry{e})
	if errors.Is(err, store.ErrExists) {
		return nil, err
	}
	if err != nil {
		return nil, errInternal(err)
	}
	s.committed(saved)
	s.dispatch(saved)
	return saved, nil
}

func (h *handler) continueTask(ctx context.Context, req *a2a.SendMessageRequest) (*store.Task, error) {
	s := h.s
	lostRace := false
	firstQuestion := ""
	for range maxCASRetries {
		t, err := h.getOwned(ctx, req.Tenant, string(req.Message.TaskID))
		if err != nil {
			return nil, err
		}
		// Deduplication comes before every other rule, so a retry of an
		// answer that won gets the task back even after it finished.
		dup, err := s.redelivered(ctx, t, req.Message)
		if err != nil {
			return nil, errInternal(err)
		}
		if dup {
			// The history may be newer than t: return the task as it is now.
			latest, err := s.store.GetTask(ctx, t.ID)
			if err != nil {
				return nil, errInternal(err)
			}
			return latest, nil
		}
		if lostRace && t.State == a2a.TaskStateInputRequired && openQuestionID(t) != firstQuestion {
			// This message lost a race for a question that is no longer
			// open: the caller gets the task as it now stands, and the
			// message is not bound to the new question.
			return t, nil
		}
		if !lostRace {
			firstQuestion = openQuestionID(t)
		}
		if req.Message.ContextID != "" && req.Message.ContextID != t.ContextID {
			return nil, errInvalidParams("message.contextId %q does not match the context %q of task %q; omit contextId or send the task's own",
				req.Message.ContextID, t.ContextID, t.ID)
		}
		if t.State.Terminal() {
			return nil, errTerminal(t.ID, t.State)
		}
		msg := *req.Message
		msg.ContextID = t.ContextID
		msg.Role = a2a.MessageRoleUser

		var next *store.Task
		var entries []store.LogEntry
		switch t.State {
		case a2a.TaskStateInputRequired:
			next, entries, err = h.answer(t, &msg)
			var expired *expiredError
			if errors.As(err, &expired) {
				// Too late: the question closed at its expiry even if no
				// sweeper has acted on it yet. The task expires here and
				// now, and the answer is refused.
				saved, err := s.expire(ctx, t)
				if errors.Is(err, store.ErrConflict) {
					lostRace = true
					continue
				}
				if err != nil {
					return nil, errInternal(err)
				}
				return nil, a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf("%s, before this answer came; the answer was not taken and the task %s",
					expired.Error(), expiryResult(saved)))
			}
		case a2a.TaskStateAuthRequired:
			in := runInput{Kind: inputAuth, Message: &msg, Key: fmt.Sprintf("%s/auth-%d", t.ID, t.Version)}
			next, entries, err = s.resumeRow(t, in, &msg, "")
		default:
			// Submitted or working: the task is busy with a run. The caller
			// gets the task as it stands; the message is not bound to it.
			s.log.Info("message to a busy task not taken", slog.String("task", t.ID), slog.String("state", string(t.State)))
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		saved, err := s.store.UpdateTask(ctx, next, entries)
		if errors.Is(err, store.ErrConflict) {
			lostRace = true
			continue // someone else changed the task first: decide again
		}
		if err != nil {
			return nil, errInternal(err)
		}
		s.committed(saved)
		if saved.Runnable {
			s.dispatch(saved)
		}
		return saved, nil
	}
	return nil, errInternal(errors.New("the task kept changing while the message was being taken; try again"))
}

// openQuestionID is the ID of the task's open question, "" when none.
func openQuestionID(t *store.Task) string {
	if len(t.Question) == 0 {
		return ""
	}
	var q struct {
		ID string `json:"questionId"`
	}
	_ = json.Unmarshal(t.Question, &q)
	return q.ID
}

// answer decides what an answer to an input-required task does: resume it,
// re-ask with errors, fail it at the cap, or end it by the caller's action.
func (h *handler) answer(t *store.Task, msg *a2a.Message) (*store.Task, []store.LogEntry, error) {
	s := h.s
	var q question.Question
	if err := json.Unmarshal(t.Question, &q); err != nil {
		return nil, nil, errInternal(fmt.Errorf("decode open question of task %s: %w", t.ID, err))
	}
	now := s.now()
	if !q.Expires.IsZero() && !now.Before(q.Expires) {
		// Too late: the question closed at its expiry even if no sweeper
		// has acted on it yet. The task expires here and now.
		return nil, nil, &expiredError{question: q.ID, at: q.Expires}
	}
	if size := partsSize(msg.Parts); size > s.cfg.MaxAnswerBytes {
		// Refused outright, not re-asked: storing it in the history would
		// store what the limit is there to keep out.
		return nil, nil, errInvalidParams("the answer is %d bytes; answers to question %q may be at most %d bytes", size, q.ID, s.cfg.MaxAnswerBytes)
	}
	ans, fieldErrs, err := question.Parse(msg, &q, s.cfg.MaxAnswerBytes)
	if err != nil {
		// err names the sent and the open question already.
		return nil, nil, errInvalidParams("task %q: %v", t.ID, err)
	}
	if len(fieldErrs) == 0 && ans != nil && (ans.Action == "" || ans.Action == question.ActionDecline) {
		// A valid answer, or a refusal to answer: either way the agent
		// decides what happens next.
		in := runInput{Kind: inputAnswer, Message: msg, Question: &q, Answer: ans, Key: t.ID + "/" + q.ID}
		return s.resumeRow(t, in, msg, "")
	}

	next := *t
	userEntry, err := messageEntry(msg, now)
	if err != nil {
		return nil, nil, err
	}
	end := func(state a2a.TaskState, text string) (*store.Task, []store.LogEntry, error) {
		ended, e, err := s.endRow(t, state, text, now)
		if err != nil {
			return nil, nil, errInternal(err)
		}
		return ended, []store.LogEntry{userEntry, e}, nil
	}
	switch {
	case ans != nil && ans.Action == question.ActionCancel:
		return end(a2a.TaskStateCanceled, withReason("The caller canceled the task instead of answering.", ans.Reason))
	case q.Attempt >= q.MaxAttempts:
		return end(a2a.TaskStateFailed, fmt.Sprintf("No valid answer after %d attempts. Last errors: %s", q.Attempt, question.ErrorsText(fieldErrs)))
	}
	// Re-ask: the task stays in input-required with a new question.
	nq := q.ReAsk("q-"+shortID(), fieldErrs)
	raw, err := json.Marshal(nq)
	if err != nil {
		return nil, nil, errInternal(err)
	}
	next.Question = raw
	status := nq.Message()
	status.TaskID, status.ContextID = a2a.TaskID(t.ID), t.ContextID
	st, e, err := statusEntry(&next, a2a.TaskStateInputRequired, status, now)
	if err != nil {
		return nil, nil, errInternal(err)
	}
	next.State, next.Status = a2a.TaskStateInputRequired, st
	return &next, []store.LogEntry{userEntry, e}, nil
}

// partsSize is the encoded size of a message's parts.
func partsSize(parts a2a.ContentParts) int {
	raw, err := json.Marshal(parts)
	if err != nil {
		return 0
	}
	return len(raw)
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
func (h *handler) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if reply, err := h.reply(ctx, req); err != nil || reply != nil {
			if err != nil {
				yield(nil, err)
			} else {
				yield(reply, nil)
			}
			return
		}
		t, err := h.accept(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		var hl *int
		if req.Config != nil {
			hl = req.Config.HistoryLength
		}
		closeAtInput := h.s.cfg.InputRequiredStreams == CloseStreams
		h.stream(ctx, t, hl, yield, func(s a2a.TaskState) bool {
			return s.Terminal() || (closeAtInput && s == a2a.TaskStateInputRequired)
		})
	}
}

// SubscribeToTask implements a2asrv.RequestHandler: the task as it stands,
// then every later update, until the task is terminal. It stays open while
// the task is paused.
func (h *handler) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		t, err := h.subscribable(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		h.stream(ctx, t, nil, yield, a2a.TaskState.Terminal)
	}
}

func (h *handler) subscribable(ctx context.Context, req *a2a.SubscribeToTaskRequest) (*store.Task, error) {
	t, err := h.getOwned(ctx, req.Tenant, string(req.ID))
	if err != nil {
		return nil, err
	}
	if t.State.Terminal() {
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation,
			fmt.Sprintf("task %q is already %s; there is nothing to subscribe to (use GetTask)", t.ID, stateWord(t.State)))
	}
	return t, nil
}

// stream yields the task snapshot t, then the log entries after it, until
// ends says a state ends the stream. The log is the source of truth; the
// broker only wakes the loop.
func (h *handler) stream(ctx context.Context, t *store.Task, hl *int, yield func(a2a.Event, error) bool, ends func(a2a.TaskState) bool) {
	s := h.s
	snap, err := h.view(ctx, t, hl)
	if err != nil {
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
				yield(nil, errInternal(err))
			}
			return
		}
		for _, e := range entries {
			seq = e.Seq
			ev, state, err := logEvent(e)
			if err != nil {
				release()
				yield(nil, errInternal(err))
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
		timer := time.NewTimer(s.cfg.PollInterval)
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

// GetExtendedAgentCard implements a2asrv.RequestHandler.
func (h *handler) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.NewError(a2a.ErrExtendedCardNotConfigured, "this agent has no extended agent card")
}

// expiredError says an answer came after its question's expiry.
type expiredError struct {
	question string
	at       time.Time
}

func (e *expiredError) Error() string {
	return fmt.Sprintf("question %q expired at %s", e.question, e.at.UTC().Format(time.RFC3339))
}

// endRow builds the row of t ended in a terminal state with a status
// message for the caller: no work owed, no lease, no open question, no
// checkpoint.
//
// What a paused task held and has not released stays on the row, due for
// release at once.
func (s *Server) endRow(t *store.Task, state a2a.TaskState, text string, now time.Time) (*store.Task, store.LogEntry, error) {
	next := *t
	next.Runnable, next.LeaseOwner, next.LeaseUntil = false, "", time.Time{}
	next.Input, next.Question, next.Checkpoint = nil, nil, nil
	s.keepHoldsOnEnd(t, &next, now)
	st, e, err := statusEntry(&next, state, agentMessage(&next, text), now)
	if err != nil {
		return nil, store.LogEntry{}, err
	}
	next.State, next.Status = state, st
	return &next, e, nil
}
