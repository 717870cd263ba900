package engine

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// What a node keeps of the rows it wrote (rowCache): at most this many
// tasks, this many bytes of their JSON in all, and no task whose row,
// request and messages come to more than rowCacheMaxRow bytes (a task
// carrying large files is read from the store, as before).
const (
	rowCacheSize   = 1024
	rowCacheBytes  = 8 << 20
	rowCacheMaxRow = 256 << 10
)

// rowCache holds the rows this node wrote last, so that a transition of a
// task the node made shortly before (the answer to a question it just
// asked) decides without reading the store again. It keeps only tasks
// this node created, so it knows each one's every message while no other
// node writes them: a hit answers all that store.LoadTask would. On a
// store one process owns (store.SingleNode, where every write of a task
// goes through this node's commit) a kept row is read instead of the
// store; on a shared one the store is asked whether the task is still at
// the kept row's version (store.LoadParams.Version), which a lock's read
// answers without reading the row. It can never make a write wrong: every
// write is a compare-and-set on the version, and a write that fails drops
// the row, so the next attempt reads the store.
type rowCache struct {
	store store.Store
	// single: the store is this process's alone (store.SingleNode), so
	// the rows this node wrote are the store's, and are read without
	// asking it. Set once by newRowCache.
	single bool

	mu    sync.Mutex
	lru   list.List // of *cachedRow, the most recent first
	m     map[string]*list.Element
	bytes int // the size of every kept row
}

func newRowCache(st store.Store) *rowCache {
	sn, ok := st.(interface{ SingleNode() bool })
	return &rowCache{store: st, single: ok && sn.SingleNode()}
}

// singleNode reports whether the store is this process's alone
// (SingleNode), so that the rows this node wrote are the store's.
func (c *rowCache) singleNode() bool { return c.single }

type cachedRow struct {
	id       string
	task     store.Task
	status   *a2a.Message    // the message in task.Status, as written; nil when not known
	request  json.RawMessage // the body of the first entry
	messages []cachedMessage // each messageId's first message entry, in the order written
	size     int             // bytes of JSON held
}

// cachedMessage is the body of the first message entry with a messageId.
// A task's messages are few (its request and its answers, within
// rowCacheMaxRow), so they are a list, looked up in order.
type cachedMessage struct {
	id   string
	body json.RawMessage
}

// message is the body of the first message entry with messageId id; ok
// false when there is none.
func (r *cachedRow) message(id string) (body json.RawMessage, ok bool) {
	for _, m := range r.messages {
		if m.id == id {
			return m.body, true
		}
	}
	return nil, false
}

// measure sets r.size from what r holds.
func (r *cachedRow) measure() {
	t := &r.task
	n := len(t.Status) + len(t.Artifacts) + len(t.Metadata) + len(t.Checkpoint) + len(t.Question) + len(t.Input) + len(t.Pause) + len(r.request)
	for _, m := range r.messages {
		n += len(m.body)
	}
	r.size = n
}

// load answers LoadTask(id, p) from the cache; ok is false on a miss.
func (c *rowCache) load(id string, p store.LoadParams) (*store.Loaded, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	r := el.Value.(*cachedRow)
	t := r.task
	l := &store.Loaded{Task: &t}
	if p.MessageID != "" {
		l.Message, _ = r.message(p.MessageID)
	}
	if p.Request {
		l.Request = r.request
	}
	return l, true
}

// read is store.LoadTask, answered from the cache of rows this node
// wrote when the store is one process's; kept says it was. A kept row may
// be stale when a write of this node's reached the cache out of order (a
// step's outcome before the message it resumed, see wrote), so it may
// decide only a write, which the compare-and-set checks: a caller that
// would decide anything else from it drops it and loads again.
//
// On a shared store the kept row's version goes with the read: a store that
// finds the task still at it (under a lock that holds the row) says so
// instead of reading it, and the kept row answers; a task at another
// version was written by another node too, and its kept row, which misses
// that node's messages, is dropped.
func (c *rowCache) read(ctx context.Context, id string, p store.LoadParams) (l *store.Loaded, kept bool, err error) {
	if c.single {
		if l, ok := c.load(id, p); ok {
			return l, true, nil
		}
	} else {
		p.Version = c.version(id)
	}
	l, err = c.store.LoadTask(ctx, id, p)
	if err != nil || p.Version == 0 {
		return l, false, err
	}
	if l.Unchanged {
		if kl, ok := c.load(id, p); ok && kl.Task.Version == p.Version {
			return kl, true, nil
		}
		// The kept row moved meanwhile: read the task (the lock holds it).
		p.Version = 0
		l, err = c.store.LoadTask(ctx, id, p)
	}
	c.drop(id)
	return l, false, err
}

