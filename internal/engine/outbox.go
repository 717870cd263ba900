package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/store"
)

// Push notifications are a durable outbox: a task's log is what there is to
// send, and each push configuration keeps a cursor in it (store.PushConfig).
// The deliverer claims configurations that have something due, sends the
// next entry marked Notify, and moves the cursor only after the receiver
// answered 2xx, so every notification is delivered at least once, in order,
// across restarts and nodes. A receiver that keeps failing is retried with
// backoff and, after PushMaxAttempts, given up on with a log line.
//
// Deliveries run on the wall clock, not Config.Now: their due times are
// set by the store's clock, and retrying a network call is a matter of
// real time. Config.Now governs the task's own timeline (expiry,
// reminders, holds).

// outbox is this node's push deliverer: its timer loop claims the push
// configurations with a delivery due, and it sends each with askpoint's
// own HTTP clients (pushSender), within its slots and each principal's
// share of them (pushShares).
type outbox struct {
	store store.Store
	node  string // Config.NodeID: the owner of this node's claims
	log   *slog.Logger
	obs   *observer

	timeout      time.Duration // Config.PushTimeout
	maxAttempts  int           // Config.PushMaxAttempts
	retryMin     time.Duration // Config.PushRetryMin
	retryMax     time.Duration // Config.PushRetryMax
	perPrincipal int           // Config.PushSlotsPerPrincipal
	allowPrivate bool          // Config.AllowPrivateWebhooks
	maxConfigs   int           // Config.MaxPushConfigs

	sender *pushSender
	loop   *timerLoop
	// slots bounds the push deliveries under way on this node.
	slots  chan struct{}
	shares pushShares
	act    *activity       // work in hand, for Idle
	wg     *sync.WaitGroup // the engine's: Stop waits for deliveries under way
}

func newOutbox(cfg api.Config, now func() time.Time, obs *observer, act *activity, wg *sync.WaitGroup) *outbox {
	return &outbox{
		store: cfg.Store, node: cfg.NodeID, log: cfg.Logger, obs: obs,
		timeout: cfg.PushTimeout, maxAttempts: cfg.PushMaxAttempts, retryMin: cfg.PushRetryMin, retryMax: cfg.PushRetryMax,
		perPrincipal: cfg.PushSlotsPerPrincipal, allowPrivate: cfg.AllowPrivateWebhooks, maxConfigs: cfg.MaxPushConfigs,
		sender: newPushSender(cfg),
		loop:   newTimerLoop("push", cfg.PushInterval, now, cfg.Logger),
		slots:  make(chan struct{}, 64),
		act:    act,
		wg:     wg,
	}
}

// kick makes the deliverer look for due deliveries soon.
func (o *outbox) kick() { o.loop.kick() }

// timer is the deliverer's timer loop (for Start and Idle).
func (o *outbox) timer() *timerLoop { return o.loop }

// allow adds hosts to Config.WebhookHosts (see Engine.AllowWebhookHosts).
func (o *outbox) allow(hosts ...string) { o.sender.allow(hosts...) }

// Push delivery slots are shared fairly (issue 23, finding 6): one
// principal may have at most PushSlotsPerPrincipal deliveries in flight on
// a node, so that a principal with many tasks aimed at a slow receiver
// cannot fill every slot and delay everyone else's notifications and
// relay wake-ups.

// pushSender posts notifications with askpoint's own HTTP clients: the
// guarded one checks every address it dials (pushguard.go) unless private
// networks are allowed.
type pushSender struct {
	guarded *http.Client
	open    *http.Client // for the hosts in Config.WebhookHosts

	mu    sync.RWMutex
	hosts map[string]bool
}

func newPushSender(cfg api.Config) *pushSender {
	ps := &pushSender{
		guarded: newPushClient(cfg.PushTimeout, cfg.AllowPrivateWebhooks),
		open:    newPushClient(cfg.PushTimeout, true),
		hosts:   map[string]bool{},
	}
	ps.allow(cfg.WebhookHosts...)
	return ps
}

