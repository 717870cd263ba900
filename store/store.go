// Package store defines the one seam between the askpoint engine and its
// durable storage. A paused task is rows behind this interface and nothing
// else: no goroutine, channel or timer in the engine stands for it.
//
// Every driver (store/sqlite, later store/postgres) runs the conformance
// suite in store/storetest; a new semantic gets its first test there.
//
// The interface is unstable while askpoint is young: drivers live in this
// module and change with it.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TerminalStates are the task states DeleteFinished may delete and
// CountOpen does not count, as stored.
var TerminalStates = []string{"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"}

// TaskStates are the states a task is stored in: A2A 1.0's, in the order
// they sort as stored. A listing that names no state reads the tasks of
// each of these (the drivers' list index holds the state before the time),
// so a task stored in another state is listed by its state only.
var TaskStates = []string{
	"TASK_STATE_AUTH_REQUIRED", "TASK_STATE_CANCELED", "TASK_STATE_COMPLETED", "TASK_STATE_FAILED",
	"TASK_STATE_INPUT_REQUIRED", "TASK_STATE_REJECTED", "TASK_STATE_SUBMITTED", "TASK_STATE_WORKING",
}

// Sentinel errors. Drivers translate their native errors into these at the
// boundary; callers test them with errors.Is.
var (
	// ErrNotFound: no task has the ID.
	ErrNotFound = errors.New("store: task not found")
	// ErrExists: CreateTask was given an ID, or a RequestKey, that is
	// already taken.
	ErrExists = errors.New("store: task already exists")
	// ErrConflict: the compare-and-set lost. The task's version is no longer
	// the one the caller expected (someone else changed it first, or the
	// caller's lease was taken over).
	ErrConflict = errors.New("store: concurrent modification")
	// ErrLimit: PutPushConfig would create a configuration beyond
	// PushConfig.Limit.
	ErrLimit = errors.New("store: the task has as many push configurations as it may")
)

// Kind says what a log entry holds.
type Kind string

const (
	// KindMessage is a message from the caller (role user): the request,
	// an answer, a follow-up. Body is an a2a.Message.
	KindMessage Kind = "message"
	// KindStatus is a status change. Body is an a2a.TaskStatusUpdateEvent.
	KindStatus Kind = "status"
	// KindArtifact is an artifact update. Body is an a2a.TaskArtifactUpdateEvent.
	KindArtifact Kind = "artifact"
	// KindReminder is a reminder of the open question, for push
	// notifications only (streams skip it). Body is an
	// a2a.TaskStatusUpdateEvent carrying the unchanged status.
	KindReminder Kind = "reminder"
)

// Timer names one of a task's timer columns.
type Timer string

const (
	// TimerWake is Task.WakeAt: the question's expiry or its next reminder.
	TimerWake Timer = "wake"
	// TimerHold is Task.HoldAt: the next release of something the task holds.
	TimerHold Timer = "hold"
)

