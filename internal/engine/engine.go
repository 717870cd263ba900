package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/auth"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/store"
)

// Engine runs agents' tasks on a durable store. A paused task is rows in
// the store: the engine holds no goroutine, channel or timer for it.
//
// The Engine wires its parts, each of which owns its state and is reached
// through its methods only, and it is the core of every agent's request
// handler (Handler): the transitions of a task (commit, in transition.go,
// is the one place a task is written), the step runner (run.go) and the
// sweeper (timers.go). The parts:
//
//   - pool (pool.go): the workers, the slots that bound the steps running
//     on this node, the queue and the local runs CancelTask stops;
//   - leases (leases.go): lease renewal (the heartbeat) and release, and
//     the poller that claims lapsed runs;
//   - rows (rowcache.go) and knownLog (knownlog.go): the history cache, the
//     rows and log entries this node wrote, so that a transition or a
//     reply reads nothing back;
//   - outcomes (outcomes.go): an Outcome, a resume or an end turned into
//     the task's next row, with its question, pause and holds;
//   - outbox (outbox.go): push deliveries, their slots and shares;
//   - releaser (releaser.go): the release of what paused tasks hold;
//   - obs (observe.go): the observer and the debug log of transitions.
type Engine struct {
	cfg    api.Config
	tokens auth.Tokens // the callers' bearer tokens (Config.Tokens)
	log    *slog.Logger
	store  store.Store
	// locker is the store's task locks (quick steps), nil when it has none.
	locker store.Locker
	agents map[string]*agentEntry
	order  []string

	obs      *observer
	pool     *pool
	leases   *leases
	rows     *rowCache // the rows this node wrote last (SingleNode stores)
	outcomes *outcomes
	outbox   *outbox
	releaser *releaser
	sweeper  *timerLoop // question expiries and reminders (timers.go)

	broker broker
	act    *activity   // work in hand, for Idle (the pool's and the outbox's)
	rate   rateBuckets // NewTasksPerMinutePerPrincipal
	// openSlots make a principal's open-task checks on this node take turns
	// (MaxOpenTasksPerPrincipal).
	openSlots openSlots

	mu       sync.Mutex
	started  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once

	// transientRetries and stepRetries count requests tried again after a
	// transient store failure and step retries scheduled (see faults.go).
	transientRetries atomic.Int64
	stepRetries      atomic.Int64
	// panicsFail makes a panicking step fail its task at once instead of
	// being tried again (FailPanicsAtOnce).
	panicsFail atomic.Bool

	// wakeSecret is the store's secret wake tokens derive from, read at
	// Start (see wakeToken).
	wakeSecret atomic.Pointer[[]byte]
}

type agentEntry struct {
	name  string
	agent api.Agent
	// releases: the agent can release what its tasks hold (a Releaser
	// whose release is set), so that an outcome with holds can be kept.
	releases bool
	card     a2a.AgentCard // the card as registered: input modes, capabilities
	handler  *Handler
}

// New returns an engine for cfg. It does not start anything.
func New(cfg api.Config) (*Engine, error) {
	if err := api.Check(cfg); err != nil {
		return nil, err
	}
	cfg = api.Defaults(cfg)
	now := func() time.Time { return cfg.Now().UTC() }
	tokens, err := auth.NewTokens(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	s := &Engine{
		tokens: tokens,
		cfg:    cfg,
		log:    cfg.Logger,
		obs:    newObserver(cfg.Observer, cfg.Logger, now),
		store:  cfg.Store,
		locker: store.LockerOf(cfg.Store),
		rows:   newRowCache(cfg.Store),
		agents: map[string]*agentEntry{},
		act:    newActivity(),

		sweeper: newTimerLoop("sweeper", cfg.SweepInterval, now, cfg.Logger),
	}
	s.leases = &leases{store: cfg.Store, rows: s.rows, node: cfg.NodeID, span: cfg.LeaseDuration, every: cfg.PollInterval, now: now, log: cfg.Logger, obs: s.obs}
	s.outcomes = &outcomes{
		node: cfg.NodeID, lease: cfg.LeaseDuration, expiry: cfg.QuestionExpiry, maxAttempts: cfg.MaxAttempts, reminders: cfg.Reminders,
		now: now, log: cfg.Logger, obs: s.obs,
		releases: func(name string) bool {
			e := s.agentByName(name)
			return e != nil && e.releases
		},
	}
	s.outbox = newOutbox(cfg, now, s.obs, s.act, &s.wg)
	s.releaser = &releaser{
		e: s, store: cfg.Store, log: cfg.Logger, obs: s.obs, now: now, lease: cfg.LeaseDuration,
		retries: cfg.StepRetries, retryMin: cfg.StepRetryMin, retryMax: cfg.StepRetryMax,
		loop: newTimerLoop("releaser", cfg.ReleaseInterval, now, cfg.Logger),
	}
	s.pool = newPool(cfg.Workers, s, s.leases, s.act, &s.wg)
	s.broker.m = map[string]*watchers{}
	s.rate.perMin = cfg.NewTasksPerMinutePerPrincipal
	return s, nil
}

// Register adds an agent under name, with the card it is served with (the
// engine reads its input modes and capabilities); releases says whether it
// can release what its tasks hold (see api.Releaser). Call it before Start.
func (s *Engine) Register(name string, agent api.Agent, card a2a.AgentCard, releases bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("askpoint: agent %q: register agents before Start", name)
	}
	if _, dup := s.agents[name]; dup {
		return fmt.Errorf("askpoint: agent %q is registered twice", name)
	}
	e := &agentEntry{name: name, agent: agent, releases: releases, card: card}
	e.handler = &Handler{s: s, name: name}
	s.agents[name] = e
	s.order = append(s.order, name)
	return nil
}