// allow adds hosts (host:port) to those notifications may go to although
// they are loopback or private.
func (ps *pushSender) allow(hosts ...string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, h := range hosts {
		ps.hosts[strings.ToLower(h)] = true
	}
}

// allowed reports whether rawURL's host:port is one of Config.WebhookHosts
// (or one allow added).
func (ps *pushSender) allowed(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.hosts[strings.ToLower(u.Host)]
}

// send posts ev to the configuration's URL.
func (ps *pushSender) send(ctx context.Context, cfg *a2a.PushConfig, ev a2a.Event, traceparent string) error {
	if ps.allowed(cfg.URL) {
		return postPush(ctx, ps.open, cfg, ev, traceparent)
	}
	return postPush(ctx, ps.guarded, cfg, ev, traceparent)
}

// deliverDue claims the push configurations with a delivery due and
// delivers one notification for each. It returns how many it claimed.
func (o *outbox) deliverDue(ctx context.Context) (int, error) {
	free := cap(o.slots) - len(o.slots)
	if free <= 0 {
		return 0, nil // every slot busy: a finishing delivery kicks the loop
	}
	claimed, err := o.store.ClaimPushDeliveries(ctx, store.ClaimParams{
		Owner: o.node, Now: time.Now(), LeaseFor: 2*o.timeout + 5*time.Second, Limit: min(free, dueBatch),
	})
	if err != nil {
		return 0, err
	}
	// Receivers are independent: each delivery runs on its own and the
	// loop does not wait for it, so one slow receiver (up to PushTimeout)
	// holds up nobody else. Stop waits for deliveries under way.
	for _, c := range claimed {
		owner, ok := o.share(ctx, c)
		if !ok {
			continue // its principal has its share of the slots in flight
		}
		o.slots <- struct{}{}
		o.wg.Add(1)
		o.act.add(1)
		go func() {
			defer o.wg.Done()
			defer o.act.add(-1)
			defer func() { o.shares.done(owner); <-o.slots; o.loop.kick() }()
			o.deliverOne(ctx, c)
		}()
	}
	return len(claimed), nil
}

// deliverOne sends c's next notification and settles the outcome.
func (o *outbox) deliverOne(ctx context.Context, c *store.PushConfig) {
	log := o.log.With(slog.String("task", c.TaskID), slog.String("pushConfig", c.ID))
	settle := *c
	entry, scanned, err := o.nextNotification(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			o.releaseClaim(log, &settle)
			return
		}
		log.Error("read notifications to deliver", slog.Any("err", err))
		return // the claim lapses and the delivery is tried again
	}
	if entry == nil {
		// Nothing left to send up to what was scanned.
		settle.SentSeq, settle.Attempts, settle.DueAt = scanned, 0, time.Time{}
		o.settle(ctx, log, &settle)
		return
	}
	var cfg a2a.PushConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		log.Error("push configuration cannot be read; its notifications are skipped", slog.Any("err", err))
		settle.SentSeq, settle.Attempts, settle.DueAt = c.TargetSeq, 0, time.Time{}
		o.settle(ctx, log, &settle)
		return
	}
	ev, err := notificationEvent(*entry)
	if err == nil {
		// A delivery under way finishes even when the server stops (within
		// PushTimeout): cut short, it would be sent again after the restart.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.timeout)
		sctx, end, tp := o.obs.startPush(sctx, c.TaskID) // the receiver joins the delivery's trace
		err = o.sender.send(sctx, &cfg, ev, tp)
		end(err)
		cancel()
	}
	switch {
	case err == nil:
		o.obs.event(ctx, "", api.EventPushDelivered)
		settle.SentSeq, settle.Attempts, settle.DueAt = entry.Seq, 0, time.Time{}
	case ctx.Err() != nil:
		// Stopping: give the claim back, so that the next start (or
		// another node) sends it at once rather than when it lapses.
		o.releaseClaim(log, &settle)
		return
	case c.Attempts+1 >= o.maxAttempts:
		log.Warn("giving up on a push receiver: every notification it is owed so far is dropped",
			slog.String("url", redactURL(cfg.URL)), slog.Int("attempts", c.Attempts+1),
			slog.Int64("fromSeq", entry.Seq), slog.Int64("toSeq", c.TargetSeq), slog.Any("err", err))
		o.obs.event(ctx, "", api.EventPushGivenUp)
		settle.SentSeq, settle.Attempts, settle.DueAt = max(c.TargetSeq, entry.Seq), 0, time.Time{}
	default:
		o.obs.event(ctx, "", api.EventPushRetried)
		wait := o.backoff(c.Attempts + 1)
		log.Info("push notification failed; will retry", slog.String("url", redactURL(cfg.URL)),
			slog.Int("attempt", c.Attempts+1), slog.Duration("retryIn", wait), slog.Any("err", err))
		settle.Attempts, settle.DueAt = c.Attempts+1, time.Now().Add(wait)
	}
	o.settle(ctx, log, &settle)
}

