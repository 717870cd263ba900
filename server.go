package askpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/store"
)

// AgentSpec registers an agent with a [Server].
type AgentSpec struct {
	// Name is the agent's path segment: it is served under /Name/.
	// Lower-case letters, digits and dashes.
	Name string
	// Agent runs the agent's steps.
	Agent Agent
	// Card describes the agent. The server fills in the interfaces, the
	// capabilities and the question extension; Name and Description are
	// required, Version defaults to "1.0.0".
	Card a2a.AgentCard
}

// Server runs agents over A2A 1.0 on a durable store. A paused task is rows
// in the store: the server holds no goroutine, channel or timer for it.
// Create one with [NewServer], register agents, serve [Server.Handler] and
// call [Server.Start].
type Server struct {
	cfg    Config
	log    *slog.Logger
	store  store.Store
	agents map[string]*agentEntry
	order  []string

	broker broker
	queue  chan job

	// Timer loops: the sweeper (question expiries and reminders), the
	// releaser (holds) and the push deliverer.
	sweeper  *timerLoop
	releaser *timerLoop
	pusher   *timerLoop
	push     *pushSender
	// pushSlots bounds the push deliveries under way on this node.
	pushSlots chan struct{}
	tokens    tokenTable
	streams   streamSlots
	// interfaces add to every agent card (AddInterface).
	interfaces []func(baseURL, agent string) *a2a.AgentInterface

	mu       sync.Mutex
	started  bool
	stopped  bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	running  map[string]context.CancelFunc // task ID -> cancel of its local run
	runCtx   context.Context
	stopOnce sync.Once
}

type agentEntry struct {
	spec    AgentSpec
	handler *handler
}

type job struct {
	id      string
	version int64
}

var agentNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// NewServer returns a server for cfg. It does not start anything.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	tokens, err := newTokenTable(cfg.Tokens)
	if err != nil {
		return nil, err
	}
	s := &Server{
		tokens:  tokens,
		streams: streamSlots{limit: cfg.MaxStreamsPerPrincipal, open: map[string]int{}},
		cfg:     cfg,
		log:     cfg.Logger,
		store:   cfg.Store,
		agents:  map[string]*agentEntry{},
		running: map[string]context.CancelFunc{},
		queue:   make(chan job, cfg.Workers*64),

		sweeper:  newTimerLoop("sweeper"),
		releaser: newTimerLoop("releaser"),
		pusher:   newTimerLoop("push"),
		push:     newPushSender(cfg),

		pushSlots: make(chan struct{}, 64),
	}
	s.broker.m = map[string]*watchers{}
	return s, nil
}

// Register adds an agent. Call it before Start.
func (s *Server) Register(spec AgentSpec) error {
	if !agentNamePattern.MatchString(spec.Name) {
		return fmt.Errorf("askpoint: agent name %q: use 1 to 63 lower-case letters, digits and dashes", spec.Name)
	}
	if spec.Agent == nil {
		return fmt.Errorf("askpoint: agent %q: Agent is nil", spec.Name)
	}
	if spec.Card.Name == "" || spec.Card.Description == "" {
		return fmt.Errorf("askpoint: agent %q: Card.Name and Card.Description are required", spec.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return fmt.Errorf("askpoint: agent %q: register agents before Start", spec.Name)
	}
	if _, dup := s.agents[spec.Name]; dup {
		return fmt.Errorf("askpoint: agent %q is registered twice", spec.Name)
	}
	e := &agentEntry{spec: spec}
	e.handler = &handler{s: s, name: spec.Name}
	s.agents[spec.Name] = e
	s.order = append(s.order, spec.Name)
	return nil
}

// Agents returns the names of the registered agents in registration order.
func (s *Server) Agents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.order...)
}

// RequestHandler returns the a2asrv.RequestHandler that serves the named
// agent, for mounting on a transport of your choice.
func (s *Server) RequestHandler(name string) (a2asrv.RequestHandler, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.agents[name]
	if !ok {
		return nil, false
	}
	return e.handler, true
}

