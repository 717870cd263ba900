package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// Taking a message: a first message creates a task, an answer or a
// follow-up moves a paused one on. Either way it is one transition (one
// load, one decision, one compare-and-set write, one publish), and the step
// the message makes owed runs at once on this node.
//
// A blocking SendMessage takes a quick step when the store has task locks
// (store.Locker: SQLite's in memory, PostgreSQL's a row lock held for the
// step; decision 0020): the step runs before its input is written, while
// the lock holds every other transition of the task, and its outcome is
// committed in the same write as the message (one write instead of two).
// The step's idempotency key is the one a committed input would carry, so
// a crash before that write (which nothing acknowledged) and the caller's
// retry run it again with the same key. A step still running after
// workingAfter commits the message on its own and goes on under its lease
// as any step does. See docs/decisions/0016-one-transition.md and
// 0020-quick-steps-on-postgresql.md.

// SendMessage implements a2asrv.RequestHandler. It blocks until the task is
// terminal or interrupted unless configuration.returnImmediately is set.
func (h *Handler) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (res a2a.SendMessageResult, err error) {
	defer func() { logInternal(h.s.log, "SendMessage", messageTask(req), err) }()
	if ctx, err = h.admit(ctx); err != nil {
		return nil, err
	}
	if reply, err := h.reply(ctx, req); err != nil || reply != nil {
		if err != nil {
			return nil, err
		}
		return reply, nil
	}
	var hl *int
	blocking := true
	if req.Config != nil {
		hl = req.Config.HistoryLength
		blocking = !req.Config.ReturnImmediately
	}
	var acc *accepted
	err = h.s.retryTransient(ctx, "SendMessage", func() (err error) {
		acc, err = h.accept(ctx, req, blocking)
		return err
	})
	if err != nil {
		return nil, err
	}
	t, known := acc.task, acc.known
	if acc.work != nil {
		acc.work.known = acc.known.clone() // the run extends its own
		if blocking {
			t, known = h.s.pool.runHere(acc.work)
		} else {
			h.s.pool.dispatch(acc.work)
		}
	}
	if blocking {
		if t, err = h.s.waitSettled(ctx, t); err != nil {
			return nil, err
		}
	}
	return h.viewKnown(ctx, t, hl, known)
}

func messageTask(req *a2a.SendMessageRequest) string {
	if req == nil || req.Message == nil {
		return ""
	}
	return string(req.Message.TaskID)
}

// accepted is what taking a message did: the task as committed (or as
// found, for a redelivery), and the step it made owed on this node.
type accepted struct {
	task  *store.Task
	work  *work
	known *knownLog // what this node wrote of the task's log
}

// accept takes the message. quick allows a quick step: the returned work
// then holds the write of the message, made with the step's first write.
func (h *Handler) accept(ctx context.Context, req *a2a.SendMessageRequest, quick bool) (*accepted, error) {
	if err := ValidateMessage(req, h.s.cfg.MaxParts); err != nil {
		return nil, err
	}
	if err := h.checkInputModes(req.Message); err != nil {
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
		if err := h.s.outbox.check(ctx, pc); err != nil {
			return nil, err
		}
		quick = false // the configuration is written between the message and its step
	}
	quick = quick && h.s.quickSteps()
	if req.Message.TaskID == "" {
		acc, err := h.start(ctx, req, quick)
		if err == nil && pc != nil {
			// From the task's first entry: the run may already have
			// paused or ended by now, and its caller must hear of it.
			_, err = h.s.outbox.put(ctx, acc.task, pc, 0)
		}
		return acc, err
	}
	if pc != nil {
		// Before the message is taken, so that what it causes is sent.
		t, err := h.getOwned(ctx, req.Tenant, string(req.Message.TaskID))
		if err != nil {
			return nil, err
		}
		if _, err := h.s.outbox.put(ctx, t, pc, t.LastSeq); err != nil {
			return nil, err
		}
	}
	return h.continueTask(ctx, req, quick)
}

