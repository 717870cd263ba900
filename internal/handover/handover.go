// Package handover lets the engine hand a store the task it writes: a
// store that takes it returns that task, set to what it stored, instead
// of a copy of it (one task's allocation per write).
package handover

import (
	"context"

	"github.com/askpoint/askpoint/store"
)

// Token marks a call of a store's WriteHandedOver as this module's: the
// method is exported, for the engine in another package, but takes a type
// only this module can name.
type Token struct{}

// Writer is a store that takes a task handed over.
type Writer interface {
	// WriteHandedOver is CreateTask (create) or UpdateTask of t, returning
	// t itself set as the store would set the copy it returns (a wrapper
	// over a store that does not take t returns that store's copy); on an
	// error t is as it was. The caller gives t up: it keeps no other reference
	// to t that it reads as the task it wrote, nor one that it changes.
	WriteHandedOver(ctx context.Context, t *store.Task, entries []store.LogEntry, create bool, _ Token) (*store.Task, error)
}
