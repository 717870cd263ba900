package store

import "context"

// Notifier is implemented by drivers whose writes can be seen by other
// processes (store/postgres): it reports the IDs of tasks changed by any
// process, this one included, so that a node can wake the callers it has
// waiting on a task that another node changed (a blocking SendMessage, a
// stream, a subscription).
//
// A notification is a hint, never the data: the waiter re-reads the store.
// Notifications may be lost (while the driver reconnects) or repeated; a
// lost one only delays a waiter until its next poll of the store.
type Notifier interface {
	// Listen calls fn with the ID of each task changed by a committed
	// write, from one goroutine, until ctx is done. It reconnects on
	// errors by itself and returns only when ctx is done (then nil).
	// fn must return quickly. fn("") (no ID) says that notifications may
	// have been missed (the listener has just connected again): every
	// waiter should read the store again.
	Listen(ctx context.Context, fn func(taskID string)) error
}