// start takes a first message. Its task gets a new, time-ordered ID and
// the request key derived from the caller, the agent and the messageId
// (decision 0017); a reuse of the messageId with other content gets a key
// derived from the content and how many reuses came before, so that a
// redelivery of any of them finds its own task again.
func (h *Handler) start(ctx context.Context, req *a2a.SendMessageRequest, quick bool) (*accepted, error) {
	s := h.s
	owner := principalFrom(ctx)
	key := requestKey(req.Tenant, owner, h.name, req.Message.ID, nil)
	written, err := s.checkQuota(ctx, req.Tenant, owner, key)
	if err != nil {
		return nil, err
	}
	defer written() // by the time start returns the task is written, or will not be
	id := string(a2a.NewTaskID())
	if quick {
		if acc, ok := h.quickStart(ctx, req, id, key); ok {
			return acc, nil
		}
	}
	salt := contentHash(req.Message)
	for generation := 1; ; generation++ {
		row, in, entries, err := h.newTask(ctx, req, id, key)
		if err != nil {
			return nil, err
		}
		if err := withInput(row, in); err != nil {
			return nil, err
		}
		saved, err := s.commit(ctx, commitNote{in: in, cause: "start"}, row, entries, true)
		if err == nil {
			known := newKnownLog(true, false).add(entries, saved.Version)
			return &accepted{task: saved, known: known, work: &work{task: saved, in: in, request: in.Message, trace: s.obs.traceParent(ctx)}}, nil
		}
		if !errors.Is(err, store.ErrExists) {
			return nil, errInternal(err)
		}
		existing, dup, err := s.sameRequest(ctx, key, req.Message)
		if err != nil {
			return nil, errInternal(err)
		}
		if dup {
			s.obs.event(ctx, existing.Agent, api.EventRedelivery)
			return &accepted{task: existing}, nil
		}
		if existing == nil {
			// The ID was taken, not the key (an ID made elsewhere).
			id = string(a2a.NewTaskID())
			continue
		}
		if generation == 1 {
			s.log.Info("messageId reused for a new request; handled as a new message", slog.String("messageId", req.Message.ID))
		}
		if generation >= 64 {
			key = "" // reused without end: no key, so no redelivery is found
			continue
		}
		key = requestKey(req.Tenant, owner, h.name, req.Message.ID, append(salt, byte(generation)))
	}
}

// quickStart runs the first step of a new task before the task is written,
// and writes the task with the step's outcome. ok is false when it could not
// (no free worker, the ID is taken): the caller then takes the message the
// ordinary way, which finds a redelivery or picks the next ID.
func (h *Handler) quickStart(ctx context.Context, req *a2a.SendMessageRequest, id, key string) (*accepted, bool) {
	s := h.s
	// Locked by the request's key: two deliveries of one message to this
	// node run its step one after the other, and the second finds the
	// first's task. And by the task's ID: whatever reaches the task on this
	// node while its step runs unwritten (a sub-agent's notification to the
	// wake token the step handed out) waits for the write instead of
	// finding no task. Only this takes a key's lock, and it takes the ID's
	// after, so no two callers wait on each other. Across nodes (a shared
	// store) these locks hold nothing: a redelivery racing on another node
	// may run the same first step under the same key, and the request
	// key's unique index keeps one task (decision 0020).
	keyLock := s.lockTask(key)
	defer keyLock.Unlock()
	lock := s.lockTask(id)
	unlock := func() { lock.Unlock(); keyLock.Unlock() }
	defer unlock()
	row, in, entries, err := h.newTask(ctx, req, id, key)
	if err != nil {
		return nil, false
	}
	// No traceparent: the step runs within ctx's request, which the
	// observer is given (StepInfo.Request, decision 0230).
	w := &work{task: row, in: in, request: in.Message, pending: &pendingWrite{create: true, entries: entries}, lock: lock, unlock: unlock}
	final, ok := s.pool.runQuick(ctx, w)
	if !ok {
		return nil, false
	}
	return &accepted{task: final, known: w.known}, true
}

// newTask builds the row and the log of a new task for a first message,
// runnable under this node's lease.
func (h *Handler) newTask(ctx context.Context, req *a2a.SendMessageRequest, id, key string) (*store.Task, *runInput, []store.LogEntry, error) {
	s := h.s
	msg := *req.Message
	msg.TaskID = a2a.TaskID(id)
	if msg.ContextID == "" {
		msg.ContextID = a2a.NewContextID()
	}
	msg.Role = a2a.MessageRoleUser
	now := s.now()
	t := &store.Task{
		ID: id, RequestKey: key, ContextID: msg.ContextID, Tenant: req.Tenant, Owner: principalFrom(ctx), Agent: h.name,
		State:    a2a.TaskStateSubmitted,
		Runnable: true, LeaseOwner: s.cfg.NodeID, LeaseUntil: now.Add(s.cfg.LeaseDuration),
	}
	if len(req.Metadata) > 0 {
		raw, err := json.Marshal(req.Metadata)
		if err != nil {
			return nil, nil, nil, errInvalidParams("metadata cannot be encoded: %v", err)
		}
		t.Metadata = raw
	}
	ts := now
	status, _, _, err := wrapped(statusValue(&a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: &ts}), nil, nil)
	if err != nil {
		return nil, nil, nil, errInternal(err)
	}
	t.Status = status
	in := &runInput{Kind: inputStart, Key: startKey(t), Message: &msg}
	e, err := messageEntry(&msg, now)
	if err != nil {
		return nil, nil, nil, err
	}
	return t, in, []store.LogEntry{e}, nil
}

