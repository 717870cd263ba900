// Package client is the caller's side of askpoint: a loop on top of the
// a2a-go client that sends a message to any A2A 1.0 agent and, while the
// task is input-required, answers the agent's questions from a chain of
// resolvers (what the caller already knows, then policy, then a person), on
// the same task and context with a fresh messageId each time, until the
// task is terminal. Only then are artifacts read: a paused task's partial
// artifacts are never the result.
//
// A person may take hours. A resolver that hands a question to a person
// does not wait: it records the question somewhere durable and returns an
// error wrapping ErrDeferred, and so does the loop. Package inbox is such a
// place (inbox.Person records the question, inbox.Resume answers it later,
// in this process or another one after a restart); it builds on Continue,
// which answers a paused question and drives its task on.
//
// The package speaks the JSON-RPC and HTTP+JSON bindings and links neither
// SQLite nor gRPC: package client/grpcdial adds the gRPC binding, and the
// durable inbox imports this package, not the reverse.
//
// The loop works whether the agent's server closes a stream at
// input-required or keeps it open, and recovers from a dropped connection
// by resubscribing to the task or polling it.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

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
	// ErrDeferred: a resolver handed the question to a person who answers
	// later; the task stays paused until the answer is sent (Continue, or
	// inbox.Resume). The error is the resolver's: inbox.Person's is an
	// *inbox.DeferredError that names the inbox item.
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
	// ErrStale: the paused question no longer takes answers (the task
	// moved on or ended); its record was closed.
	ErrStale = errors.New("client: the question is no longer open")
	// ErrInvalidAnswer: an answer given to Continue fails the question's
	// schema or options; nothing was sent. The error is an
	// *InvalidAnswerError.
	ErrInvalidAnswer = errors.New("client: the answer is not valid")
)

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