// releaseClaim gives a claimed configuration back unchanged, due now.
func (o *outbox) releaseClaim(log *slog.Logger, c *store.PushConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.DueAt = time.Now()
	o.settle(ctx, log, c)
}

func (o *outbox) settle(ctx context.Context, log *slog.Logger, c *store.PushConfig) {
	saved, err := o.store.SettlePush(context.WithoutCancel(ctx), c)
	switch {
	case err == nil:
		if !saved.DueAt.IsZero() && !saved.DueAt.After(time.Now()) {
			o.loop.kick() // more to send now
		}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
		// Deleted, or the claim lapsed and another round took it over.
	default:
		log.Error("record a push delivery", slog.Any("err", err))
	}
}

// pushBackoff is the wait before attempt n+1 after n failed attempts.
func (o *outbox) backoff(n int) time.Duration {
	d := o.retryMin
	for i := 1; i < n && d < o.retryMax; i++ {
		d *= 2
	}
	return min(d, o.retryMax)
}

// nextNotification finds the first entry to notify after c.SentSeq (up to
// c.TargetSeq). It returns nil and the last seq it looked at when there is
// none.
func (o *outbox) nextNotification(ctx context.Context, c *store.PushConfig) (*store.LogEntry, int64, error) {
	seq := c.SentSeq
	for seq < c.TargetSeq {
		entries, err := o.store.ReadLog(ctx, c.TaskID, seq, 64)
		if err != nil {
			return nil, seq, err
		}
		if len(entries) == 0 {
			break
		}
		for i := range entries {
			if entries[i].Seq > c.TargetSeq {
				return nil, seq, nil
			}
			seq = entries[i].Seq
			if entries[i].Notify {
				return &entries[i], seq, nil
			}
		}
	}
	return nil, seq, nil
}

// checkPushConfig checks a push configuration a caller sent before anything
// is stored: a URL the server may call, an authentication scheme it can
// send, sizes within reason.
func (o *outbox) check(ctx context.Context, c *a2a.PushConfig) error {
	if c == nil {
		return errInvalidParams("the push notification configuration is missing")
	}
	if c.URL == "" {
		return errInvalidParams("the push notification configuration has no url")
	}
	if len(c.URL) > 2048 || len(c.Token) > 1024 || len(c.ID) > 128 {
		return errInvalidParams("the push notification configuration is too large (url up to 2048 bytes, token up to 1024, id up to 128)")
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errInvalidParams("push notification url %q is not an absolute http or https URL", c.URL)
	}
	if u.User != nil {
		return errInvalidParams("push notification url %q carries credentials; put them in authentication instead", redactURL(c.URL))
	}
	if c.Auth != nil {
		switch strings.ToLower(c.Auth.Scheme) {
		case "bearer", "basic":
		default:
			return errInvalidParams("push notification authentication scheme %q is not supported; use Bearer or Basic", c.Auth.Scheme)
		}
		if c.Auth.Credentials == "" {
			return errInvalidParams("push notification authentication scheme %s has no credentials", c.Auth.Scheme)
		}
	}
	if o.allowPrivate || o.sender.allowed(c.URL) {
		return nil
	}
	host := u.Hostname()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
	if err != nil {
		return errInvalidParams("push notification url %q: host %q cannot be resolved: %v", redactURL(c.URL), host, err)
	}
	for _, a := range addrs {
		if blockedIP(a.IP) {
			return errInvalidParams("push notification url %q resolves to %s, a loopback, private or link-local address; this server does not send notifications into private networks (an operator can allow it: askpoint serve --allow-private-webhooks)",
				redactURL(c.URL), a.IP)
		}
	}
	return nil
}

