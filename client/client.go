// Package client is the caller's side of askpoint: a loop on top of the
// a2a-go client that sends a message to any A2A 1.0 agent and, while the
// task is input-required, answers the agent's questions from a chain of
// resolvers (what the caller already knows, then policy, then a person), on
// the same task and context with a fresh messageId each time, until the
// task is terminal. Only then are artifacts read: a paused task's partial
// artifacts are never the result.
//
// A person may take hours. The Person resolver does not wait: it records
// the question in a durable inbox (package inbox) and the loop returns an
// error wrapping ErrDeferred. The loop is resumed from the inbox by Resume,
// in this process or another one after a restart.
//
// The loop works whether the agent's server closes a stream at
// input-required or keeps it open, and recovers from a dropped connection
// by resubscribing to the task or polling it.
package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// DefaultMaxRounds is how many questions the loop answers on one task
// before it cancels the task, unless WithMaxRounds says otherwise.
const DefaultMaxRounds = 3

var (
	// ErrKeptAsking: the agent asked more questions than the round cap
	// allows; the loop canceled the task.
	ErrKeptAsking = errors.New("client: the agent kept asking")
	// ErrDeferred: the question was handed to a person through the inbox;
	// the task stays paused until the answer is sent (Resume). The error is
	// a *DeferredError.
	ErrDeferred = errors.New("client: the question waits on a person")
	// ErrUnanswered: no resolver in the chain answered; the task stays
	// paused.
	ErrUnanswered = errors.New("client: no resolver answered the question")
	// ErrNotCompleted: the task ended failed, rejected or canceled. The
	// error is an *EndedError.
	ErrNotCompleted = errors.New("client: the task ended without completing")
	// ErrAuthRequired: the agent paused the task in auth-required, which
	// this loop cannot answer; the task stays paused.
	ErrAuthRequired = errors.New("client: the agent needs authorization")
	// ErrStale: the inbox item's question no longer takes answers (the
	// task moved on or ended); the item was closed.
	ErrStale = errors.New("client: the question is no longer open")
	// ErrInvalidAnswer: an answer given to Resume fails the question's
	// schema or options; nothing was sent. The error is an
	// *InvalidAnswerError.
	ErrInvalidAnswer = errors.New("client: the answer is not valid")
)

// DeferredError says where the question waits for a person.
type DeferredError struct {
	Item *inbox.Item
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("client: question %s of task %s waits on a person in inbox item %d", e.Item.Key, e.Item.TaskID, e.Item.ID)
}

// Is makes errors.Is(err, ErrDeferred) true.
func (e *DeferredError) Is(target error) bool { return target == ErrDeferred }

// EndedError says how a task ended when it did not complete.
type EndedError struct {
	TaskID a2a.TaskID
	State  a2a.TaskState
	Reason string // the status message's text, if any
}

func (e *EndedError) Error() string {
	s := fmt.Sprintf("client: task %s ended %s", e.TaskID, text.StateWord(e.State))
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// Is makes errors.Is(err, ErrNotCompleted) true.
func (e *EndedError) Is(target error) bool { return target == ErrNotCompleted }

// InvalidAnswerError lists why an answer was refused locally.
type InvalidAnswerError struct {
	Errors []question.FieldError
}

func (e *InvalidAnswerError) Error() string {
	return "client: the answer is not valid: " + question.ErrorsText(e.Errors)
}

// Is makes errors.Is(err, ErrInvalidAnswer) true.
func (e *InvalidAnswerError) Is(target error) bool { return target == ErrInvalidAnswer }

// Result is what the loop saw. Run and Resume return a non-nil Result
// whenever the agent created a task, with or without an error.
type Result struct {
	// Task is the task as last seen: terminal when the error is nil or an
	// *EndedError; paused (input-required) when the question waits on a
	// person or nobody answered.
	Task *a2a.Task
	// Message is the agent's reply when it answered with a message and
	// created no task.
	Message *a2a.Message
	// Rounds counts the questions answered on this task (across Resume).
	Rounds int
	// Answers lists the answers this loop sent, in order, and who gave
	// them.
	Answers []Answered
	// Waiting is the inbox item of a question handed to a person.
	Waiting *inbox.Item
	// Calls lists the A2A methods the loop called, in order
	// (SendMessage, SendStreamingMessage, SubscribeToTask, GetTask,
	// CancelTask; a run of GetTask polls counts once); for logs and tests.
	Calls []string
}

// State is the task's state ("" when there is no task).
func (r *Result) State() a2a.TaskState {
	if r == nil || r.Task == nil {
		return ""
	}
	return r.Task.Status.State
}

// Artifacts are the completed task's artifacts. They are nil unless the
// task completed: a paused or failed task's artifacts are not a result.
func (r *Result) Artifacts() []*a2a.Artifact {
	if r.State() != a2a.TaskStateCompleted {
		return nil
	}
	return r.Task.Artifacts
}

// Option configures Run and Resume.
type Option func(*config)

type config struct {
	resolvers    []Resolver
	maxRounds    int
	maxRoundsSet bool
	streaming    bool
	poll         time.Duration
	retries      int
	agentURL     string
	caller       string
	logger       *slog.Logger
	dial         func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
}

func newConfig(opts []Option) *config {
	c := &config{maxRounds: DefaultMaxRounds, poll: 200 * time.Millisecond, retries: 5}
	for _, o := range opts {
		o(c)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// WithResolvers sets the resolver chain, tried in order for each question
// (typically Facts, a *Policy, then Person). Without resolvers every
// question ends the loop with ErrUnanswered.
func WithResolvers(rs ...Resolver) Option {
	return func(c *config) { c.resolvers = append(c.resolvers[:0:0], rs...) }
}

// WithMaxRounds caps the questions answered on one task (default
// DefaultMaxRounds; Resume defaults to the cap the item was recorded with). When the agent asks once more, the loop cancels the
// task and returns an error wrapping ErrKeptAsking.
func WithMaxRounds(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxRounds, c.maxRoundsSet = n, true
		}
	}
}

// WithStreaming makes the loop use SendStreamingMessage and
// SubscribeToTask instead of blocking SendMessage calls and polling.
func WithStreaming(on bool) Option { return func(c *config) { c.streaming = on } }

// WithPollInterval sets the first interval between GetTask polls (default
// 200ms); it doubles while nothing changes, up to ten times the first.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.poll = d
		}
	}
}

