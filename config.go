package askpoint

import "github.com/askpoint/askpoint/internal/api"

// Config configures a [Server]: the store (the one required field), the
// workers and leases, the question defaults (expiry, attempts, reminders),
// push delivery, the edge's limits and rules (tokens, body and ID sizes,
// hosts and origins, timeouts, connections), the observer of metrics and
// traces, and the clock. The zero value of every field but Store means its
// default; each field's documentation says what it is. See [api.Config].
type Config = api.Config

// InputRequiredStreams says what a stream does when its task pauses in
// input-required (Config.InputRequiredStreams).
type InputRequiredStreams = api.InputRequiredStreams

const (
	// CloseStreams ends the stream at input-required (the HTTP+JSON
	// binding's reading of A2A 1.0). The caller answers with a new call on
	// the same task. The default.
	CloseStreams = api.CloseStreams
	// KeepStreamsOpen keeps the stream open until the task moves on.
	KeepStreamsOpen = api.KeepStreamsOpen
)
