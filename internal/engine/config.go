package engine

import (
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"time"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// InputRequiredStreams says what a stream does when its task pauses in
// input-required.
type InputRequiredStreams int

const (
	// CloseStreams ends the stream at input-required (the HTTP+JSON
	// binding's reading of A2A 1.0). The caller answers with a new call on
	// the same task. The default.
	CloseStreams InputRequiredStreams = iota
	// KeepStreamsOpen keeps the stream open until the task moves on.
	KeepStreamsOpen
)

// Config configures an [Engine]; askpoint.Config documents each setting
// for its users. The zero value of every field but Store means its default.
type Config struct {
	// Store holds every task. Required.
	Store store.Store
	// Logger receives the server's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// NodeID names this process in leases. Defaults to a random ID.
	NodeID string
	// Observer hears of every transition and counted event, for metrics
	// and traces (internal/telemetry). Nil: nothing is observed.
	Observer Observer

	// Workers bounds how many steps run at once on this node. Defaults to
	// 32 × GOMAXPROCS (steps are cheap goroutines; more of them let
	// concurrent answers share commits, see docs/BENCHMARKS.md).
	Workers int
	// LeaseDuration is how long a run's lease lasts before another node
	// may take the task over; a live run renews it. Defaults to 30s.
	LeaseDuration time.Duration
	// PollInterval is how often the node looks for runnable tasks whose
	// lease lapsed (crashed runs). Defaults to 1s.
	PollInterval time.Duration
	// RecheckInterval is how often a waiting call (a blocking send, a
	// stream, a subscription) reads the store again in case a change made
	// on another node was not announced. Defaults to PollInterval.
	RecheckInterval time.Duration
	// SweepInterval, ReleaseInterval and PushInterval are the longest the
	// sweeper (question expiries and reminders), the releaser (holds) and
	// the push deliverer sleep between rounds: each wakes sooner for what
	// is due on this node, and this bounds how late it sees a timer set on
	// another node. Each defaults to PollInterval.
	SweepInterval   time.Duration
	ReleaseInterval time.Duration
	PushInterval    time.Duration
	// DisableQuickSteps makes every step's message be written before the
	// step runs, also on a single-node store, where a blocking call's step
	// otherwise runs first and is written with its message in one write
	// (see docs/decisions/0016-one-transition.md).
	DisableQuickSteps bool

	// StepRetries is how many times a step that returned an error (one
	// not marked Permanent) is tried again before the task fails; 0 means
	// the default, 10; a negative value never tries again. StepRetryMin
	// and StepRetryMax bound the backoff between tries: it doubles from
	// StepRetryMin up to StepRetryMax, each wait a random point in its
	// upper half. Defaults 500ms and 1m (about 5 minutes of tries in all).
	StepRetries  int
	StepRetryMin time.Duration
	StepRetryMax time.Duration

	// QuestionExpiry is how long a question stays open when the agent sets
	// no expiry. Defaults to 24h.
	QuestionExpiry time.Duration
	// MaxAttempts caps the answers a question takes before the task fails,
	// when the agent sets no cap. Defaults to question.DefaultMaxAttempts.
	MaxAttempts int
	// MaxAnswerBytes caps an answer's encoded size. Defaults to
	// question.DefaultMaxAnswerBytes.
	MaxAnswerBytes int

	// Reminders are the points, as fractions of the time between a
	// question's asking and its expiry, at which a reminder goes to the
	// task's push configurations while the question is open. nil means
	// the default, half-way and 90% of the way ({0.5, 0.9}); an empty
	// non-nil slice sends none. Each point is in (0, 1).
	Reminders []float64
	// DisableSweeper stops this node from acting on question expiries and
	// reminders, for nodes where another node sweeps. An answer that comes
	// after its question's expiry still expires the task on the spot, and
	// hold releases and push deliveries run regardless: each runs on its
	// own timer.
	DisableSweeper bool

	// PushTimeout bounds one push notification request. Defaults to 10s.
	PushTimeout time.Duration
	// PushRetryMin and PushRetryMax bound the backoff between attempts to
	// deliver a notification to a receiver that fails: the wait doubles
	// from PushRetryMin up to PushRetryMax. Default 1s and 5m.
	PushRetryMin time.Duration
	PushRetryMax time.Duration
	// PushMaxAttempts is how many times a notification is tried before
	// the server gives up on what that receiver is owed so far (with a log
	// line) and moves on to later notifications. Defaults to 12 (about 18
	// minutes with the default backoff).
	PushMaxAttempts int
	// AllowPrivateWebhooks lets push configurations name URLs that resolve
	// to loopback, private or link-local addresses. Off by default: a
	// caller must not be able to make the server call into its own
	// network.
	AllowPrivateWebhooks bool
	// WebhookHosts are host:port pairs (as written in URLs, e.g.
	// "127.0.0.1:8420") that push notifications may go to even though
	// they are loopback or private: this server's own address, so that an
	// orchestrator it serves hears from a sub-agent it also serves.
	WebhookHosts []string
	// MaxPushConfigs caps the push configurations of one task. Defaults to 8.
	MaxPushConfigs int
	// MaxOpenTasksPerPrincipal caps one principal's tasks that are not
	// terminal; NewTasksPerMinutePerPrincipal caps how many it starts a
	// minute on this node. Zero: no cap.
	MaxOpenTasksPerPrincipal      int
	NewTasksPerMinutePerPrincipal int
	// PushSlotsPerPrincipal caps one principal's push deliveries in flight
	// on a node, of the 64 slots. Defaults to 16.
	PushSlotsPerPrincipal int
	// RetainFinished is how long a terminal task is kept after its last
	// change; then it is deleted with its history. Zero: kept forever.
	RetainFinished time.Duration
	// OnBehalfOfPrincipals are the principals whose requests may name the
	// caller they act for (OnBehalfOfKey in the request's metadata).
	OnBehalfOfPrincipals []string

	// InputRequiredStreams decides whether streams close at input-required.
	// Defaults to CloseStreams.
	InputRequiredStreams InputRequiredStreams

	// MaxPageSize caps ListTasks pages. Defaults to 100.
	MaxPageSize int
	// MaxReplyBytes bounds the tasks of one ListTasks reply (their JSON);
	// the page ends early, with a next page token. Defaults to 4 MiB.
	MaxReplyBytes int
	// ListHistoryLength is the history ListTasks returns per task when the
	// caller does not say. Defaults to 10.
	ListHistoryLength int
	// MaxParts caps the parts of one message. Defaults to 64.
	MaxParts int

	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.NodeID == "" {
		c.NodeID = "node-" + text.RandomHex(8)
	}
	if c.Workers <= 0 {
		c.Workers = 32 * runtime.GOMAXPROCS(0)
	}
	if c.LeaseDuration <= 0 {
		c.LeaseDuration = 30 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	for _, d := range []*time.Duration{&c.RecheckInterval, &c.SweepInterval, &c.ReleaseInterval, &c.PushInterval} {
		if *d <= 0 {
			*d = c.PollInterval
		}
	}
	if c.StepRetries == 0 {
		c.StepRetries = 10
	}
	if c.StepRetryMin <= 0 {
		c.StepRetryMin = 500 * time.Millisecond
	}
	if c.StepRetryMax <= 0 {
		c.StepRetryMax = time.Minute
	}
	if c.StepRetryMax < c.StepRetryMin {
		c.StepRetryMax = c.StepRetryMin
	}
	if c.QuestionExpiry <= 0 {
		c.QuestionExpiry = 24 * time.Hour
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = question.DefaultMaxAttempts
	}
	if c.MaxAnswerBytes <= 0 {
		c.MaxAnswerBytes = question.DefaultMaxAnswerBytes
	}
	if c.MaxReplyBytes <= 0 {
		c.MaxReplyBytes = 4 << 20
	}
	if c.ListHistoryLength <= 0 {
		c.ListHistoryLength = 10
	}
	if c.MaxPageSize <= 0 {
		c.MaxPageSize = 100
	}
	if c.MaxParts <= 0 {
		c.MaxParts = 64
	}
	if c.Reminders == nil {
		c.Reminders = []float64{0.5, 0.9}
	}
	c.Reminders = slices.Sorted(slices.Values(c.Reminders))
	c.Reminders = slices.Compact(c.Reminders)
	if c.PushTimeout <= 0 {
		c.PushTimeout = 10 * time.Second
	}
	if c.PushRetryMin <= 0 {
		c.PushRetryMin = time.Second
	}
	if c.PushRetryMax <= 0 {
		c.PushRetryMax = 5 * time.Minute
	}
	if c.PushRetryMax < c.PushRetryMin {
		c.PushRetryMax = c.PushRetryMin
	}
	if c.PushMaxAttempts <= 0 {
		c.PushMaxAttempts = 12
	}
	if c.PushSlotsPerPrincipal <= 0 {
		c.PushSlotsPerPrincipal = 16
	}
	if c.MaxPushConfigs <= 0 {
		c.MaxPushConfigs = 8
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	if c.Store == nil {
		return fmt.Errorf("askpoint: Config.Store is required")
	}
	for _, f := range c.Reminders {
		if !(f > 0 && f < 1) {
			return fmt.Errorf("askpoint: Config.Reminders: %v is not a fraction between 0 and 1 (0.5 is half-way to the expiry)", f)
		}
	}
	return nil
}
