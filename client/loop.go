package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// loop is one run of the caller's loop on one task. It is used by one
// goroutine; its sources each run one call in a goroutine of their own.
type loop struct {
	c       *a2aclient.Client
	cfg     *config
	log     *slog.Logger
	request *a2a.Message // the message that started the task, if known

	first    *a2a.Message // the first message, until the agent made a task
	task     *a2a.Task    // the task as last seen
	reply    *a2a.Message // the agent's reply when it made no task
	rounds   int
	answers  []Answered
	answered map[string]*Answered // question key -> the answer sent for it
	pending  *pendingAnswer       // sent, not yet seen taken
	waiting  *Query               // the question a resolver deferred
	calls    []string
	failures int // dropped calls in a row
	noSub    bool

	paused  *Paused // Continue: the question answered
	settled bool    // the paused question's fate is recorded
	ackOnly bool    // Deliver: stop once the agent took the answer
	took    bool    // Deliver: the agent acknowledged the answer
}

type pendingAnswer struct {
	key string
	msg *a2a.Message
}

func newLoop(c *a2aclient.Client, cfg *config, request *a2a.Message) *loop {
	return &loop{c: c, cfg: cfg, log: cfg.logger, request: request, answered: map[string]*Answered{}}
}

func (l *loop) result() *Result {
	return &Result{
		Task: l.task, Message: l.reply, Rounds: l.rounds,
		Answers: append([]Answered(nil), l.answers...), Waiting: l.waiting,
		Calls: append([]string(nil), l.calls...),
	}
}

func (l *loop) run(ctx context.Context, m *a2a.Message) (*Result, error) {
	l.first = m
	return l.drive(ctx, l.send(ctx, m))
}

// resume answers the paused question of task id with ans, then drives
// the task on.
func (l *loop) resume(ctx context.Context, id a2a.TaskID, ans *Answer) (*Result, error) {
	p := l.paused
	t, err := l.getTask(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("client: read task %s of %s: %w", id, p.name(), err)
	}
	l.task = t
	if t.Status.State != a2a.TaskStateInputRequired || l.key() != p.Key {
		note := "the task is now " + text.StateWord(t.Status.State)
		if t.Status.State == a2a.TaskStateInputRequired {
			note = "the task asks another question now (" + l.key() + ")"
		}
		if err := p.Record.Closed(ctx, note); err != nil {
			return l.result(), err
		}
		return l.result(), fmt.Errorf("%w: %s asked question %s, but %s; it is closed", ErrStale, p.name(), p.Key, note)
	}
	src, err := l.deliver(ctx, nil, l.query(), ans)
	if err != nil {
		l.settle(ctx, err)
		return l.result(), err
	}
	if l.ackOnly {
		// The one event is the task as acknowledged (or, for a text-only
		// question declined, as canceled).
		ev, err := src.next(ctx)
		src.close()
		if err != nil {
			return l.result(), err
		}
		l.apply(ev)
		l.took = true
		l.settle(ctx, nil)
		return l.result(), nil
	}
	res, err := l.drive(ctx, src)
	l.settle(ctx, err)
	return res, err
}

// settle records what became of the paused question Continue answered.
// It runs after every event, so that the question is marked answered
// before a later question is deferred.
func (l *loop) settle(ctx context.Context, runErr error) {
	p := l.paused
	if p == nil || l.task == nil || l.settled {
		return
	}
	movedOn := l.took || l.task.Status.State != a2a.TaskStateInputRequired || l.key() != p.Key
	sent := l.answered[p.Key]
	l.settled = true
	switch {
	case sent != nil && movedOn:
		raw, _ := json.Marshal(sentValue(sent))
		by := sent.By
		if sent.Person != "" {
			by += " (" + sent.Person + ")"
		}
		if err := p.Record.Answered(ctx, by, raw); err != nil {
			l.log.Warn("paused question not recorded as answered", slog.String("record", p.name()), slog.Any("error", err))
		}
	case movedOn:
		_ = p.Record.Closed(ctx, "the task is now "+text.StateWord(l.task.Status.State))
	case errors.Is(runErr, a2a.ErrUnsupportedOperation):
		_ = p.Record.Closed(ctx, "the agent refused the answer: "+runErr.Error())
	default:
		l.settled = false
	}
}

