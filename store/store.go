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

// Sentinel errors. Drivers translate their native errors into these at the
// boundary; callers test them with errors.Is.
var (
	// ErrNotFound: no task has the ID.
	ErrNotFound = errors.New("store: task not found")
	// ErrExists: CreateTask was given an ID that is already taken.
	ErrExists = errors.New("store: task already exists")
	// ErrConflict: the compare-and-set lost. The task's version is no longer
	// the one the caller expected (someone else changed it first, or the
	// caller's lease was taken over).
	ErrConflict = errors.New("store: concurrent modification")
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
)

// Task is one task row. The engine owns the meaning of the JSON columns; the
// store keeps them as opaque bytes and indexes the typed columns.
type Task struct {
	ID        string
	ContextID string
	Tenant    string
	Owner     string // the principal that created the task
	Agent     string // the name of the agent that serves the task

	State   a2a.TaskState
	Version int64 // starts at 1, +1 on every UpdateTask and claim
	LastSeq int64 // seq of the newest log entry, 0 when there is none

	Status     json.RawMessage // a2a.TaskStatus
	Artifacts  json.RawMessage // []*a2a.Artifact, nil when none
	Metadata   json.RawMessage // map[string]any, nil when none
	Checkpoint json.RawMessage // the agent's saved state, nil when none
	Question   json.RawMessage // the open question, nil when none
	Input      json.RawMessage // what the next run consumes (work owed), nil when none

	// Runnable marks work owed: the task must be run (new, or resumed by an
	// answer). A runnable task whose lease has lapsed is claimed by any node.
	Runnable   bool
	LeaseOwner string
	LeaseUntil time.Time // zero when unleased

	CreatedAt time.Time
	UpdatedAt time.Time
}

// LogEntry is one entry of a task's append-only log: the audit trail and
// the source of every streamed event.
type LogEntry struct {
	Seq       int64 // assigned by the store: 1, 2, 3, ... per task
	Kind      Kind
	MessageID string // the caller's messageId for KindMessage entries
	InHistory bool   // part of the task's history (request, questions, answers)
	Body      json.RawMessage
	At        time.Time
}

// ListParams selects tasks for ListTasks, newest first
// (by UpdatedAt, then ID, descending).
type ListParams struct {
	Tenant       string        // matched exactly, "" included
	Owner        string        // matched exactly, "" included
	Agent        string        // empty: any
	ContextID    string        // empty: any
	State        a2a.TaskState // empty: any
	UpdatedAfter time.Time     // zero: any; else strictly after
	PageSize     int           // > 0, else an error
	// After continues a listing: only tasks that sort after this cursor.
	After *Cursor
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

// Store is the durable state of an askpoint server. Implementations must be
// safe for concurrent use by many goroutines and, for multi-node drivers, by
// many processes.
type Store interface {
	// CreateTask inserts t with Version 1 and appends entries to its log,
	// in one transaction. It returns the stored task (Version, LastSeq and
	// timestamps set by the store; an entry's zero At becomes now). An empty
	// JSON column is stored as nil. ErrExists when the ID is taken.
	CreateTask(ctx context.Context, t *Task, entries []LogEntry) (*Task, error)

	// GetTask returns the task. ErrNotFound when there is none.
	GetTask(ctx context.Context, id string) (*Task, error)

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

	// Close releases the store's resources.
	Close() error
}