// WithRetries sets how many dropped connections in a row the loop recovers
// from before it gives up (default 5).
func WithRetries(n int) Option {
	return func(c *config) {
		if n >= 0 {
			c.retries = n
		}
	}
}

// WithAgentURL tells the loop the agent's URL: policy rules match on it,
// and the Person resolver records it so that the answer can be sent later.
func WithAgentURL(url string) Option { return func(c *config) { c.agentURL = url } }

// WithCaller names on whose behalf the loop runs; policy rules with a
// "caller" condition match on it, and the inbox records it.
func WithCaller(name string) Option { return func(c *config) { c.caller = name } }

// WithLogger receives the loop's debug logs (default: none).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithDialer sets how Resume connects to the agent of an inbox item
// (default: Dial with http.DefaultClient's settings).
func WithDialer(dial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)) Option {
	return func(c *config) { c.dial = dial }
}

// Run sends msg to the agent behind c and drives the task to a terminal
// state, answering each question from the resolver chain.
//
// It returns (result, nil) when the task completed (or the agent replied
// with a message and no task). Otherwise the error says why, and is one of:
// an *EndedError (ErrNotCompleted) when the task failed, was rejected or
// canceled; ErrKeptAsking when the round cap canceled the task; a
// *DeferredError (ErrDeferred) when a person will answer later;
// ErrUnanswered; ErrAuthRequired; a protocol error from the agent; or
// ctx's error. The task stays paused after ErrDeferred, ErrUnanswered,
// ErrAuthRequired and a canceled ctx.
//
// msg is sent as given, with a new messageId when it has none; a msg with a
// TaskID continues that task.
func Run(ctx context.Context, c *a2aclient.Client, msg *a2a.Message, opts ...Option) (*Result, error) {
	if c == nil {
		return nil, errors.New("client: Run needs an a2aclient.Client")
	}
	if msg == nil || len(msg.Parts) == 0 {
		return nil, errors.New("client: Run needs a message with at least one part")
	}
	m := *msg
	if m.ID == "" {
		m.ID = a2a.NewMessageID()
	}
	if m.Role == a2a.MessageRoleUnspecified {
		m.Role = a2a.MessageRoleUser
	}
	l := newLoop(c, newConfig(opts), &m)
	return l.run(ctx, &m)
}

// Resume answers the open question of inbox item itemID with ans and drives
// the task on, like Run: later questions go through the resolver chain
// (WithResolvers), and may be deferred to the inbox again. It connects to
// the item's agent (or, for an item that does not name one, the agent of
// WithAgentURL) with the dialer (WithDialer, default Dial).
//
// The answer is checked against the question before anything is sent: an
// invalid one returns an *InvalidAnswerError and leaves the item open. When
// the task no longer asks the item's question, the item is closed and the
// error wraps ErrStale. Once the agent has taken the answer, the item is
// marked answered with ans.By (default ByPerson).
func Resume(ctx context.Context, ib *inbox.Inbox, itemID int64, ans Answer, opts ...Option) (*Result, error) {
	if ib == nil {
		return nil, errors.New("client: Resume needs the inbox")
	}
	it, err := ib.Get(ctx, itemID)
	if err != nil {
		return nil, err
	}
	if it.State != inbox.StateOpen {
		return nil, fmt.Errorf("%w: inbox item %d is %s", ErrStale, it.ID, it.StateText())
	}
	if ans.By == "" {
		ans.By = ByPerson
	}
	if it.Question != nil && ans.Action == "" && ans.Text == "" {
		if errs := validateFields(it.Question, ans.Fields); len(errs) > 0 {
			return nil, &InvalidAnswerError{Errors: errs}
		}
	}
	if it.Question == nil && ans.Action == "" && ans.Text == "" {
		return nil, fmt.Errorf("%w: question %s was asked in text only; answer it with text", ErrInvalidAnswer, it.Key)
	}

	cfg := newConfig(opts)
	if it.AgentURL != "" {
		cfg.agentURL = it.AgentURL
	}
	if cfg.agentURL == "" {
		return nil, fmt.Errorf("client: inbox item %d does not say which agent asked (it came from a push without ?agent=); pass the agent's URL with WithAgentURL", it.ID)
	}
	if cfg.caller == "" {
		cfg.caller = it.Caller
	}
	if it.MaxRounds > 0 && !cfg.maxRoundsSet {
		cfg.maxRounds = it.MaxRounds
	}
	dial := cfg.dial
	if dial == nil {
		dial = func(ctx context.Context, url string) (*a2aclient.Client, error) { return Dial(ctx, url, nil) }
	}
	c, err := dial(ctx, cfg.agentURL)
	if err != nil {
		return nil, err
	}
	defer c.Destroy()

	l := newLoop(c, cfg, it.Request)
	l.item, l.inbox = it, ib
	if it.Round > 0 {
		l.rounds = it.Round - 1
	}
	return l.resume(ctx, it, &ans)
}