// Start starts the worker pool, the poller that takes over runnable tasks
// whose lease lapsed (a crashed run, or work left by a stopped node), and
// the timer loops: the sweeper (question expiries and reminders), the
// releaser (holds) and the push deliverer.
// It returns at once; Stop ends them.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("askpoint: server already started")
	}
	s.started = true
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	s.runCtx = ctx
	for range s.cfg.Workers {
		s.wg.Add(1)
		go s.worker(ctx)
	}
	s.wg.Add(1)
	go s.poller(ctx)
	if !s.cfg.DisableSweeper {
		s.wg.Add(1)
		go s.runTimerLoop(ctx, s.sweeper, s.sweep, func(ctx context.Context) (time.Time, error) {
			return s.store.NextDue(ctx, store.TimerWake)
		})
	}
	s.wg.Add(2)
	go s.runTimerLoop(ctx, s.releaser, s.releaseDue, func(ctx context.Context) (time.Time, error) {
		return s.store.NextDue(ctx, store.TimerHold)
	})
	go s.runTimerLoop(ctx, s.pusher, s.deliverDue, nil)
	if n, ok := s.store.(store.Notifier); ok {
		// Wake this node's waiters when another node changes a task.
		s.wg.Add(1)
		go s.listen(ctx, n)
	}
	s.log.Info("askpoint started", slog.String("node", s.cfg.NodeID), slog.Int("workers", s.cfg.Workers))
	return nil
}

// Stop stops the workers and the poller and waits for them, or for ctx.
// A step still running is abandoned: its lease is released so the task is
// taken over on the next start. Stop is idempotent.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
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

// CredentialArrived resumes a task paused in auth-required: the credential
// the agent asked for has been delivered out of band. data (encoded to
// JSON) reaches the agent's step; it must not be the credential itself.
func (s *Server) CredentialArrived(ctx context.Context, taskID string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("askpoint: encode credential notice: %w", err)
	}
	return s.resumeFromOutside(ctx, taskID, func(t *store.Task) (*runInput, error) {
		if t.State != a2a.TaskStateAuthRequired {
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation,
				fmt.Sprintf("task %q is %s, not waiting for a credential", taskID, stateWord(t.State)))
		}
		return &runInput{Kind: inputAuth, AuthData: raw, Key: fmt.Sprintf("%s/auth-%d", t.ID, t.Version)}, nil
	})
}

// resumeFromOutside resumes a paused task from a Go call (a credential, an
// event): decide reads the task as it stands and returns what the run gets,
// nil to leave the task as it is, or an error; the write is a
// compare-and-set, decided again if the task changed meanwhile.
func (s *Server) resumeFromOutside(ctx context.Context, taskID string, decide func(*store.Task) (*runInput, error)) error {
	for range maxCASRetries {
		t, err := s.store.GetTask(ctx, taskID)
		if errors.Is(err, store.ErrNotFound) {
			return errTaskNotFound(taskID)
		}
		if err != nil {
			return err
		}
		in, err := decide(t)
		if err != nil || in == nil {
			return err
		}
		next, entries, err := s.resumeRow(t, *in, nil, "")
		if err != nil {
			return err
		}
		saved, err := s.store.UpdateTask(ctx, next, entries)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		s.committed(saved)
		s.dispatch(saved)
		return nil
	}
	return errInternal(errors.New("the task kept changing; try again"))
}

const maxCASRetries = 8

// listen relays the store's cross-node change notifications to the broker
// until ctx ends. A lost notification only delays a waiter until its next
// poll of the store.
func (s *Server) listen(ctx context.Context, n store.Notifier) {
	defer s.wg.Done()
	if err := n.Listen(ctx, s.broker.notify); err != nil && ctx.Err() == nil {
		s.log.Error("listen for task changes on other nodes; waiters fall back to polling", slog.Any("err", err))
	}
}

// committed is called after every write that changes a task.
func (s *Server) committed(t *store.Task) {
	s.broker.notify(t.ID)
	s.sweeper.wake(t.WakeAt)
	s.releaser.wake(t.HoldAt)
	if interrupted(t.State) || t.State.Terminal() {
		// What is notified: pauses, reminders and endings.
		s.pusher.kick()
	}
}

func (s *Server) now() time.Time { return s.cfg.Now().UTC() }

func shortID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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