// version is the version of task id's kept row, 0 when none is kept.
func (c *rowCache) version(id string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		return el.Value.(*cachedRow).task.Version
	}
	return 0
}

// committed records a committed write of saved with entries (see wrote).
func (c *rowCache) committed(saved *store.Task, entries []store.LogEntry, created bool) {
	c.wrote(saved, entries, created)
}

// wrote records a committed write of saved with entries: a new row when
// the write created the task, an update of a row the cache holds. A task
// that reached a final state is dropped: it takes no more transitions.
func (c *rowCache) wrote(saved *store.Task, entries []store.LogEntry, created bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*list.Element{}
	}
	el, ok := c.m[saved.ID]
	if saved.State.Terminal() {
		if ok {
			c.remove(el)
		}
		return
	}
	var r *cachedRow
	switch {
	case ok:
		r = el.Value.(*cachedRow)
		c.lru.MoveToFront(el)
	case created:
		// Room for the request and an answer.
		r = &cachedRow{id: saved.ID, messages: make([]cachedMessage, 0, 2)}
		if len(entries) > 0 {
			r.request = slices.Clip(entries[0].Body)
		}
		c.m[saved.ID] = c.lru.PushFront(r)
	default:
		return // a task made before this node started, or evicted
	}
	if created || saved.Version > r.task.Version {
		// The status column is the last status entry's; a write with none
		// left it as it was.
		if !bytes.Equal(r.task.Status, saved.Status) {
			r.status = nil
		}
		for _, e := range entries {
			if e.Kind == store.KindStatus {
				r.status = e.Message
			}
		}
		r.task = clipped(saved)
	}
	for _, e := range entries {
		if e.Kind != store.KindMessage || e.MessageID == "" {
			continue
		}
		if _, seen := r.message(e.MessageID); !seen {
			r.messages = append(r.messages, cachedMessage{id: e.MessageID, body: slices.Clip(e.Body)})
		}
	}
	c.bytes -= r.size
	r.measure()
	c.bytes += r.size
	if r.size > rowCacheMaxRow {
		c.remove(c.m[saved.ID])
	}
	for (c.bytes > rowCacheBytes || c.lru.Len() > rowCacheSize) && c.lru.Len() > 0 {
		c.remove(c.lru.Back())
	}
}

// statusMessage is the message of task id's status at version, as this
// node wrote it (shared: never to be changed), nil when not known; raw is
// its JSON as written in the status column, nil when that is not known.
func (c *rowCache) statusMessage(id string, version int64) (m *a2a.Message, raw json.RawMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		if r := el.Value.(*cachedRow); r.task.Version == version && r.status != nil {
			return r.status, statusMessageBytes(r.task.Status)
		}
	}
	return nil, nil
}

// leased records an ExtendLease of task id that succeeded.
func (c *rowCache) leased(id, owner string, version int64, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[id]
	if !ok {
		return
	}
	r := el.Value.(*cachedRow)
	if r.task.Version != version || r.task.LeaseOwner != owner {
		c.remove(el) // not the row the store moved
		return
	}
	if until.IsZero() {
		r.task.LeaseUntil = time.Time{}
	} else {
		r.task.LeaseUntil = time.UnixMilli(until.UnixMilli()).UTC()
	}
}

// drop forgets task id: its next transition reads the store.
func (c *rowCache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[id]; ok {
		c.remove(el)
	}
}

func (c *rowCache) remove(el *list.Element) {
	r := el.Value.(*cachedRow)
	c.lru.Remove(el)
	delete(c.m, r.id)
	c.bytes -= r.size
}

// clipped is a copy of t whose JSON columns have no spare capacity, so
// that an append to a copy never writes into the cached bytes.
func clipped(t *store.Task) store.Task {
	c := *t
	c.PushDue = false
	c.RequestKey = ""
	c.Status, c.Artifacts, c.Metadata = slices.Clip(c.Status), slices.Clip(c.Artifacts), slices.Clip(c.Metadata)
	c.Checkpoint, c.Question, c.Input, c.Pause = slices.Clip(c.Checkpoint), slices.Clip(c.Question), slices.Clip(c.Input), slices.Clip(c.Pause)
	return c
}