// Task is one task row. The engine owns the meaning of the JSON columns; the
// store keeps them as opaque bytes and indexes the typed columns.
type Task struct {
	ID        string
	ContextID string
	Tenant    string
	Owner     string // the principal that created the task
	Agent     string // the name of the agent that serves the task

	// RequestKey identifies the request that created the task (the engine
	// derives it from the caller, the agent and the first message), so
	// that a redelivered first message finds its task again: CreateTask
	// refuses a second task with the same key, and TaskByRequestKey looks
	// it up. Written once by CreateTask and never changed; neither
	// CreateTask's result nor any read carries it. Empty: none (no
	// uniqueness). Kept apart from ID so that IDs can be time-ordered,
	// which keeps every index keyed by task ID appending instead of
	// writing at random places (decision 0017).
	RequestKey string

	State   a2a.TaskState
	Version int64 // starts at 1, +1 on every UpdateTask and claim
	LastSeq int64 // seq of the newest log entry, 0 when there is none

	Status     json.RawMessage // a2a.TaskStatus
	Artifacts  json.RawMessage // []*a2a.Artifact, nil when none
	Metadata   json.RawMessage // map[string]any, nil when none
	Checkpoint json.RawMessage // the agent's saved state, nil when none
	Question   json.RawMessage // the open question, nil when none
	Input      json.RawMessage // what the next run consumes (work owed), nil when none
	Pause      json.RawMessage // the engine's state of the pause (expiry action, reminders sent, holds), nil when none

	// Timers: when the engine must look at the task again, zero when
	// never. Each is indexed, so finding what is due costs O(due), not
	// O(paused). Stored at millisecond precision.
	WakeAt time.Time // question expiry or next reminder
	HoldAt time.Time // next hold release

	// Runnable marks work owed: the task must be run (new, or resumed by an
	// answer). A runnable task whose lease has lapsed is claimed by any node.
	Runnable   bool
	LeaseOwner string
	LeaseUntil time.Time // zero when unleased

	CreatedAt time.Time
	UpdatedAt time.Time

	// PushDue is set on the task UpdateTask returns when the write gave one
	// of the task's push configurations something new to deliver (an entry
	// with Notify set, and a configuration that had not reached it), so
	// that the engine wakes its push deliverer only then. Not stored.
	PushDue bool
}

// LogEntry is one entry of a task's append-only log: the audit trail and
// the source of every streamed event.
type LogEntry struct {
	Seq       int64 // assigned by the store: 1, 2, 3, ... per task
	Kind      Kind
	MessageID string // the caller's messageId for KindMessage entries
	InHistory bool   // part of the task's history (request, questions, answers)
	// Notify: the entry goes to the task's push configurations. Appending
	// one marks every configuration of the task as having something to
	// deliver (see PushConfig.TargetSeq).
	Notify bool
	Body   json.RawMessage
	At     time.Time

	// Message and Artifact are the engine's decoded copy of what an entry
	// it built holds (a message entry's message, a status entry's status
	// message; an artifact entry's artifact), so that a reply is built
	// without decoding what was just encoded. Stores neither keep nor
	// return them.
	Message  *a2a.Message  `json:"-"`
	Artifact *a2a.Artifact `json:"-"`
}

// LoadParams says what a transition needs besides the task row, read with
// it in one call (see Store.LoadTask).
type LoadParams struct {
	// MessageID, when set, asks for the body of the task's first message
	// entry (KindMessage) with this messageId: the deduplication of a
	// follow-up, answered from an index instead of the history.
	MessageID string
	// Request asks for the body of the task's first log entry, the message
	// that started it.
	Request bool
	// Version, when not zero, is the version of the task the caller keeps
	// a copy of: the row as its own write left it, with every message the
	// task's log holds. A store may then answer with Loaded.Unchanged and
	// no task when the task is still at that version, under a task lock
	// that holds its row from this read on (Locker), so that the copy is
	// the task until the lock's write. A store need not (SQLite's never
	// does: its node reads no row it wrote).
	Version int64
}

// Loaded is a task with what LoadParams asked for.
type Loaded struct {
	Task *Task
	// Message is the body of the message entry with LoadParams.MessageID,
	// nil when there is none (or none was asked for).
	Message json.RawMessage
	// Request is the body of the task's first log entry, nil when not asked
	// for.
	Request json.RawMessage
	// Unchanged says the task is still at LoadParams.Version, held by the
	// lock the read was made under; Task, Message and Request are then nil.
	Unchanged bool
}

// ListParams selects tasks for ListTasks, newest first
// (by UpdatedAt, then ID, descending).
type ListParams struct {
	Tenant       string        // matched exactly, "" included
	Owner        string        // matched exactly, "" included
	Agent        string        // empty: any (read in index order only when named, as the engine does)
	ContextID    string        // empty: any
	State        a2a.TaskState // empty: any
	UpdatedAfter time.Time     // zero: any; else strictly after
	PageSize     int           // > 0, else an error
	// After continues a listing: only tasks that sort after this cursor.
	After *Cursor
	// NoTotal leaves ListResult.TotalSize 0 instead of counting the
	// matching tasks, for a caller that counted them already (the later
	// reads of one page, or of one listing).
	NoTotal bool
}