func sentValue(a *Answered) any {
	switch {
	case a.Action != "":
		return map[string]any{"action": a.Action, "reason": a.Reason}
	case a.Fields != nil:
		return a.Fields
	}
	return a.Text
}

// drive reads events until the task is terminal, a question cannot be
// answered now, or something fails.
func (l *loop) drive(ctx context.Context, src *source) (*Result, error) {
	defer func() { src.close() }()
	for {
		ev, err := src.next(ctx)
		if err != nil {
			src.close()
			next, err := l.recover(ctx, src, err)
			if err != nil {
				return l.result(), err
			}
			if next == nil {
				return l.finish(ctx)
			}
			src = next
			continue
		}
		l.failures = 0
		l.apply(ev)
		l.settle(ctx, nil)
		if l.task == nil {
			if l.reply != nil {
				return l.finish(ctx)
			}
			continue
		}
		switch st := l.task.Status.State; {
		case st.Terminal():
			return l.finish(ctx)
		case st == a2a.TaskStateAuthRequired:
			return l.result(), fmt.Errorf("%w: task %s: %s", ErrAuthRequired, l.task.ID, statusText(l.task.Status))
		case st == a2a.TaskStateInputRequired:
			if _, done := l.answered[l.key()]; done {
				continue // our answer is on its way
			}
			q, ans, err := l.ask(ctx)
			if err != nil {
				return l.result(), err
			}
			src, err = l.deliver(ctx, src, q, ans)
			if err != nil {
				return l.result(), err
			}
		}
	}
}

// recover decides what to do when a call ends (err io.EOF) or fails:
// follow the task (subscribe or poll), send again, or give up. A nil
// source means the loop is done.
func (l *loop) recover(ctx context.Context, src *source, err error) (*source, error) {
	if ctx.Err() != nil {
		if l.task == nil {
			return nil, fmt.Errorf("client: stopped waiting for the agent: %w", ctx.Err())
		}
		return nil, fmt.Errorf("client: stopped waiting on task %s (%s): %w", l.task.ID, text.StateWord(l.task.Status.State), ctx.Err())
	}
	if errors.Is(err, io.EOF) {
		if l.task == nil {
			if l.reply != nil {
				return nil, nil
			}
			return nil, fmt.Errorf("client: %s ended without a task or a message from the agent", src.method)
		}
		return l.follow(ctx), nil
	}
	if isProtocolError(err) {
		switch {
		case src.method == "SubscribeToTask":
			// Some servers cannot subscribe to a paused task (or to one that
			// just ended): read it instead.
			l.log.Debug("subscribe refused; polling", slog.Any("error", err))
			l.noSub = true
			return l.poll(ctx), nil
		case src.method == "GetTask":
			return nil, fmt.Errorf("client: read task %s: %w", l.task.ID, err)
		case l.task == nil:
			return nil, fmt.Errorf("client: send the message: %s: %w", src.method, err)
		case l.pending != nil:
			return nil, fmt.Errorf("client: send the answer to question %s of task %s: %w", l.pending.key, l.task.ID, err)
		}
		return nil, fmt.Errorf("client: %s on task %s: %w", src.method, l.task.ID, err)
	}

	// The connection dropped or the call failed on the way.
	l.failures++
	if l.failures > l.cfg.retries {
		return nil, fmt.Errorf("client: the connection to the agent failed %d times in a row: %w", l.failures, err)
	}
	l.log.Debug("call failed; recovering", slog.String("method", src.method), slog.Any("error", err))
	if err := l.backoff(ctx); err != nil {
		return nil, err
	}
	if l.task == nil {
		// The agent may or may not have the first message: send it again
		// with the same messageId, which a server that deduplicates on
		// messageId (askpoint does) answers with the same task.
		return l.send(ctx, l.first), nil
	}
	if p := l.pending; p != nil {
		t, gerr := l.getTask(ctx, l.task.ID)
		if gerr != nil {
			if isProtocolError(gerr) {
				return nil, fmt.Errorf("client: read task %s after a dropped connection: %w", l.task.ID, gerr)
			}
			return l.follow(ctx), nil
		}
		if t.Status.State == a2a.TaskStateInputRequired && keyOf(t) == p.key {
			// The answer did not arrive (or was not taken yet): send it
			// again, same messageId.
			l.apply(t)
			return l.send(ctx, p.msg), nil
		}
		return onceSource(ctx, "GetTask", t), nil
	}
	return l.follow(ctx), nil
}

