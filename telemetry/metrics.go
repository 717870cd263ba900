package telemetry

import (
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are askpoint's Prometheus metrics (docs/operations.md,
// "Metrics"). Labels carry agent names, question kinds, states and
// outcomes: bounded values, never task IDs. A question kind is the sorted
// names of its answer's required fields, which an agent (or a sub-agent
// whose question a relay asks on) chooses: at most maxKindsPerAgent
// distinct kinds are kept per agent, the rest are counted as "other".
type Metrics struct {
	// reg holds askpoint's collectors (and, without a registerer of the
	// caller's, the Go runtime's and the process's): Handler serves it and
	// Stats reads it.
	reg *prometheus.Registry
	// kinds bounds the question kinds of each agent's series.
	kinds kindBound

	questionsOpen   *prometheus.GaugeVec
	asked           *prometheus.CounterVec
	closed          *prometheus.CounterVec
	answerSeconds   *prometheus.HistogramVec
	reasks          *prometheus.CounterVec
	expired         *prometheus.CounterVec
	reminders       *prometheus.CounterVec
	holdsReleased   *prometheus.CounterVec
	holdsLapsed     *prometheus.CounterVec
	tasks           *prometheus.CounterVec
	transitions     *prometheus.CounterVec
	push            *prometheus.CounterVec
	conflicts       *prometheus.CounterVec
	redeliveries    *prometheus.CounterVec
	takeovers       *prometheus.CounterVec
	storeSeconds    *prometheus.HistogramVec
	openMu          sync.Mutex
	openInitialised bool

	// children are the series of the vectors each round trip changes.
	children struct {
		transitions, closed, asked, tasks children[prometheus.Counter]
		questionsOpen                     children[prometheus.Gauge]
		answerSeconds                     children[prometheus.Observer]
	}
}

// answerBuckets span a quick answer in seconds to a slow one in days.
var answerBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400, 172800, 604800}

// NewMetrics makes askpoint's metrics and registers them on reg (a
// *prometheus.Registry of the program's, or prometheus.DefaultRegisterer),
// which then serves them with the program's other metrics. With a nil reg
// they are registered, with the Go runtime's and the process's collectors,
// on a registry of their own, which Handler serves (as `askpoint serve
// --metrics-addr` does). It fails when reg already has metrics of the same
// names.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{reg: prometheus.NewRegistry()}
	var mine []prometheus.Collector
	register := func(c prometheus.Collector) {
		m.reg.MustRegister(c) // a new registry of distinct names cannot refuse
		mine = append(mine, c)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		register(c)
		return c
	}
	m.questionsOpen = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "askpoint_questions_open",
		Help: "Questions open (tasks in input-required), from the store at start and this node's transitions since."}, []string{"agent"})
	register(m.questionsOpen)
	m.asked = counter("askpoint_questions_asked_total", "Questions asked: the first question of each pause (re-asks are askpoint_reasks_total).", "agent", "kind")
	m.closed = counter("askpoint_questions_closed_total", "Open questions closed, by how: answered, declined, expired, canceled, ended.", "agent", "kind", "outcome")
	m.answerSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "askpoint_question_answer_seconds",
		Help: "Seconds from asking (the pause's first question) to a valid answer.", Buckets: answerBuckets}, []string{"agent", "kind"})
	register(m.answerSeconds)
	m.reasks = counter("askpoint_reasks_total", "Invalid answers re-asked with a new question.", "agent", "kind")
	m.expired = counter("askpoint_questions_expired_total", "Questions that expired unanswered, by the expiry action taken (fail, cancel, default).", "agent", "action")
	m.reminders = counter("askpoint_reminders_sent_total", "Reminders of open questions written for push receivers.", "agent")
	m.holdsReleased = counter("askpoint_holds_released_total", "Holds whose release ran.", "agent")
	m.holdsLapsed = counter("askpoint_holds_lapsed_total", "Holds released because their deadline passed while the task was still paused.", "agent")
	m.tasks = counter("askpoint_tasks_total", "Tasks that reached a final state, by state.", "agent", "state")
	m.transitions = counter("askpoint_transitions_total", "Committed task changes, by cause.", "agent", "cause")
	m.push = counter("askpoint_push_deliveries_total", "Push delivery attempts by outcome: delivered, retried, given_up.", "outcome")
	m.conflicts = counter("askpoint_answer_conflicts_total", "Answers to a question no longer open: losers of a compare-and-set race, or late.", "agent")
	m.redeliveries = counter("askpoint_redeliveries_total", "Messages delivered again and answered by deduplication.", "agent")
	m.takeovers = counter("askpoint_lease_takeovers_total", "Runs this node took over after their lease lapsed.", "agent")
	m.storeSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "askpoint_store_operation_seconds",
		Help: "Latency of store operations, by operation.", Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12)}, []string{"op"})
	register(m.storeSeconds)
	for _, o := range []string{"delivered", "retried", "given_up"} {
		m.push.WithLabelValues(o)
	}
	if reg == nil {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	} else {
		for _, c := range mine {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("telemetry: register askpoint's metrics: %w", err)
			}
		}
	}
	c := &m.children
	c.transitions.new, c.closed.new, c.asked.new, c.tasks.new = m.transitions.WithLabelValues, m.closed.WithLabelValues, m.asked.WithLabelValues, m.tasks.WithLabelValues
	c.questionsOpen.new = m.questionsOpen.WithLabelValues
	c.answerSeconds.new = m.answerSeconds.WithLabelValues
	return m, nil
}

