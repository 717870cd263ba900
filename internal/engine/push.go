package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

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

// AllowWebhookHosts adds hosts (host:port, as written in URLs) to
// Config.WebhookHosts: the addresses a server listens on, known once it
// listens, so that an orchestrator it serves hears from a sub-agent it
// also serves.
func (s *Engine) AllowWebhookHosts(hosts ...string) { s.push.allow(hosts...) }

// send posts ev to the configuration's URL.
func (ps *pushSender) send(ctx context.Context, cfg *a2a.PushConfig, ev a2a.Event, traceparent string) error {
	if ps.allowed(cfg.URL) {
		return postPush(ctx, ps.open, cfg, ev, traceparent)
	}
	return postPush(ctx, ps.guarded, cfg, ev, traceparent)
}

// deliverDue claims the push configurations with a delivery due and
// delivers one notification for each. It returns how many it claimed.
func (s *Engine) deliverDue(ctx context.Context) (int, error) {
	free := cap(s.pushSlots) - len(s.pushSlots)
	if free <= 0 {
		return 0, nil // every slot busy: a finishing delivery kicks the loop
	}
	claimed, err := s.store.ClaimPushDeliveries(ctx, store.ClaimParams{
		Owner: s.cfg.NodeID, Now: time.Now(), LeaseFor: 2*s.cfg.PushTimeout + 5*time.Second, Limit: min(free, dueBatch),
	})
	if err != nil {
		return 0, err
	}
	// Receivers are independent: each delivery runs on its own and the
	// loop does not wait for it, so one slow receiver (up to PushTimeout)
	// holds up nobody else. Stop waits for deliveries under way.
	for _, c := range claimed {
		owner, ok := s.pushShare(ctx, c)
		if !ok {
			continue // its principal has its share of the slots in flight
		}
		s.pushSlots <- struct{}{}
		s.wg.Add(1)
		s.act.add(1)
		go func() {
			defer s.wg.Done()
			defer s.act.add(-1)
			defer func() { s.shares.done(owner); <-s.pushSlots; s.pusher.kick() }()
			s.deliverOne(ctx, c)
		}()
	}
	return len(claimed), nil
}

// deliverOne sends c's next notification and settles the outcome.
func (s *Engine) deliverOne(ctx context.Context, c *store.PushConfig) {
	log := s.log.With(slog.String("task", c.TaskID), slog.String("pushConfig", c.ID))
	settle := *c
	entry, scanned, err := s.nextNotification(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			s.releaseClaim(log, &settle)
			return
		}
		log.Error("read notifications to deliver", slog.Any("err", err))
		return // the claim lapses and the delivery is tried again
	}
	if entry == nil {
		// Nothing left to send up to what was scanned.
		settle.SentSeq, settle.Attempts, settle.DueAt = scanned, 0, time.Time{}
		s.settlePush(ctx, log, &settle)
		return
	}
	var cfg a2a.PushConfig
	if err := json.Unmarshal(c.Config, &cfg); err != nil {
		log.Error("push configuration cannot be read; its notifications are skipped", slog.Any("err", err))
		settle.SentSeq, settle.Attempts, settle.DueAt = c.TargetSeq, 0, time.Time{}
		s.settlePush(ctx, log, &settle)
		return
	}
	ev, err := notificationEvent(*entry)
	if err == nil {
		// A delivery under way finishes even when the server stops (within
		// PushTimeout): cut short, it would be sent again after the restart.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.PushTimeout)
		sctx, end, tp := s.obs.startPush(sctx, c.TaskID) // the receiver joins the delivery's trace
		err = s.push.send(sctx, &cfg, ev, tp)
		end(err)
		cancel()
	}
	switch {
	case err == nil:
		s.obs.event(ctx, "", api.EventPushDelivered)
		settle.SentSeq, settle.Attempts, settle.DueAt = entry.Seq, 0, time.Time{}
	case ctx.Err() != nil:
		// Stopping: give the claim back, so that the next start (or
		// another node) sends it at once rather than when it lapses.
		s.releaseClaim(log, &settle)
		return
	case c.Attempts+1 >= s.cfg.PushMaxAttempts:
		log.Warn("giving up on a push receiver: every notification it is owed so far is dropped",
			slog.String("url", redactURL(cfg.URL)), slog.Int("attempts", c.Attempts+1),
			slog.Int64("fromSeq", entry.Seq), slog.Int64("toSeq", c.TargetSeq), slog.Any("err", err))
		s.obs.event(ctx, "", api.EventPushGivenUp)
		settle.SentSeq, settle.Attempts, settle.DueAt = max(c.TargetSeq, entry.Seq), 0, time.Time{}
	default:
		s.obs.event(ctx, "", api.EventPushRetried)
		wait := s.pushBackoff(c.Attempts + 1)
		log.Info("push notification failed; will retry", slog.String("url", redactURL(cfg.URL)),
			slog.Int("attempt", c.Attempts+1), slog.Duration("retryIn", wait), slog.Any("err", err))
		settle.Attempts, settle.DueAt = c.Attempts+1, time.Now().Add(wait)
	}
	s.settlePush(ctx, log, &settle)
}