// Agents returns the names of the registered agents in registration order.
func (s *Engine) Agents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// Handler returns the request handler that serves the named agent.
func (s *Engine) Handler(name string) (*Handler, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.agents[name]
	if !ok {
		return nil, false
	}
	return e.handler, true
}

// ErrStarted says Start was called on an engine that started already.
var ErrStarted = errors.New("askpoint: server already started")

// Start starts the worker pool, the poller that takes over runnable tasks
// whose lease lapsed (a crashed run, or work left by a stopped node), and
// the timer loops: the sweeper (question expiries and reminders), the
// releaser (holds) and the push deliverer.
// It returns at once; Stop ends them.
func (s *Engine) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return ErrStarted
	}
	secret, err := s.store.Secret(ctx, wakeSecretName)
	if err != nil {
		return fmt.Errorf("askpoint: read the store's wake-token secret: %w", err)
	}
	s.wakeSecret.Store(&secret)
	s.started = true
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.pool.start(ctx)
	loop := func(l *timerLoop, work func(context.Context) (int, error), next func(context.Context) (time.Time, error)) {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			l.run(ctx, work, next)
		}()
	}
	if !s.cfg.DisableSweeper {
		loop(s.sweeper, s.sweep, func(ctx context.Context) (time.Time, error) {
			return s.store.NextDue(ctx, store.TimerWake)
		})
	}
	loop(s.releaser.timer(), s.releaser.releaseDue, func(ctx context.Context) (time.Time, error) {
		return s.store.NextDue(ctx, store.TimerHold)
	})
	loop(s.outbox.timer(), s.outbox.deliverDue, nil)
	if s.cfg.RetainFinished > 0 {
		s.wg.Add(1)
		go s.retain(ctx)
	}
	if n, ok := s.store.(store.Notifier); ok {
		// Wake this node's waiters when another node changes a task.
		s.wg.Add(1)
		go s.listen(ctx, n)
	}
	s.obs.countOpen(ctx, s.store, s.order)
	s.log.Info("askpoint started", slog.String("node", s.cfg.NodeID), slog.Int("workers", s.cfg.Workers))
	return nil
}

// Stop stops the workers and the poller and waits for them, or for ctx.
// A step still running is abandoned: its lease is released so the task is
// taken over on the next start. Stop is idempotent.
func (s *Engine) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.pool.stop()
		cancel := s.cancel
		s.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	})
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CredentialArrived resumes a task paused in auth-required with data, what
// the agent's step is told of the credential's arrival.
func (s *Engine) CredentialArrived(ctx context.Context, taskID string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("askpoint: encode credential notice: %w", err)
	}
	return s.resumeFromOutside(ctx, taskID, func(t *store.Task) (*runInput, error) {
		if t.State.Terminal() {
			// Its final status says why, as for a late answer: "No
			// credential in time: … expired at …".
			return nil, errTerminal(t)
		}
		if t.State != a2a.TaskStateAuthRequired {
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation,
				fmt.Sprintf("task %q is %s, not waiting for a credential", taskID, text.StateWord(t.State)))
		}
		if err := s.credentialAwaited(t); errors.Is(err, errExpired) {
			return nil, s.expireLate(ctx, t)
		} else if err != nil {
			return nil, err
		}
		return &runInput{Kind: inputAuth, AuthData: raw, Key: fmt.Sprintf("%s/auth-%d", t.ID, t.Version)}, nil
	})
}