// backoff waits a little before a retry: 50ms, 100ms, ... up to 2s.
func (l *loop) backoff(ctx context.Context) error {
	d := 50 * time.Millisecond << min(l.failures-1, 6)
	d = min(d, 2*time.Second)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// send starts the call that delivers m: a stream or a blocking send.
func (l *loop) send(ctx context.Context, m *a2a.Message) *source {
	req := &a2a.SendMessageRequest{Message: m}
	if l.cfg.streaming {
		l.calls = append(l.calls, "SendStreamingMessage")
		return startSource(ctx, "SendStreamingMessage", true, func(ctx context.Context, emit func(a2a.Event) bool) error {
			for ev, err := range l.c.SendStreamingMessage(ctx, req) {
				if err != nil {
					return err
				}
				if !emit(ev) {
					return ctx.Err()
				}
			}
			return nil
		})
	}
	l.calls = append(l.calls, "SendMessage")
	return startSource(ctx, "SendMessage", false, func(ctx context.Context, emit func(a2a.Event) bool) error {
		res, err := l.c.SendMessage(ctx, req)
		if err != nil {
			return err
		}
		ev, ok := res.(a2a.Event)
		if !ok {
			return fmt.Errorf("client: SendMessage returned %T", res)
		}
		if !emit(ev) {
			return ctx.Err()
		}
		return nil
	})
}

// follow watches the task until it changes: a SubscribeToTask stream when
// streaming (and the server allows it), else GetTask polls.
func (l *loop) follow(ctx context.Context) *source {
	if !l.cfg.streaming || l.noSub {
		return l.poll(ctx)
	}
	id := l.task.ID
	l.calls = append(l.calls, "SubscribeToTask")
	return startSource(ctx, "SubscribeToTask", true, func(ctx context.Context, emit func(a2a.Event) bool) error {
		for ev, err := range l.c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			if err != nil {
				return err
			}
			if !emit(ev) {
				return ctx.Err()
			}
		}
		return nil
	})
}

// poll reads the task with GetTask, first every cfg.poll and then less
// often while nothing changes, and yields it each time it changed; it ends
// at a terminal state.
func (l *loop) poll(ctx context.Context) *source {
	id := l.task.ID
	l.calls = append(l.calls, "GetTask")
	first, maxEvery := l.cfg.poll, 10*l.cfg.poll
	return startSource(ctx, "GetTask", false, func(ctx context.Context, emit func(a2a.Event) bool) error {
		every := first
		last := ""
		for {
			t, err := l.c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
			if err != nil {
				return err
			}
			if sig := signature(t); sig != last {
				last, every = sig, first
				if !emit(t) {
					return ctx.Err()
				}
				if t.Status.State.Terminal() {
					return nil
				}
			} else {
				every = min(2*every, maxEvery)
			}
			timer := time.NewTimer(every)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			}
		}
	})
}

func signature(t *a2a.Task) string {
	return fmt.Sprintf("%s|%s|%d", t.Status.State, keyOf(t), len(t.Artifacts))
}

func (l *loop) getTask(ctx context.Context, id a2a.TaskID) (*a2a.Task, error) {
	l.calls = append(l.calls, "GetTask")
	return l.c.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
}

// apply folds an event into the task as last seen.
func (l *loop) apply(ev a2a.Event) {
	switch v := ev.(type) {
	case *a2a.Task:
		if l.task != nil && v.ID != l.task.ID {
			return
		}
		l.task = v
		l.first = nil
	case *a2a.TaskStatusUpdateEvent:
		if l.task == nil {
			l.task = &a2a.Task{ID: v.TaskID, ContextID: v.ContextID}
			l.first = nil
		}
		if v.TaskID != l.task.ID {
			return
		}
		l.task.Status = v.Status
	case *a2a.TaskArtifactUpdateEvent:
		if l.task == nil || v.TaskID != l.task.ID || v.Artifact == nil {
			return
		}
		for i, a := range l.task.Artifacts {
			if a.ID == v.Artifact.ID {
				if v.Append {
					a.Parts = append(a.Parts, v.Artifact.Parts...)
				} else {
					l.task.Artifacts[i] = v.Artifact
				}
				return
			}
		}
		l.task.Artifacts = append(l.task.Artifacts, v.Artifact)
	case *a2a.Message:
		if l.task == nil {
			l.reply = v
		}
	}
	if l.pending != nil && l.task != nil &&
		(l.task.Status.State != a2a.TaskStateInputRequired || l.key() != l.pending.key) {
		l.pending = nil // the agent took the answer
	}
}

