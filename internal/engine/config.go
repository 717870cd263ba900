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
	// Each field is documented where users set it, on askpoint.Config (the
	// root package's config.go); the defaults are set in withDefaults below.
	Store  store.Store
	Logger *slog.Logger
	NodeID string
	// Observer hears of every transition and counted event, for metrics
	// and traces (internal/telemetry); nil: nothing is observed. The root
	// package sets it from the command's telemetry, not from askpoint.Config.
	Observer Observer

	Workers           int
	LeaseDuration     time.Duration
	PollInterval      time.Duration
	RecheckInterval   time.Duration
	SweepInterval     time.Duration
	ReleaseInterval   time.Duration
	PushInterval      time.Duration
	DisableQuickSteps bool

	StepRetries  int
	StepRetryMin time.Duration
	StepRetryMax time.Duration

	QuestionExpiry time.Duration
	MaxAttempts    int
	MaxAnswerBytes int

	Reminders      []float64
	DisableSweeper bool

	PushTimeout                   time.Duration
	PushRetryMin                  time.Duration
	PushRetryMax                  time.Duration
	PushMaxAttempts               int
	AllowPrivateWebhooks          bool
	WebhookHosts                  []string
	MaxPushConfigs                int
	MaxOpenTasksPerPrincipal      int
	NewTasksPerMinutePerPrincipal int
	PushSlotsPerPrincipal         int
	RetainFinished                time.Duration
	OnBehalfOfPrincipals          []string

	InputRequiredStreams InputRequiredStreams

	MaxPageSize       int
	MaxReplyBytes     int
	ListHistoryLength int
	MaxParts          int

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
