package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// AllowWebhookHosts adds hosts (host:port, as written in URLs) to
// Config.WebhookHosts: the addresses a server listens on, known once it
// listens, so that an orchestrator it serves hears from a sub-agent it
// also serves.
func (s *Engine) AllowWebhookHosts(hosts ...string) { s.outbox.allow(hosts...) }

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
	if err := h.s.outbox.check(ctx, req); err != nil {
		return nil, err
	}
	return h.s.outbox.put(ctx, t, req, t.LastSeq)
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