// key identifies the question the task asks now.
func (l *loop) key() string { return keyOf(l.task) }

func keyOf(t *a2a.Task) string {
	if t == nil || t.Status.State != a2a.TaskStateInputRequired {
		return ""
	}
	if k := QuestionKey(t.Status.Message); k != "" {
		return k
	}
	if t.Status.Timestamp != nil {
		return "at-" + t.Status.Timestamp.UTC().Format(time.RFC3339Nano)
	}
	return "unkeyed"
}

// QuestionKey identifies the question a status message asks within its
// task: the questionId of a question-extension data part, else the
// message's ID. It is "" for a nil message.
func QuestionKey(status *a2a.Message) string {
	if status == nil {
		return ""
	}
	if q, ok, err := question.FromMessage(status); ok && err == nil {
		return q.ID
	}
	return status.ID
}

// query describes the open question for the resolvers.
func (l *loop) query() *Query {
	st := l.task.Status
	q := &Query{
		Agent: l.cfg.agentURL, Caller: l.cfg.caller,
		TaskID: l.task.ID, ContextID: l.task.ContextID,
		Request: l.request, Status: st.Message,
		Round: l.rounds + 1, MaxRounds: l.cfg.maxRounds,
	}
	if qq, ok, err := question.FromMessage(st.Message); ok && err == nil {
		q.Question, q.Text = qq, qq.Text
		if qq.Attempt > 1 && len(l.answers) > 0 {
			last := l.answers[len(l.answers)-1]
			q.Refused = &last
		}
	} else {
		q.Text = statusText(st)
	}
	return q
}

// ask gets an answer to the open question, or cancels the task when the
// round cap is reached.
func (l *loop) ask(ctx context.Context) (*Query, *Answer, error) {
	q := l.query()
	if l.rounds >= l.cfg.maxRounds {
		msg := fmt.Sprintf("it asked again (%q) after %d answered questions", text.FirstLine(q.Text), l.rounds)
		t, err := l.cancel(ctx, "the agent kept asking: "+msg)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %s; canceling task %s failed: %v", ErrKeptAsking, msg, l.task.ID, err)
		}
		l.task = t
		return nil, nil, fmt.Errorf("%w: %s; task %s was canceled", ErrKeptAsking, msg, l.task.ID)
	}
	ans, err := l.resolve(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	return q, ans, nil
}

func (l *loop) cancel(ctx context.Context, reason string) (*a2a.Task, error) {
	l.calls = append(l.calls, "CancelTask")
	return l.c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: l.task.ID, Metadata: map[string]any{"askpoint.reason": reason}})
}

// resolve asks the chain in order. A machine answer that fails the
// question locally, or repeats the answer the agent just refused, is
// passed over.
func (l *loop) resolve(ctx context.Context, q *Query) (*Answer, error) {
	for _, r := range l.cfg.resolvers {
		a, err := r.Resolve(ctx, q)
		if err != nil {
			if errors.Is(err, ErrDeferred) {
				l.waiting = q
				return nil, err
			}
			return nil, fmt.Errorf("client: answering question %s of task %s: %w", qid(q), q.TaskID, err)
		}
		if a == nil {
			continue
		}
		if a.By == "" {
			a.By = fmt.Sprintf("%T", r)
		}
		if q.Refused != nil && sameAnswer(a, &q.Refused.Answer) {
			l.log.Debug("resolver repeats the refused answer; passing over it", slog.String("by", a.By))
			continue
		}
		if problem := usable(q, a); problem != "" {
			l.log.Debug("answer passed over", slog.String("by", a.By), slog.String("why", problem))
			continue
		}
		return a, nil
	}
	return nil, fmt.Errorf("%w: question %s of task %s (%q); the task stays paused", ErrUnanswered, qid(q), q.TaskID, text.FirstLine(q.Text))
}