// Cursor is a position in a newest-first listing.
type Cursor struct {
	UpdatedAt time.Time
	ID        string
}

// ListResult is one page.
type ListResult struct {
	Tasks     []*Task
	TotalSize int     // every task that matches, across pages
	Next      *Cursor // nil on the last page
}

// ClaimParams asks for runnable tasks whose lease has lapsed.
type ClaimParams struct {
	Owner    string
	Now      time.Time
	LeaseFor time.Duration
	Limit    int
}

// DueParams asks for tasks whose timer is due.
type DueParams struct {
	Timer Timer
	Now   time.Time // due: the timer is set and <= Now
	Limit int       // > 0
}

// PushConfig is one push notification configuration of a task, with the
// state of its delivery. The push outbox is the task's log: a
// configuration delivers, in order, the entries with Notify set after
// SentSeq, up to TargetSeq.
type PushConfig struct {
	TaskID string
	ID     string
	// Config is the configuration as the caller set it (an a2a.PushConfig:
	// URL, token, authentication), kept as opaque bytes.
	Config    json.RawMessage
	CreatedAt time.Time // set by the store

	// SentSeq is the newest log seq delivered (or given up on). Deliveries
	// start after it.
	SentSeq int64
	// TargetSeq is the seq of the task's newest Notify entry, maintained
	// by the store as entries are appended. SentSeq < TargetSeq means
	// there is something to deliver.
	TargetSeq int64
	// Attempts is how many times the next delivery has failed.
	Attempts int
	// DueAt is when the next delivery attempt is due; zero when there is
	// nothing to deliver. A claim moves it to the end of the claim's lease.
	DueAt time.Time
	// Version starts at 1 and increments on every claim and settle (not
	// on appends that move TargetSeq).
	Version int64

	// Limit, when > 0, caps the task's configurations: PutPushConfig
	// refuses to create one more when the task has Limit already (ErrLimit;
	// replacing an existing one is always allowed). The count and the
	// insert are one transaction, so racing creates cannot pass the cap.
	// Not stored.
	Limit int
}