// releaseClaim gives a claimed configuration back unchanged, due now.
func (s *Engine) releaseClaim(log *slog.Logger, c *store.PushConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.DueAt = time.Now()
	s.settlePush(ctx, log, c)
}

func (s *Engine) settlePush(ctx context.Context, log *slog.Logger, c *store.PushConfig) {
	saved, err := s.store.SettlePush(context.WithoutCancel(ctx), c)
	switch {
	case err == nil:
		if !saved.DueAt.IsZero() && !saved.DueAt.After(time.Now()) {
			s.pusher.kick() // more to send now
		}
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrConflict):
		// Deleted, or the claim lapsed and another round took it over.
	default:
		log.Error("record a push delivery", slog.Any("err", err))
	}
}

// pushBackoff is the wait before attempt n+1 after n failed attempts.
func (s *Engine) pushBackoff(n int) time.Duration {
	d := s.cfg.PushRetryMin
	for i := 1; i < n && d < s.cfg.PushRetryMax; i++ {
		d *= 2
	}
	return min(d, s.cfg.PushRetryMax)
}

// nextNotification finds the first entry to notify after c.SentSeq (up to
// c.TargetSeq). It returns nil and the last seq it looked at when there is
// none.
func (s *Engine) nextNotification(ctx context.Context, c *store.PushConfig) (*store.LogEntry, int64, error) {
	seq := c.SentSeq
	for seq < c.TargetSeq {
		entries, err := s.store.ReadLog(ctx, c.TaskID, seq, 64)
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

// notificationEvent decodes a log entry into the event a notification
// carries (the body is a StreamResponse holding it).
func notificationEvent(e store.LogEntry) (a2a.Event, error) {
	switch e.Kind {
	case store.KindStatus, store.KindReminder:
		var ev a2a.TaskStatusUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return nil, err
		}
		return &ev, nil
	case store.KindArtifact:
		var ev a2a.TaskArtifactUpdateEvent
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			return nil, err
		}
		return &ev, nil
	}
	return nil, fmt.Errorf("log entry %d of kind %q is not a notification", e.Seq, e.Kind)
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// checkPushConfig checks a push configuration a caller sent before anything
// is stored: a URL the server may call, an authentication scheme it can
// send, sizes within reason.
func (s *Engine) checkPushConfig(ctx context.Context, c *a2a.PushConfig) error {
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
	if s.cfg.AllowPrivateWebhooks || s.push.allowed(c.URL) {
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
func (s *Engine) putPushConfig(ctx context.Context, t *store.Task, c *a2a.PushConfig, fromSeq int64) (*a2a.PushConfig, error) {
	cfg := *c
	cfg.TaskID, cfg.Tenant = a2a.TaskID(t.ID), t.Tenant
	if cfg.ID == "" {
		sum := sha256.Sum256([]byte(cfg.URL + "\x00" + cfg.Token))
		cfg.ID = "push-" + hex.EncodeToString(sum[:8])
	}
	existing, err := s.store.ListPushConfigs(ctx, t.ID)
	if err != nil {
		return nil, errInternal(err)
	}
	replaces := false
	for _, e := range existing {
		replaces = replaces || e.ID == cfg.ID
	}
	if !replaces && len(existing) >= s.cfg.MaxPushConfigs {
		return nil, errInvalidParams("task %q already has %d push notification configurations, the most one task may have; delete one first", t.ID, len(existing))
	}
	raw, err := json.Marshal(&cfg)
	if err != nil {
		return nil, errInternal(err)
	}
	saved, err := s.store.PutPushConfig(ctx, &store.PushConfig{TaskID: t.ID, ID: cfg.ID, Config: raw, SentSeq: fromSeq, Limit: s.cfg.MaxPushConfigs})
	if errors.Is(err, store.ErrNotFound) {
		return nil, errTaskNotFound(t.ID)
	}
	if errors.Is(err, store.ErrLimit) {
		// Another create won the race past the check above: the store's
		// count is the one that holds.
		return nil, errInvalidParams("task %q already has %d push notification configurations, the most one task may have; delete one first", t.ID, s.cfg.MaxPushConfigs)
	}
	if err != nil {
		return nil, errInternal(err)
	}
	if !saved.DueAt.IsZero() {
		s.pusher.kick()
	}
	return &cfg, nil
}

func pushConfigOut(c *store.PushConfig) (*a2a.PushConfig, error) {
	var out a2a.PushConfig
	if err := json.Unmarshal(c.Config, &out); err != nil {
		return nil, errInternal(fmt.Errorf("decode push configuration %s of task %s: %w", c.ID, c.TaskID, err))
	}
	return &out, nil
}

func errNoPushConfig(taskID, id string) error {
	return a2a.NewError(a2a.ErrTaskNotFound, fmt.Sprintf("task %q has no push notification configuration %q", taskID, id))
}

// CreateTaskPushConfig implements a2asrv.RequestHandler. Only the task's
// owner may configure its notifications; the configuration receives what is
// notified from now on.
func (h *Handler) CreateTaskPushConfig(ctx context.Context, req *a2a.PushConfig) (_ *a2a.PushConfig, err error) {
	if ctx, err = h.admit(ctx); err != nil {
		return nil, err
	}
	defer func() { logInternal(h.s.log, "CreateTaskPushConfig", pushTask(req), err) }()
	if req == nil {
		return nil, errInvalidParams("the push notification configuration is missing")
	}
	if req.TaskID == "" {
		return nil, errInvalidParams("taskId is required")
	}
	t, err := h.getOwned(ctx, req.Tenant, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	if err := h.s.checkPushConfig(ctx, req); err != nil {
		return nil, err
	}
	return h.s.putPushConfig(ctx, t, req, t.LastSeq)
}

// GetTaskPushConfig implements a2asrv.RequestHandler.
func (h *Handler) GetTaskPushConfig(ctx context.Context, req *a2a.GetTaskPushConfigRequest) (_ *a2a.PushConfig, err error) {
	if ctx, err = h.admit(ctx); err != nil {
		return nil, err
	}
	defer func() { logInternal(h.s.log, "GetTaskPushConfig", string(req.TaskID), err) }()
	t, err := h.getOwned(ctx, req.Tenant, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	c, err := h.s.store.GetPushConfig(ctx, t.ID, req.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoPushConfig(t.ID, req.ID)
	}
	if err != nil {
		return nil, errInternal(err)
	}
	return pushConfigOut(c)
}

// ListTaskPushConfigs implements a2asrv.RequestHandler. A task has few
// configurations (MaxPushConfigs): they come on one page.
func (h *Handler) ListTaskPushConfigs(ctx context.Context, req *a2a.ListTaskPushConfigRequest) (_ *a2a.ListTaskPushConfigResponse, err error) {
	if ctx, err = h.admit(ctx); err != nil {
		return nil, err
	}
	defer func() { logInternal(h.s.log, "ListTaskPushConfigs", string(req.TaskID), err) }()
	if req.PageSize < 0 {
		return nil, errInvalidParams("pageSize must not be negative, got %d", req.PageSize)
	}
	if req.PageToken != "" {
		return nil, errInvalidParams("pageToken %q is not one this server gave: a task's push configurations come on one page", req.PageToken)
	}
	t, err := h.getOwned(ctx, req.Tenant, string(req.TaskID))
	if err != nil {
		return nil, err
	}
	cs, err := h.s.store.ListPushConfigs(ctx, t.ID)
	if err != nil {
		return nil, errInternal(err)
	}
	out := &a2a.ListTaskPushConfigResponse{Configs: []*a2a.PushConfig{}}
	for _, c := range cs {
		pc, err := pushConfigOut(c)
		if err != nil {
			return nil, err
		}
		out.Configs = append(out.Configs, pc)
	}
	return out, nil
}

// DeleteTaskPushConfig implements a2asrv.RequestHandler. What the
// configuration was still owed is not sent. Deleting a configuration that
// does not exist succeeds (the operation is idempotent); the task must
// still be the caller's.
func (h *Handler) DeleteTaskPushConfig(ctx context.Context, req *a2a.DeleteTaskPushConfigRequest) (err error) {
	if ctx, err = h.admit(ctx); err != nil {
		return err
	}
	defer func() { logInternal(h.s.log, "DeleteTaskPushConfig", string(req.TaskID), err) }()
	t, err := h.getOwned(ctx, req.Tenant, string(req.TaskID))
	if err != nil {
		return err
	}
	err = h.s.store.DeletePushConfig(ctx, t.ID, req.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleting is idempotent (A2A 1.0, 3.1.10): gone is gone
	}
	if err != nil {
		return errInternal(err)
	}
	return nil
}

func pushTask(c *a2a.PushConfig) string {
	if c == nil {
		return ""
	}
	return string(c.TaskID)
}