// Handler serves askpoint's metrics in the Prometheus exposition format
// (with the Go runtime's and the process's when NewMetrics made their
// registry).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry Handler serves.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

func (m *Metrics) transition(t *api.Transition) {
	t.Kind = m.kinds.bound(t.Agent, t.Kind)
	t.ClosedKind = m.kinds.bound(t.Agent, t.ClosedKind)
	c := &m.children
	c.transitions.get(2, t.Agent, t.Cause, "").Inc()
	if t.Closed != "" {
		c.closed.get(3, t.Agent, t.ClosedKind, string(t.Closed)).Inc()
		c.questionsOpen.get(1, t.Agent, "", "").Dec()
		switch t.Closed {
		case api.QuestionAnswered:
			c.answerSeconds.get(2, t.Agent, t.ClosedKind, "").Observe(t.Waited.Seconds())
		case api.QuestionExpired:
			m.expired.WithLabelValues(t.Agent, t.Expiry).Inc()
		}
	}
	if t.Asked {
		c.asked.get(2, t.Agent, t.Kind, "").Inc()
		c.questionsOpen.get(1, t.Agent, "", "").Inc()
	}
	if t.Reasked {
		m.reasks.WithLabelValues(t.Agent, t.Kind).Inc()
	}
	if t.Reminder {
		m.reminders.WithLabelValues(t.Agent).Inc()
	}
	if t.Ended {
		c.tasks.get(2, t.Agent, string(t.To), "").Inc()
	}
}

// children keeps the series of a vector by label values, for the metrics
// every round trip changes: WithLabelValues hashes and checks its labels at
// every call, a map keyed by them finds the series at less cost. The
// series kept are the vector's own (their number is the vector's).
type children[M any] struct {
	mu  sync.RWMutex
	m   map[[3]string]M
	new func(labels ...string) M
}

// get is the series of the first n of a, b, d.
func (c *children[M]) get(n int, a, b, d string) M {
	key := [3]string{a, b, d}
	c.mu.RLock()
	s, ok := c.m[key]
	c.mu.RUnlock()
	if ok {
		return s
	}
	s = c.new([]string{a, b, d}[:n]...)
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[[3]string]M)
	}
	c.m[key] = s
	c.mu.Unlock()
	return s
}

func (m *Metrics) event(agent string, e api.Event) {
	switch e {
	case api.EventRedelivery:
		m.redeliveries.WithLabelValues(agent).Inc()
	case api.EventAnswerConflict:
		m.conflicts.WithLabelValues(agent).Inc()
	case api.EventLeaseTakeover:
		m.takeovers.WithLabelValues(agent).Inc()
	case api.EventPushDelivered:
		m.push.WithLabelValues("delivered").Inc()
	case api.EventPushRetried:
		m.push.WithLabelValues("retried").Inc()
	case api.EventPushGivenUp:
		m.push.WithLabelValues("given_up").Inc()
	case api.EventHoldReleased:
		m.holdsReleased.WithLabelValues(agent).Inc()
	case api.EventHoldLapsed:
		m.holdsLapsed.WithLabelValues(agent).Inc()
	}
}

// openQuestions adds the store's count at start to the gauge, and creates
// every agent's series (by holds every registered agent) at zero, so that
// a scrape shows them before anything happens.
func (m *Metrics) openQuestions(by map[string]int) {
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if m.openInitialised {
		return
	}
	m.openInitialised = true
	for agent, n := range by {
		m.initAgent(agent)
		m.questionsOpen.WithLabelValues(agent).Add(float64(n))
	}
}

// initAgent creates an agent's per-agent series at zero.
func (m *Metrics) initAgent(a string) {
	m.questionsOpen.WithLabelValues(a)
	m.reminders.WithLabelValues(a)
	m.conflicts.WithLabelValues(a)
	m.redeliveries.WithLabelValues(a)
	m.takeovers.WithLabelValues(a)
	m.holdsReleased.WithLabelValues(a)
	m.holdsLapsed.WithLabelValues(a)
}

// maxKindsPerAgent bounds the question kinds one agent's series carry.
const maxKindsPerAgent = 64

// otherKind is the kind of the questions past maxKindsPerAgent.
const otherKind = "other"

// kindBound keeps the question kinds each agent's series have used.
type kindBound struct {
	mu sync.RWMutex
	m  map[string]map[string]bool
}

// bound is kind (made valid UTF-8, as a label must be), or otherKind once
// agent has used maxKindsPerAgent others.
func (b *kindBound) bound(agent, kind string) string {
	if kind == "" {
		return ""
	}
	kind = strings.ToValidUTF8(kind, "\uFFFD")
	b.mu.RLock()
	seen, full := b.m[agent][kind], len(b.m[agent]) >= maxKindsPerAgent
	b.mu.RUnlock()
	switch {
	case seen:
		return kind
	case full:
		return otherKind
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]map[string]bool{}
	}
	kinds := b.m[agent]
	if kinds == nil {
		kinds = map[string]bool{}
		b.m[agent] = kinds
	}
	if !kinds[kind] && len(kinds) >= maxKindsPerAgent {
		return otherKind
	}
	kinds[kind] = true
	return kind
}