// putPushConfig stores c for t, delivering what is notified after
// fromSeq. An empty ID gets one derived from the configuration, so a
// retried request does not add a second receiver.
func (o *outbox) put(ctx context.Context, t *store.Task, c *a2a.PushConfig, fromSeq int64) (*a2a.PushConfig, error) {
	cfg := *c
	cfg.TaskID, cfg.Tenant = a2a.TaskID(t.ID), t.Tenant
	if cfg.ID == "" {
		sum := sha256.Sum256([]byte(cfg.URL + "\x00" + cfg.Token))
		cfg.ID = "push-" + hex.EncodeToString(sum[:8])
	}
	existing, err := o.store.ListPushConfigs(ctx, t.ID)
	if err != nil {
		return nil, errInternal(err)
	}
	replaces := false
	for _, e := range existing {
		replaces = replaces || e.ID == cfg.ID
	}
	if !replaces && len(existing) >= o.maxConfigs {
		return nil, errInvalidParams("task %q already has %d push notification configurations, the most one task may have; delete one first", t.ID, len(existing))
	}
	raw, err := json.Marshal(&cfg)
	if err != nil {
		return nil, errInternal(err)
	}
	saved, err := o.store.PutPushConfig(ctx, &store.PushConfig{TaskID: t.ID, ID: cfg.ID, Config: raw, SentSeq: fromSeq, Limit: o.maxConfigs})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errTaskNotFound(t.ID)
	}
	if errors.Is(err, store.ErrLimit) {
		// Another create won the race past the check above: the store's
		// count is the one that holds.
		return nil, errInvalidParams("task %q already has %d push notification configurations, the most one task may have; delete one first", t.ID, o.maxConfigs)
	}
	if err != nil {
		return nil, errInternal(err)
	}
	if !saved.DueAt.IsZero() {
		o.loop.kick()
	}
	return &cfg, nil
}

// pushShares counts the deliveries in flight per principal.
type pushShares struct {
	mu      sync.Mutex
	running map[string]int
}

func (p *pushShares) take(owner string, limit int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running == nil {
		p.running = map[string]int{}
	}
	if p.running[owner] >= limit {
		return false
	}
	p.running[owner]++
	return true
}

func (p *pushShares) done(owner string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[owner]--; p.running[owner] <= 0 {
		delete(p.running, owner)
	}
}

// pushShare takes a slot of c's principal's share; when the share is used
// up, c is given back due a little later (not as a failed attempt) and ok
// is false.
func (o *outbox) share(ctx context.Context, c *store.PushConfig) (owner string, ok bool) {
	if t, err := o.store.GetTask(ctx, c.TaskID); err == nil {
		owner = t.Tenant + "\x00" + t.Owner
	}
	if o.shares.take(owner, o.perPrincipal) {
		return owner, true
	}
	back := *c
	back.DueAt = time.Now().Add(o.retryMin)
	o.settle(ctx, o.log.With(slog.String("task", c.TaskID), slog.String("pushConfig", c.ID)), &back)
	return "", false
}
