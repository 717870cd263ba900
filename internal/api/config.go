package api

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

// Config configures a Server. The zero value of every field but Store
// means its default.
type Config struct {
	// Store holds every task. Required.
	Store store.Store
	// Logger receives the server's logs. Defaults to slog.Default().
	Logger *slog.Logger
	// NodeID names this process in leases. Defaults to a random ID.
	NodeID string
	// Observer hears of every task change, step, push delivery and
	// request, for metrics and traces: the telemetry package's Observer
	// gives the askpoint_* Prometheus series and OpenTelemetry spans that
	// `askpoint serve --metrics-addr` and the OTEL_* variables do. Nil
	// (the default): nothing is observed, and nothing is computed for it.
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
	// step runs, where a blocking call's step otherwise runs first, while
	// the store holds the task, and is written with its message in one
	// write (see docs/decisions/0016-one-transition.md and
	// 0020-quick-steps-on-postgresql.md).
	DisableQuickSteps bool

	// StepRetries is how many times a step that returned an error is
	// tried again before its task fails (an error marked with
	// askpoint.Permanent fails it at once). 0 means the default, 10; a
	// negative value never tries again. StepRetryMin and StepRetryMax
	// bound the backoff between tries: the wait doubles from StepRetryMin
	// up to StepRetryMax, each a random point in its upper half. Defaults
	// 500ms and 1m. A retry is the task's own due time, so it survives a
	// restart and may run on another node; see
	// docs/decisions/0070-step-retries.md.
	StepRetries  int
	StepRetryMin time.Duration
	StepRetryMax time.Duration

	// QuestionExpiry is how long a question, or a request for a credential
	// (RequireAuth), stays open when the agent sets no expiry. Defaults to
	// 24h.
	QuestionExpiry time.Duration
	// MaxAttempts caps the answers a question takes before the task fails,
	// when the agent sets no cap. Defaults to question.DefaultMaxAttempts.
	MaxAttempts int
	// MaxAnswerBytes caps an answer's encoded size. Defaults to
	// question.DefaultMaxAnswerBytes.
	MaxAnswerBytes int

	// Reminders are the points, as fractions of the time between a
	// question's asking (or a credential's request) and its expiry, at
	// which a reminder goes to the task's push configurations while it is
	// open. nil means the default, half-way and 90% of the way
	// ({0.5, 0.9}); an empty non-nil slice sends none. Each point is in
	// (0, 1).
	Reminders []float64
	// DisableSweeper stops this node from acting on question (and
	// credential) expiries and reminders, for nodes where another node
	// sweeps. An answer or a credential that comes after the expiry still
	// expires the task on the spot, and
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

	// InputRequiredStreams decides whether streams close at input-required.
	// Defaults to CloseStreams.
	InputRequiredStreams InputRequiredStreams

	// MaxRequestBytes caps a request body (a gRPC request message); a
	// larger one is refused (413 on HTTP+JSON) and not kept: up to 16 MiB of
	// it is read and dropped so that the refusal reaches a client that
	// sends its whole body before it reads the reply. Defaults to 1 MiB.
	MaxRequestBytes int64
	// MaxPageSize caps ListTasks pages. Defaults to 100.
	MaxPageSize int
	// MaxParts caps the parts of one message. Defaults to 64.
	MaxParts int
	// MaxStreamsPerPrincipal caps the streams and subscriptions one caller
	// holds open at once, counted across every binding. Defaults to 32.
	MaxStreamsPerPrincipal int

	// Tokens maps bearer tokens to the principals they stand for. When
	// set, every A2A request on every binding must carry "Authorization:
	// Bearer TOKEN" and the agent cards declare the scheme; each task
	// belongs to the principal that created it. When empty, callers are
	// anonymous. Tokens must be at least 16 characters.
	Tokens map[string]string
	// MaxOpenTasksPerPrincipal caps how many tasks one principal may have
	// that are not terminal (working, paused, ...); a new task past it is
	// refused with an error that says so. Zero: no cap (the default).
	MaxOpenTasksPerPrincipal int
	// NewTasksPerMinutePerPrincipal caps how many tasks one principal may
	// start a minute on each node (a token bucket: bursts up to the cap).
	// Zero: no cap (the default).
	NewTasksPerMinutePerPrincipal int
	// PushSlotsPerPrincipal caps one principal's push deliveries in flight
	// on a node (of 64), so that one principal's slow receivers cannot
	// delay everyone's notifications. Defaults to 16.
	PushSlotsPerPrincipal int
	// RetainFinished is how long a finished task (completed, failed,
	// canceled, rejected) is kept after its last change; then it is
	// deleted with its history and push configurations. Zero: kept
	// forever (the default).
	RetainFinished time.Duration

	// OnBehalfOfPrincipals are the principals trusted to say whom they
	// call for: an orchestrator's own principal (a relay's sub-tasks run as
	// it). Their requests' askpoint.OnBehalfOfKey metadata becomes the
	// step's Call.OnBehalfOf; anyone else's is ignored. Empty: nobody's.
	OnBehalfOfPrincipals []string

	// PublicURL (scheme://host[:port]) is where callers reach the server:
	// agent card URLs are built from it and its host is answered. Empty:
	// a card names the host its request was sent to (after the host
	// check), and is not cached by shared caches.
	PublicURL string
	// AllowedHosts are more host names the server answers for. IP
	// addresses and localhost are always answered; any other Host is
	// refused (it may be a DNS rebinding of a web page's name).
	AllowedHosts []string
	// AllowedOrigins are the browser origins (scheme://host[:port], or
	// "*") whose pages may call the server. Other cross-origin browser
	// requests are refused.
	AllowedOrigins []string
	// AllowMissingContentType reads a POST body that declares no
	// Content-Type as JSON. Off by default: a browser's no-cors fetch
	// sends no type, so every POST must say application/json.
	AllowMissingContentType bool
	// BodyTimeout bounds how long a client takes to send a request body
	// once its headers are in (HTTP), or a call's request message once
	// the call opened (gRPC). Streams, once open, are not bounded by it.
	// Defaults to 30s.
	BodyTimeout time.Duration
	// HeaderTimeout bounds how long a client takes to send a request's
	// headers (HTTP), or to finish a connection's handshake (gRPC), and
	// how long a new connection may stay silent before the port can tell
	// HTTP from gRPC. Used by Server.Serve. Defaults to 10s.
	HeaderTimeout time.Duration
	// IdleTimeout is how long a connection with no request or call under
	// way is kept open: an HTTP keep-alive connection, a gRPC connection
	// with no call. Used by Server.Serve and Server.GRPC. Defaults to 2m.
	IdleTimeout time.Duration
	// MaxConnections caps the connections Server.Serve holds open at once,
	// HTTP and gRPC together. Past it, the connection idle the longest is
	// closed to make room, and when none is idle the new one is answered
	// 503 at once and closed: a caller is never left hanging in the
	// backlog. Defaults to 1024, or fewer when the process may open fewer
	// files.
	MaxConnections int
	// MaxStreamsPerConnection caps the gRPC calls one connection has open
	// at once, before any of them is authenticated. Defaults to 100.
	MaxStreamsPerConnection int
	// ShutdownTimeout bounds how long Server.Serve's graceful stop waits
	// for calls under way once its context ends; what is left then is cut
	// off. Defaults to 5s.
	ShutdownTimeout time.Duration
	// DisableGRPC serves only the HTTP bindings (JSON-RPC and HTTP+JSON):
	// Server.Serve does not serve gRPC and the agent cards do not declare
	// it. Off by default: gRPC shares the port.
	DisableGRPC bool
	// MaxIDBytes caps messageId, contextId, task IDs and push
	// configuration IDs. Defaults to 256.
	MaxIDBytes int
	// MaxReplyBytes bounds what one ListTasks reply holds: a page stops
	// early (with a nextPageToken) once its tasks add up to more. Defaults
	// to 4 MiB.
	MaxReplyBytes int
	// ListHistoryLength is how many messages of each task's history
	// ListTasks returns when the caller does not say. Defaults to 10.
	ListHistoryLength int

	// Now is the clock. Defaults to time.Now.
	Now func() time.Time

	// engineHook, when set, is given the server's engine once it is built:
	// how askpoint's own test harness reaches what the public API does not
	// offer (WithEngineHook).
	engineHook func(engine any)
}