// continueTask takes a message to an existing task: an answer, a
// follow-up, a late or repeated delivery.
func (h *Handler) continueTask(ctx context.Context, req *a2a.SendMessageRequest, quick bool) (*accepted, error) {
	s := h.s
	id := string(req.Message.TaskID)
	if id == "" {
		return nil, errInvalidParams("message.taskId is required")
	}
	lock := s.lockTask(id)
	defer lock.Unlock()
	if quick {
		// Loaded under the lock, so that the store holds the task for a
		// quick step across nodes too (the other transitions wait for it).
		ctx = store.WithLock(ctx, lock)
	}
	var out *accepted
	sawOpen := ""  // the open question this request saw before it lost a race
	wrote := false // the attempt wrote the task
	// decide decides from l; kept says l is the row this node wrote
	// (rowCache), so that its request's bytes are this node's.
	decide := func(l *store.Loaded, kept bool) error {
		var err error
		t := l.Task
		if t.Agent != h.name || t.Tenant != req.Tenant || t.Owner != principalFrom(ctx) {
			return errTaskNotFound(id)
		}
		// Deduplication comes before every other rule, so a retry of an
		// answer that won gets the task back even after it finished.
		if dup, err := s.redelivered(t, l.Message, req.Message); err != nil {
			return errInternal(err)
		} else if dup {
			s.obs.event(ctx, t.Agent, api.EventRedelivery)
			out = &accepted{task: t}
			return nil
		}
		if req.Message.ContextID != "" && req.Message.ContextID != t.ContextID {
			return errInvalidParams("message.contextId %q does not match the context %q of task %q; omit contextId or send the task's own",
				req.Message.ContextID, t.ContextID, t.ID)
		}
		open := openQuestionID(t)
		if late := answersClosedQuestion(t.ID, open, req.Message); late || (sawOpen != "" && open != sawOpen) {
			// An answer to a question that is no longer open: it lost a
			// race to another answer (or came after one). The caller gets
			// the task as it now stands; the message is not taken, and
			// never bound to a later question.
			s.obs.event(ctx, t.Agent, api.EventAnswerConflict)
			out = &accepted{task: t}
			return nil
		}
		if t.State.Terminal() {
			return errTerminal(t)
		}
		msg := *req.Message
		msg.ContextID = t.ContextID
		msg.Role = a2a.MessageRoleUser
		var request *a2a.Message
		if len(l.Request) > 0 {
			if request, err = decodeMessage(l.Request); err != nil {
				return errInternal(fmt.Errorf("decode the request of task %s: %w", t.ID, err))
			}
		}

		var next *store.Task
		var entries []store.LogEntry
		var in *runInput
		switch t.State {
		case a2a.TaskStateInputRequired:
			next, entries, in, err = h.answer(t, &msg)
		case a2a.TaskStateAuthRequired:
			if err = s.credentialAwaited(t); err == nil {
				in = &runInput{Kind: inputAuth, Message: &msg, Key: fmt.Sprintf("%s/auth-%d", t.ID, t.Version)}
				next, entries, err = s.outcomes.resumeRow(t, in, &msg, "")
			}
		default:
			// Submitted or working: the task is busy with a step (or waits
			// for an event). The message is refused, not taken and
			// dropped: nothing is stored, and the caller may send it again
			// once the task pauses.
			return errBusy(t)
		}
		if errors.Is(err, errExpired) {
			// Too late: the question (or the request for a credential)
			// closed at its expiry even if no sweeper has acted on it yet.
			if err := s.expireLate(ctx, t); !errors.Is(err, store.ErrConflict) {
				return errInternal(err)
			}
			return store.ErrConflict
		}
		if err != nil {
			return err
		}
		if open != "" {
			sawOpen = open
		}
		var prior *knownLog
		if in != nil && in.Kind == inputAnswer {
			var paused *pauseState
			if in.pausedRow == t {
				paused = in.paused
			}
			var requestRaw json.RawMessage
			if kept {
				requestRaw = l.Request
			}
			asked, askedRaw := s.rows.statusMessage(t.ID, t.Version)
			prior = freshHistory(t, open, request, requestRaw, asked, askedRaw, paused)
		}
		if in != nil && quick && next.Runnable && lock.Holding() {
			// No traceparent, as for a quick start (decision 0230).
			w := &work{task: next, in: in, request: request, pending: &pendingWrite{entries: entries, from: t}, lock: lock, unlock: lock.Unlock, known: prior}
			if prior == nil {
				w.known = newKnownLog(false, len(t.Artifacts) == 0)
			}
			if final, ok := s.pool.runQuick(ctx, w); ok {
				wrote = true
				out = &accepted{task: final, known: w.known}
				return nil
			} else if w.lostPending {
				if w.pendingErr != nil && store.IsTransient(w.pendingErr) {
					return errInternal(w.pendingErr) // tried again by retryTransient
				}
				return store.ErrConflict // decide again from what won
			}
		}
		if err := withInput(next, in); err != nil {
			return err
		}
		saved, err := s.commit(ctx, commitNote{prev: t, in: in, cause: "answer"}, next, entries, false)
		if errors.Is(err, store.ErrConflict) {
			return err // someone else changed the task first: decide again
		}
		if err != nil {
			return errInternal(err)
		}
		wrote = true
		known := prior
		if known == nil {
			known = newKnownLog(false, len(t.Artifacts) == 0)
		}
		known = known.add(entries, saved.Version)
		out = &accepted{task: saved, known: known}
		if saved.Runnable && in != nil {
			out.work = &work{task: saved, in: in, request: request, trace: s.obs.traceParent(ctx)}
		}
		return nil
	}
	err := retryCAS(func() error {
		l, kept, err := s.rows.read(ctx, id, store.LoadParams{MessageID: req.Message.ID, Request: true})
		if errors.Is(err, store.ErrNotFound) {
			return errTaskNotFound(id)
		}
		if err != nil {
			return errInternal(err)
		}
		out, wrote = nil, false
		err = decide(l, kept)
		if kept && !wrote && !errors.Is(err, store.ErrConflict) {
			// A kept row decides only what it writes (a compare-and-set
			// checks it); an answer that writes nothing is decided again
			// from the store.
			s.rows.drop(id)
			return store.ErrConflict
		}
		return err
	})
	return out, err
}