// Result is what the loop saw. Run and Continue return a non-nil Result
// whenever the agent created a task, with or without an error.
type Result struct {
	// Task is the task as last seen: terminal when the error is nil or an
	// *EndedError; paused (input-required) when the question waits on a
	// person or nobody answered.
	Task *a2a.Task
	// Message is the agent's reply when it answered with a message and
	// created no task.
	Message *a2a.Message
	// Rounds counts the questions answered on this task (across Continue).
	Rounds int
	// Answers lists the answers this loop sent, in order, and who gave
	// them.
	Answers []Answered
	// Waiting is the question handed to a person (ErrDeferred), as the
	// resolvers saw it; the error says where it waits.
	Waiting *Query
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

// Option configures Run and Continue.
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
// (typically Facts, a *Policy, then inbox.Person). Without resolvers every
// question ends the loop with ErrUnanswered.
func WithResolvers(rs ...Resolver) Option {
	return func(c *config) { c.resolvers = append(c.resolvers[:0:0], rs...) }
}

// WithMaxRounds caps the questions answered on one task (default
// DefaultMaxRounds; Continue defaults to the cap the paused question was
// recorded with). When the agent asks once more, the loop cancels the task
// and returns an error wrapping ErrKeptAsking.
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
// and a resolver that defers the question (inbox.Person) records it so
// that the answer can be sent later.
func WithAgentURL(url string) Option { return func(c *config) { c.agentURL = url } }

// WithCaller names on whose behalf the loop runs; policy rules with a
// "caller" condition match on it, and a deferring resolver records it.
func WithCaller(name string) Option { return func(c *config) { c.caller = name } }

// WithLogger receives the loop's debug logs (default: none).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithDialer sets how Continue connects to the agent of a paused question
// (default: Dial with a plain http.Client, which speaks JSON-RPC and
// HTTP+JSON; pass grpcdial.Dial for gRPC).
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

// Follow drives task id on from where it is now, like Run after its
// first message: for a task someone else answers (a person in the web
// inbox) while this caller waits for what follows. The task's next
// questions go through the resolver chain; a terminal task is its result
// at once. Nothing is sent to the agent but what the resolvers answer.
func Follow(ctx context.Context, c *a2aclient.Client, id a2a.TaskID, opts ...Option) (*Result, error) {
	if c == nil {
		return nil, errors.New("client: Follow needs an a2aclient.Client")
	}
	l := newLoop(c, newConfig(opts), nil)
	t, err := l.getTask(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("client: read task %s: %w", id, err)
	}
	return l.drive(ctx, onceSource(ctx, "GetTask", t))
}

// Paused is a question that waited on someone and is answered now with
// Continue: the question as the resolvers saw it when it was deferred, and
// where to record what became of it. A deferring resolver keeps what it
// needs to build one (package inbox keeps an item).
type Paused struct {
	// Query is the question. Query.Agent is where the answer goes (""
	// means the agent of WithAgentURL); Query.Caller, Query.Round and
	// Query.MaxRounds carry the loop's bookkeeping on (WithCaller and
	// WithMaxRounds win over them).
	Query *Query
	// Key identifies the question within its task (see QuestionKey):
	// when the task asks another one, this one is stale.
	Key string
	// Name names the record in errors, for people: "inbox item 7".
	Name string
	// Record is told what became of the question.
	Record Record
}

func (p *Paused) name() string {
	if p.Name == "" {
		return "paused question " + p.Key
	}
	return p.Name
}

// Record keeps what became of a paused question. Continue calls it once,
// when the question's fate is known; package inbox's implementation
// updates the item.
type Record interface {
	// Answered: the agent took the answer that by gave; answer is what
	// was sent (the fields, the text as a JSON string, or the action).
	Answered(ctx context.Context, by string, answer json.RawMessage) error
	// Closed: the question no longer takes answers and was not answered
	// from here; note says why. A record closed already is no error.
	Closed(ctx context.Context, note string) error
}

// Continue answers the paused question p with ans and drives the task on,
// like Run: later questions go through the resolver chain
// (WithResolvers), and may be deferred again. It connects to the
// question's agent (or, when the question does not name one, the agent of
// WithAgentURL) with the dialer (WithDialer, default Dial).
//
// The answer is checked against the question before anything is sent: an
// invalid one returns an *InvalidAnswerError and leaves the record open.
// When the task no longer asks the question, the record is closed and the
// error wraps ErrStale. Once the agent has taken the answer, the record is
// marked answered with ans.By (default ByPerson).
func Continue(ctx context.Context, p *Paused, ans Answer, opts ...Option) (*Result, error) {
	return answerPaused(ctx, "Continue", p, ans, opts, true)
}

// Deliver answers the paused question p with ans, as Continue does, and
// returns once the agent has taken the answer instead of driving the task
// on: the answer goes with A2A's returnImmediately, and Result.Task is the
// task as the agent acknowledged it (working, or already asking again).
// For a caller that reports progress elsewhere (GetTask, Follow) and must
// not hold its own caller while the agent works: an MCP client's
// tasks/update, say. The checks, the record and the errors are
// Continue's; resolvers are not consulted, since nothing is read after
// the answer.
func Deliver(ctx context.Context, p *Paused, ans Answer, opts ...Option) (*Result, error) {
	return answerPaused(ctx, "Deliver", p, ans, opts, false)
}

func answerPaused(ctx context.Context, fn string, p *Paused, ans Answer, opts []Option, drive bool) (*Result, error) {
	if p == nil || p.Query == nil || p.Record == nil {
		return nil, fmt.Errorf("client: %s needs the paused question, with its Query and Record", fn)
	}
	q := p.Query
	if ans.By == "" {
		ans.By = ByPerson
	}
	if q.Question != nil && ans.Action == "" && ans.Text == "" {
		if errs := validateFields(q.Question, ans.Fields); len(errs) > 0 {
			return nil, &InvalidAnswerError{Errors: errs}
		}
	}
	if q.Question == nil && ans.Action == "" && ans.Text == "" {
		return nil, fmt.Errorf("%w: question %s was asked in text only; answer it with text", ErrInvalidAnswer, p.Key)
	}

	cfg := newConfig(opts)
	if q.Agent != "" {
		cfg.agentURL = q.Agent
	}
	if cfg.agentURL == "" {
		return nil, fmt.Errorf("client: %s does not say which agent asked; pass the agent's URL with WithAgentURL", p.name())
	}
	if cfg.caller == "" {
		cfg.caller = q.Caller
	}
	if q.MaxRounds > 0 && !cfg.maxRoundsSet {
		cfg.maxRounds = q.MaxRounds
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

	l := newLoop(c, cfg, q.Request)
	l.paused = p
	l.ackOnly = !drive
	if q.Round > 0 {
		l.rounds = q.Round - 1
	}
	return l.resume(ctx, q.TaskID, &ans)
}