// WithEngineHook makes NewServer hand the engine it builds for c to hook
// (as an *engine.Engine): for askpointtest and the module's own tests,
// which wait for a server to be idle or drive its sweeper, through methods
// that are not the Server's.
func WithEngineHook(c *Config, hook func(engine any)) { c.engineHook = hook }

// EngineHook is c's engine hook, one that does nothing when none is set.
func EngineHook(c Config) func(engine any) {
	if c.engineHook == nil {
		return func(any) {}
	}
	return c.engineHook
}

// The defaults of the fields whose default is a number (see Config).
const (
	DefaultMaxRequestBytes        = 1 << 20
	DefaultMaxParts               = 64
	DefaultMaxStreamsPerPrincipal = 32
	DefaultBodyTimeout            = 30 * time.Second
	DefaultMaxIDBytes             = text.DefaultMaxIDBytes
)

// Defaults returns c with every unset field at its default: the one place
// the defaults are applied, for the engine and the fronts alike.
func Defaults(c Config) Config {
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
	c.StepRetryMax = max(c.StepRetryMax, c.StepRetryMin)
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
		c.MaxParts = DefaultMaxParts
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if c.MaxStreamsPerPrincipal <= 0 {
		c.MaxStreamsPerPrincipal = DefaultMaxStreamsPerPrincipal
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.MaxIDBytes <= 0 {
		c.MaxIDBytes = DefaultMaxIDBytes
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 2 * time.Minute
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = defaultMaxConnections()
	}
	if c.MaxStreamsPerConnection <= 0 {
		c.MaxStreamsPerConnection = 100
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if c.Reminders == nil {
		c.Reminders = []float64{0.5, 0.9}
	}
	c.Reminders = slices.Compact(slices.Sorted(slices.Values(c.Reminders)))
	if c.PushTimeout <= 0 {
		c.PushTimeout = 10 * time.Second
	}
	if c.PushRetryMin <= 0 {
		c.PushRetryMin = time.Second
	}
	if c.PushRetryMax <= 0 {
		c.PushRetryMax = 5 * time.Minute
	}
	c.PushRetryMax = max(c.PushRetryMax, c.PushRetryMin)
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

// Check says what is wrong with c, naming the field, or nil.
func Check(c Config) error {
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

// defaultMaxConnections is 1024, or fewer when the process may open fewer
// files: the store keeps descriptors of its own, and an accept that fails
// with "too many open files" helps nobody.
func defaultMaxConnections() int {
	n := 1024
	if room := openFileLimit() - 64; room < n {
		n = max(room, 8)
	}
	return n
}