// usable says why an answer cannot be sent for q ("" when it can). It may
// turn a one-string-field answer to a text-only question into text.
func usable(q *Query, a *Answer) string {
	switch a.Action {
	case "":
	case question.ActionDecline, question.ActionCancel:
		return ""
	default:
		return fmt.Sprintf("unknown action %q", a.Action)
	}
	if q.Question == nil {
		if a.Text == "" && len(a.Fields) == 1 {
			for _, v := range a.Fields {
				if s, ok := v.(string); ok {
					a.Text, a.Fields = s, nil
				}
			}
		}
		if strings.TrimSpace(a.Text) == "" {
			return "the question is text only and the answer has no text"
		}
		return ""
	}
	if a.Fields != nil {
		if errs := validateFields(q.Question, a.Fields); len(errs) > 0 {
			return question.ErrorsText(errs)
		}
		return ""
	}
	if strings.TrimSpace(a.Text) == "" {
		return "the answer is empty"
	}
	return ""
}

func qid(q *Query) string {
	if q.Question != nil {
		return q.Question.ID
	}
	if q.Status != nil && q.Status.ID != "" {
		return q.Status.ID
	}
	return "(unnamed)"
}

// deliver sends the answer: alongside an open stream, which goes on
// reporting the task, or as a new call. It returns the source to read next.
func (l *loop) deliver(ctx context.Context, src *source, q *Query, a *Answer) (*source, error) {
	key := l.key()
	rec := Answered{Answer: *a, Round: q.Round}
	if q.Question != nil {
		rec.QuestionID = q.Question.ID
	}
	l.rounds++
	l.log.Debug("answering", slog.String("question", qid(q)), slog.String("by", a.By), slog.Int("round", q.Round))

	if a.Action != "" && q.Question == nil {
		// A text-only question has no way to say decline or cancel: cancel
		// the task.
		src.close()
		reason := "the caller will not answer (" + a.By + ")"
		if a.Reason != "" {
			reason += ": " + a.Reason
		}
		l.record(key, rec)
		t, err := l.cancel(ctx, reason)
		if err != nil {
			return nil, fmt.Errorf("client: cancel task %s instead of answering: %w", l.task.ID, err)
		}
		return onceSource(ctx, "CancelTask", t), nil
	}

	msg := l.answerMessage(q, a)
	rec.MessageID = msg.ID
	l.record(key, rec)
	l.pending = &pendingAnswer{key: key, msg: msg}

	if src != nil && src.live() {
		// The server keeps the stream open: deliver the answer on the side
		// and keep reading the stream.
		if _, err := l.sideSend(ctx, msg, key); err != nil {
			src.close()
			return nil, err
		}
		return src, nil
	}
	src.close()
	if l.ackOnly {
		t, err := l.sideSend(ctx, msg, key)
		if err != nil {
			return nil, err
		}
		return onceSource(ctx, "SendMessage", t), nil
	}
	return l.send(ctx, msg), nil
}

func (l *loop) record(key string, rec Answered) {
	l.answers = append(l.answers, rec)
	l.answered[key] = &rec
}

// sideSend delivers an answer with returnImmediately: while a stream
// stays open, which reports what follows, or for Deliver. It returns the
// task as the agent acknowledged it (the task as last seen when the reply
// names no task).
func (l *loop) sideSend(ctx context.Context, msg *a2a.Message, key string) (*a2a.Task, error) {
	req := &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}}
	for attempt := 0; ; attempt++ {
		l.calls = append(l.calls, "SendMessage")
		res, err := l.c.SendMessage(ctx, req)
		if err == nil {
			if t, ok := res.(*a2a.Task); ok && t.ID == l.task.ID {
				return t, nil
			}
			return l.task, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if isProtocolError(err) {
			return nil, fmt.Errorf("client: send the answer to question %s of task %s: %w", key, l.task.ID, err)
		}
		if attempt >= l.cfg.retries {
			return nil, fmt.Errorf("client: send the answer to question %s of task %s: the connection failed %d times: %w", key, l.task.ID, attempt+1, err)
		}
		l.failures = attempt + 1
		if err := l.backoff(ctx); err != nil {
			return nil, err
		}
		if t, gerr := l.getTask(ctx, l.task.ID); gerr == nil && keyOf(t) != key {
			return t, nil // it arrived after all
		}
	}
}

