package telemetry

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/askpoint/askpoint/store"
)

// TimedStore wraps s so that every operation's latency is observed in
// askpoint_store_operation_seconds{op}. The optional interfaces the engine
// asks a store for are kept: SingleNode as s answers it, and
// store.Notifier when s implements it.
func (m *Metrics) TimedStore(s store.Store) store.Store {
	t := &timedStore{s: s, h: m.storeSeconds, obs: map[string]prometheus.Observer{}}
	for _, op := range []string{"CreateTask", "GetTask", "TaskByRequestKey", "LoadTask", "UpdateTask", "ReadLog", "History", "ListTasks",
		"ClaimRunnable", "ExtendLease", "DueTasks", "NextDue", "PutPushConfig", "GetPushConfig", "ListPushConfigs",
		"DeletePushConfig", "ClaimPushDeliveries", "SettlePush", "CountOpen", "DeleteFinished", "ScanLogs"} {
		t.obs[op] = m.storeSeconds.WithLabelValues(op)
	}
	if n, ok := s.(store.Notifier); ok {
		return &timedNotifier{timedStore: t, n: n}
	}
	return t
}

type timedStore struct {
	s   store.Store
	h   *prometheus.HistogramVec
	obs map[string]prometheus.Observer
}

type timedNotifier struct {
	*timedStore
	n store.Notifier
}

func (t *timedNotifier) Listen(ctx context.Context, fn func(taskID string)) error {
	return t.n.Listen(ctx, fn)
}

// SingleNode answers as the wrapped store does (false when it does not say).
func (t *timedStore) SingleNode() bool {
	sn, ok := t.s.(interface{ SingleNode() bool })
	return ok && sn.SingleNode()
}

// Unwrap is the wrapped store.
func (t *timedStore) Unwrap() store.Store { return t.s }

func (t *timedStore) since(op string, start time.Time) {
	t.obs[op].Observe(time.Since(start).Seconds())
}

func (t *timedStore) CreateTask(ctx context.Context, task *store.Task, e []store.LogEntry) (*store.Task, error) {
	defer t.since("CreateTask", time.Now())
	return t.s.CreateTask(ctx, task, e)
}
func (t *timedStore) GetTask(ctx context.Context, id string) (*store.Task, error) {
	defer t.since("GetTask", time.Now())
	return t.s.GetTask(ctx, id)
}
func (t *timedStore) TaskByRequestKey(ctx context.Context, key string) (*store.Task, error) {
	defer t.since("TaskByRequestKey", time.Now())
	return t.s.TaskByRequestKey(ctx, key)
}
func (t *timedStore) LoadTask(ctx context.Context, id string, p store.LoadParams) (*store.Loaded, error) {
	defer t.since("LoadTask", time.Now())
	return t.s.LoadTask(ctx, id, p)
}
func (t *timedStore) UpdateTask(ctx context.Context, task *store.Task, e []store.LogEntry) (*store.Task, error) {
	defer t.since("UpdateTask", time.Now())
	return t.s.UpdateTask(ctx, task, e)
}
func (t *timedStore) ReadLog(ctx context.Context, id string, after int64, limit int) ([]store.LogEntry, error) {
	defer t.since("ReadLog", time.Now())
	return t.s.ReadLog(ctx, id, after, limit)
}
func (t *timedStore) History(ctx context.Context, id string, last int) ([]store.LogEntry, error) {
	defer t.since("History", time.Now())
	return t.s.History(ctx, id, last)
}
func (t *timedStore) ListTasks(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	defer t.since("ListTasks", time.Now())
	return t.s.ListTasks(ctx, p)
}
func (t *timedStore) ClaimRunnable(ctx context.Context, p store.ClaimParams) ([]*store.Task, error) {
	defer t.since("ClaimRunnable", time.Now())
	return t.s.ClaimRunnable(ctx, p)
}
func (t *timedStore) ExtendLease(ctx context.Context, id, owner string, v int64, until time.Time) error {
	defer t.since("ExtendLease", time.Now())
	return t.s.ExtendLease(ctx, id, owner, v, until)
}
func (t *timedStore) DueTasks(ctx context.Context, p store.DueParams) ([]*store.Task, error) {
	defer t.since("DueTasks", time.Now())
	return t.s.DueTasks(ctx, p)
}
func (t *timedStore) NextDue(ctx context.Context, timer store.Timer) (time.Time, error) {
	defer t.since("NextDue", time.Now())
	return t.s.NextDue(ctx, timer)
}
func (t *timedStore) PutPushConfig(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	defer t.since("PutPushConfig", time.Now())
	return t.s.PutPushConfig(ctx, c)
}
func (t *timedStore) GetPushConfig(ctx context.Context, taskID, id string) (*store.PushConfig, error) {
	defer t.since("GetPushConfig", time.Now())
	return t.s.GetPushConfig(ctx, taskID, id)
}
func (t *timedStore) ListPushConfigs(ctx context.Context, taskID string) ([]*store.PushConfig, error) {
	defer t.since("ListPushConfigs", time.Now())
	return t.s.ListPushConfigs(ctx, taskID)
}
func (t *timedStore) DeletePushConfig(ctx context.Context, taskID, id string) error {
	defer t.since("DeletePushConfig", time.Now())
	return t.s.DeletePushConfig(ctx, taskID, id)
}
func (t *timedStore) ClaimPushDeliveries(ctx context.Context, p store.ClaimParams) ([]*store.PushConfig, error) {
	defer t.since("ClaimPushDeliveries", time.Now())
	return t.s.ClaimPushDeliveries(ctx, p)
}
func (t *timedStore) SettlePush(ctx context.Context, c *store.PushConfig) (*store.PushConfig, error) {
	defer t.since("SettlePush", time.Now())
	return t.s.SettlePush(ctx, c)
}
func (t *timedStore) ScanLogs(ctx context.Context, kinds []store.Kind, fn func(taskID, agent string, e store.LogEntry) error) error {
	defer t.since("ScanLogs", time.Now())
	return t.s.ScanLogs(ctx, kinds, fn)
}
func (t *timedStore) CountOpen(ctx context.Context, tenant, owner string) (int, error) {
	defer t.since("CountOpen", time.Now())
	return t.s.CountOpen(ctx, tenant, owner)
}

func (t *timedStore) DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error) {
	defer t.since("DeleteFinished", time.Now())
	return t.s.DeleteFinished(ctx, before, limit)
}

// Secret is read once, when the engine starts: not timed.
func (t *timedStore) Secret(ctx context.Context, name string) ([]byte, error) {
	return t.s.Secret(ctx, name)
}

func (t *timedStore) Close() error { return t.s.Close() }