// credentialAwaited checks that the request for a credential of t, an
// auth-required task, is still open: errExpired at or after its expiry.
func (s *Engine) credentialAwaited(t *store.Task) error {
	p, err := decodePause(t)
	if err != nil {
		return errInternal(err)
	}
	if p.Auth != "" && !s.now().Before(p.Expires) {
		return errExpired
	}
	return nil
}

// expireLate expires t, whose pause closed at its expiry before an answer
// or a credential came for it, even if no sweeper has acted on it yet, and
// returns store.ErrConflict: what came is then decided again from the
// expired task, as if a sweep had come first, so it gets one reply
// whoever acted on the expiry (decision 0105).
func (s *Engine) expireLate(ctx context.Context, t *store.Task) error {
	if _, err := s.expire(ctx, t); err != nil && !errors.Is(err, store.ErrConflict) {
		return err
	}
	return store.ErrConflict
}

// resumeFromOutside resumes a paused task from a Go call (a credential, an
// event): decide reads the task as it stands and returns what the run gets,
// nil to leave the task as it is, or an error; the write is a
// compare-and-set, decided again if the task changed meanwhile.
func (s *Engine) resumeFromOutside(ctx context.Context, taskID string, decide func(*store.Task) (*runInput, error)) error {
	defer s.lockTask(taskID).Unlock()
	return s.retryTransient(ctx, "resume", func() error {
		return retryCAS(func() error {
			l, err := s.store.LoadTask(ctx, taskID, store.LoadParams{Request: true})
			if errors.Is(err, store.ErrNotFound) {
				return errTaskNotFound(taskID)
			}
			if err != nil {
				return err
			}
			t := l.Task
			in, err := decide(t)
			if err != nil || in == nil {
				return err
			}
			next, entries, err := s.outcomes.resumeRow(t, in, nil, "")
			if err != nil {
				return err
			}
			if err := withInput(next, in); err != nil {
				return err
			}
			saved, err := s.commit(ctx, commitNote{prev: t, in: in, cause: "resume"}, next, entries, false)
			if err != nil {
				return err
			}
			w := &work{task: saved, in: in, trace: s.obs.traceParent(ctx)}
			if len(l.Request) > 0 {
				var m a2a.Message
				if json.Unmarshal(l.Request, &m) == nil {
					w.request = &m
				}
			}
			s.pool.dispatch(w)
			return nil
		})
	})
}

// listen relays the store's cross-node change notifications to the broker
// until ctx ends. A lost notification only delays a waiter until its next
// poll of the store.
func (s *Engine) listen(ctx context.Context, n store.Notifier) {
	defer s.wg.Done()
	heard := func(id string) {
		s.broker.notify(id)
		if id == "" { // missed notifications: the loops look again too
			s.sweeper.kick()
			s.releaser.kick()
			s.outbox.kick()
		}
	}
	if err := n.Listen(ctx, heard); err != nil && ctx.Err() == nil {
		s.log.Error("listen for task changes on other nodes; waiters fall back to polling", slog.Any("err", err))
	}
}

func (s *Engine) now() time.Time { return s.cfg.Now().UTC() }

// broker wakes the goroutines of live calls (blocking sends, streams,
// subscriptions) waiting for a task to change. It holds entries only while
// someone waits; the store stays the source of truth.
type broker struct {
	mu sync.Mutex
	m  map[string]*watchers
}

type watchers struct {
	ch chan struct{}
	n  int
}

func (b *broker) watch(id string) (<-chan struct{}, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w := b.m[id]
	if w == nil {
		w = &watchers{ch: make(chan struct{})}
		b.m[id] = w
	}
	w.n++
	ch := w.ch
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			w.n--
			if w.n == 0 && b.m[id] == w {
				delete(b.m, id)
			}
		})
	}
}

func (b *broker) notify(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id == "" { // anything may have changed: wake every waiter
		for _, w := range b.m {
			close(w.ch)
			w.ch = make(chan struct{})
		}
		return
	}
	if w := b.m[id]; w != nil {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

func (b *broker) size() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// Waiters reports how many tasks have live callers waiting on them in this
// process (blocking sends, streams, subscriptions).
func (s *Engine) Waiters() int { return s.broker.size() }

// SweepNow runs one round of the sweeper (question expiries and
// reminders), for tests that drive the clock.
func (s *Engine) SweepNow(ctx context.Context) error {
	_, err := s.sweep(ctx)
	return err
}