// answerMessage builds the answer: a data part keyed by the question's ID
// (the question extension) when the question has one, else text; with
// metadata that says who answered.
func (l *loop) answerMessage(q *Query, a *Answer) *a2a.Message {
	meta := map[string]any{MetaAnsweredBy: a.By}
	if a.Rule != "" {
		meta[MetaRule] = a.Rule
	}
	if a.Person != "" {
		meta[MetaPerson] = a.Person
	}
	meta[question.DecisionKey] = decisionRecord(q, a, time.Now()).Metadata()
	msg := &a2a.Message{
		ID: a2a.NewMessageID(), Role: a2a.MessageRoleUser,
		TaskID: l.task.ID, ContextID: l.task.ContextID, Metadata: meta,
	}
	var obj map[string]any
	switch {
	case q.Question != nil && a.Action != "":
		obj = map[string]any{"questionId": q.Question.ID, "action": a.Action}
		if a.Reason != "" {
			obj["reason"] = a.Reason
		}
	case q.Question != nil && a.Fields != nil:
		obj = make(map[string]any, len(a.Fields)+1)
		for k, v := range a.Fields {
			obj[k] = v
		}
		obj["questionId"] = q.Question.ID
	}
	if obj != nil {
		p := a2a.NewDataPart(obj)
		p.MediaType = question.MediaTypeJSON
		msg.Parts = a2a.ContentParts{p}
		msg.Extensions = []string{question.ExtensionURI}
		return msg
	}
	msg.Parts = a2a.ContentParts{a2a.NewTextPart(a.Text)}
	return msg
}

// decisionRecord says, bound to the question, who decided what (the
// question extension's decision record).
func decisionRecord(q *Query, a *Answer, now time.Time) question.Decision {
	d := question.Decision{
		Version: question.DecisionVersion,
		By:      question.Decider{Kind: a.By, Name: a.Person, Rule: a.Rule, Via: a.Via},
		At:      now.UTC().Truncate(time.Millisecond), Justification: a.Justification,
	}
	if d.Justification == "" && a.Action != "" {
		d.Justification = a.Reason
	}
	if qq := q.Question; qq != nil {
		d.QuestionID, d.QuestionDigest = qq.ID, question.Digest(qq)
		d.Decision = qq.DecisionFor(a.Action, a.Fields)
		return d
	}
	d.QuestionID, d.QuestionDigest = qid(q), question.DigestText(q.Text)
	d.Decision = (*question.Question)(nil).DecisionFor(a.Action, nil)
	return d
}

// finish reads the terminal task once more (the authoritative copy, with
// every artifact) and returns the result.
func (l *loop) finish(ctx context.Context) (*Result, error) {
	if l.task == nil {
		return l.result(), nil
	}
	if t, err := l.getTask(ctx, l.task.ID); err == nil && t.Status.State.Terminal() {
		l.task = t
	}
	res := l.result()
	if st := l.task.Status.State; st != a2a.TaskStateCompleted {
		return res, &EndedError{TaskID: l.task.ID, State: st, Reason: statusText(l.task.Status)}
	}
	return res, nil
}

// isProtocolError says whether err is the agent's answer (an A2A error)
// rather than a failed connection.
func isProtocolError(err error) bool {
	var ae *a2a.Error
	if errors.As(err, &ae) {
		return true
	}
	for _, e := range []error{
		a2a.ErrTaskNotFound, a2a.ErrInvalidParams, a2a.ErrInvalidRequest, a2a.ErrUnsupportedOperation,
		a2a.ErrTaskNotCancelable, a2a.ErrMethodNotFound, a2a.ErrVersionNotSupported, a2a.ErrUnauthenticated,
		a2a.ErrUnauthorized, a2a.ErrParseError, a2a.ErrUnsupportedContentType, a2a.ErrExtensionSupportRequired,
		a2a.ErrPushNotificationNotSupported, a2a.ErrInvalidAgentResponse,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func statusText(s a2a.TaskStatus) string {
	if s.Message == nil {
		return ""
	}
	var texts []string
	for _, p := range s.Message.Parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			texts = append(texts, string(t))
		}
	}
	return strings.Join(texts, "\n")
}