// Store is the durable state of an askpoint server. Implementations must be
// safe for concurrent use by many goroutines and, for multi-node drivers, by
// many processes.
type Store interface {
	// CreateTask inserts t with Version 1 and appends entries to its log,
	// in one transaction. It returns the stored task (Version, LastSeq and
	// timestamps set by the store; an entry's zero At becomes now). An empty
	// JSON column is stored as nil. ErrExists when the ID is taken, or
	// t.RequestKey is set and another task has it.
	CreateTask(ctx context.Context, t *Task, entries []LogEntry) (*Task, error)

	// TaskByRequestKey returns the task created with this RequestKey.
	// ErrNotFound when there is none (or key is empty).
	TaskByRequestKey(ctx context.Context, key string) (*Task, error)

	// GetTask returns the task. ErrNotFound when there is none.
	GetTask(ctx context.Context, id string) (*Task, error)

	// LoadTask returns the task and, in the same read, what p asks for
	// (an indexed lookup each, never a walk of the log). ErrNotFound when
	// there is no such task.
	LoadTask(ctx context.Context, id string, p LoadParams) (*Loaded, error)

	// UpdateTask replaces every mutable column of the task with those of t
	// (all but ID, Tenant, Owner, Agent and CreatedAt), appends entries to
	// its log, and increments the version, in one transaction, only if the
	// stored version still equals t.Version (compare-and-set). It returns
	// the stored task. ErrConflict when the version moved, ErrNotFound
	// when there is no such task.
	UpdateTask(ctx context.Context, t *Task, entries []LogEntry) (*Task, error)

	// ReadLog returns the task's log entries with Seq > afterSeq, oldest
	// first, at most limit of them (limit <= 0: all). An unknown task has
	// an empty log.
	ReadLog(ctx context.Context, taskID string, afterSeq int64, limit int) ([]LogEntry, error)

	// History returns the task's entries with InHistory set, oldest first;
	// with last > 0 only the newest last of them.
	History(ctx context.Context, taskID string, last int) ([]LogEntry, error)

	// ListTasks returns one page of the matching tasks, newest first.
	ListTasks(ctx context.Context, p ListParams) (*ListResult, error)

	// ScanLogs calls fn with every log entry whose Kind is in kinds (empty:
	// every kind) of every task, across all tenants and owners, with the
	// task's ID and agent: one task's entries together and oldest first,
	// the tasks in no set order. It streams the rows as it reads them, so
	// what it holds does not grow with the store (for askpoint stats,
	// which reads the whole store). fn must not call the store; an error
	// from fn ends the scan and ScanLogs returns it. It only reads, so it
	// works on a store opened read-only.
	ScanLogs(ctx context.Context, kinds []Kind, fn func(taskID, agent string, e LogEntry) error) error

	// ClaimRunnable leases up to Limit runnable tasks whose lease is unset
	// or lapsed (LeaseUntil <= Now) to Owner until Now+LeaseFor,
	// incrementing each one's version (not UpdatedAt), and returns them in
	// no set order. Two concurrent claimers never get the same task.
	ClaimRunnable(ctx context.Context, p ClaimParams) ([]*Task, error)

	// ExtendLease moves the lease of a task the caller holds (same owner,
	// same version) to until, without changing the version or UpdatedAt.
	// A zero until releases the lease at once. ErrConflict when the caller
	// no longer holds it, ErrNotFound when there is no such task.
	ExtendLease(ctx context.Context, id, owner string, version int64, until time.Time) error

	// DueTasks returns up to Limit tasks whose timer p.Timer is set and
	// <= p.Now, earliest first. It reads an index on the timer, so it
	// costs O(due), however many tasks are paused.
	DueTasks(ctx context.Context, p DueParams) ([]*Task, error)

	// NextDue returns the earliest time any task's timer is set to, zero
	// when none is set.
	NextDue(ctx context.Context, timer Timer) (time.Time, error)

	// PutPushConfig creates the configuration (c.TaskID, c.ID) or, when it
	// exists, replaces its Config and keeps its delivery state. A new
	// configuration starts delivering after c.SentSeq: the store sets its
	// TargetSeq to the task's newest Notify entry after it (SentSeq when
	// none) and DueAt to now when there is one, in one transaction.
	// Attempts and Version start at 0 and 1. ErrNotFound when the task
	// does not exist; ErrLimit when c.Limit > 0, c is new and the task has
	// c.Limit configurations already. It returns the stored configuration.
	PutPushConfig(ctx context.Context, c *PushConfig) (*PushConfig, error)

	// CountOpen counts the tenant's tasks owned by owner that are not in a
	// terminal state (completed, failed, canceled, rejected): what a
	// per-principal quota on open tasks reads.
	CountOpen(ctx context.Context, tenant, owner string) (int, error)

	// DeleteFinished deletes up to limit tasks in a terminal state whose
	// UpdatedAt is before before, with their logs and push
	// configurations, oldest first, and returns how many it deleted. A task
	// that is not terminal is never deleted.
	DeleteFinished(ctx context.Context, before time.Time, limit int) (int, error)

	// GetPushConfig returns one configuration. ErrNotFound when none.
	GetPushConfig(ctx context.Context, taskID, id string) (*PushConfig, error)

	// ListPushConfigs returns a task's configurations, oldest first (by
	// CreatedAt, then ID). An unknown task has none.
	ListPushConfigs(ctx context.Context, taskID string) ([]*PushConfig, error)

	// DeletePushConfig deletes one configuration. ErrNotFound when none.
	DeletePushConfig(ctx context.Context, taskID, id string) error

	// ClaimPushDeliveries leases up to Limit configurations whose DueAt is
	// set and <= Now, by moving their DueAt to Now+LeaseFor and
	// incrementing their version, and returns them in no set order (Owner
	// is informational). Two concurrent claimers never get the same one.
	ClaimPushDeliveries(ctx context.Context, p ClaimParams) ([]*PushConfig, error)

	// SettlePush records the outcome of a delivery attempt on a claimed
	// configuration, only if its version still equals c.Version
	// (compare-and-set): SentSeq and Attempts are written from c, and
	// DueAt becomes c.DueAt when set (a retry), else now when TargetSeq >
	// c.SentSeq (more to deliver, including entries appended during the
	// attempt) or zero. The version increments. ErrConflict when the
	// version moved, ErrNotFound when the configuration is gone.
	SettlePush(ctx context.Context, c *PushConfig) (*PushConfig, error)

	// Secret returns the deployment's secret called name: SecretSize random
	// bytes, created by the first call on any handle and the same on every
	// handle of the database from then on (two handles racing to create it
	// get the same bytes). The engine derives wake tokens from it, so that no
	// task row holds one. An empty name is an error.
	Secret(ctx context.Context, name string) ([]byte, error)

	// Close releases the store's resources.
	Close() error
}

