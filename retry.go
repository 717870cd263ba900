package askpoint

import "github.com/askpoint/askpoint/internal/api"

// Permanent marks err, returned by a step (Start, Resume, a release), as
// one that trying again cannot mend: the task fails at once. Any other
// error a step returns is tried again with backoff, with the same
// idempotency key (Call.Key), up to Config.StepRetries times; a step that
// means to end the task says so with [Fail] or [Reject] instead. Either
// way the caller reads a reason naming the step and its attempts, and the
// error itself goes to the server's log. Permanent(nil) is nil.
func Permanent(err error) error { return api.Permanent(err) }

// IsPermanent reports whether err was marked with [Permanent].
func IsPermanent(err error) bool { return api.IsPermanent(err) }