// startKey is the idempotency key of a task's first step. It is made from
// the request key, not the task ID: a quick step runs before its task is
// written, and if the node dies before that write, the caller's redelivery
// makes a task with another ID, whose first step must still get the same
// key. A task without a request key (past 64 reuses of one messageId) has
// no redelivery to meet, and keys its first step by its ID.
func startKey(t *store.Task) string {
	if t.RequestKey != "" {
		return t.RequestKey + "/start"
	}
	return t.ID + "/start"
}

// errBusy refuses a message to a task that is running a step.
func errBusy(t *store.Task) error {
	what := "is working on a step"
	if t.State == a2a.TaskStateSubmitted {
		what = "has not started yet"
	} else if !t.Runnable {
		what = "is waiting for another agent"
	}
	return a2a.NewError(a2a.ErrUnsupportedOperation, fmt.Sprintf(
		"task %q %s and takes no message now; the message was not taken. Send it again when the task asks (input-required), or follow it with SubscribeToTask or GetTask",
		t.ID, what))
}

// answersClosedQuestion reports whether m answers a question task id asked
// before (a data part naming a question ID the runtime gave this task)
// that is not the open one.
func answersClosedQuestion(id, open string, m *a2a.Message) bool {
	for _, p := range m.Parts {
		d, ok := p.Content.(a2a.Data)
		if !ok {
			continue
		}
		obj, ok := d.Value.(map[string]any)
		if !ok {
			continue
		}
		qid, _ := obj["questionId"].(string)
		if qid != "" && qid != open && askedBy(id, qid) {
			return true
		}
	}
	return false
}

// questionID is the ID of the question a task asks at its version n: it
// names the task, so that an answer to a question the task no longer has
// open can be known for one without reading the history.
func questionID(taskID string, n int64) string {
	v := strconv.FormatInt(n, 36)
	return "q-" + v + "-" + questionMAC(taskID, v)
}

func questionMAC(taskID, v string) string {
	sum := sha256.Sum256([]byte("askpoint question\x00" + taskID + "\x00" + v))
	return hex.EncodeToString(sum[:6])
}

// askedBy reports whether qid is an ID questionID gave task taskID.
func askedBy(taskID, qid string) bool {
	rest, ok := strings.CutPrefix(qid, "q-")
	if !ok {
		return false
	}
	v, mac, ok := strings.Cut(rest, "-")
	return ok && v != "" && mac == questionMAC(taskID, v)
}

// openQuestionID is the ID of the task's open question, "" when none.
func openQuestionID(t *store.Task) string {
	if len(t.Question) == 0 {
		return ""
	}
	// The engine writes the question with json.Marshal, ID first: read it
	// in place when it needs no unescaping.
	const head = `{"questionId":"`
	if rest, ok := bytes.CutPrefix(t.Question, []byte(head)); ok {
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return string(rest[:i])
		}
	}
	var q struct {
		ID string `json:"questionId"`
	}
	_ = json.Unmarshal(t.Question, &q)
	return q.ID
}