// SecretSize is the length in bytes of a secret Store.Secret creates.
const SecretSize = 32

// Locker is implemented by a store that can hold a task still for a
// caller that runs something before it writes (the engine's quick steps:
// a step run before the message that makes it owed is written, decision
// 0020): while the lock holds a task, every other transition of it waits,
// so nothing is taken for a write that then loses.
//
// LockTask takes the lock of key, a task ID or a request key, waiting
// while another caller holds it on this handle (an in-process lock). Pass
// the lock on with WithLock: a LoadTask of the key's task made with a
// context that carries it holds the task against every other handle too
// when the store is shared by several processes (store/postgres: the row
// is locked, FOR UPDATE, in a transaction of the lock's own); from then
// on, until the UpdateTask made with that context commits or Unlock, a
// write of the task on any other handle waits, and then finds the version
// moved (ErrConflict) when the lock's holder wrote. A key that names no
// stored task (a request key, the ID of a task not yet created) is held on
// this handle only: across handles, CreateTask's unique keys decide.
type Locker interface {
	LockTask(key string) TaskLock
}

// TaskLock is a lock LockTask took.
type TaskLock interface {
	// Holding reports whether the lock holds its task against every other
	// writer, on every handle, until the lock's write or Unlock: always on
	// a store one process owns; on a shared one, from a LoadTask made under
	// the lock (when the store could spare the connection it takes) until
	// the UpdateTask made under it.
	Holding() bool
	// Unlock releases the lock (rolling back what the lock holds open, if
	// it wrote nothing). It may be called more than once.
	Unlock()
}

type lockKey struct{}

// WithLock returns ctx carrying l: the store's LoadTask and UpdateTask of
// l's task made with it are made under the lock (see Locker).
func WithLock(ctx context.Context, l TaskLock) context.Context {
	return context.WithValue(ctx, lockKey{}, l)
}

// LockFrom is the lock ctx carries, nil when none.
func LockFrom(ctx context.Context) TaskLock {
	l, _ := ctx.Value(lockKey{}).(TaskLock)
	return l
}

// LockerOf is s's Locker, looking through wrappers that say what they wrap
// (an Unwrap() Store method: timing, counting), nil when there is none. A
// wrapper passes a lock on untouched: it travels in the context.
func LockerOf(s Store) Locker {
	for s != nil {
		if l, ok := s.(Locker); ok {
			return l
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return nil
		}
		s = u.Unwrap()
	}
	return nil
}
