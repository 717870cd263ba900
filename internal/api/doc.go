// Package api holds the types of askpoint's public API, each defined once:
// the agent API (Agent, Call, Outcome, Resumption, Hold), the server's
// Config and the Observer seam of metrics and traces.
//
// The root package askpoint aliases every one of them, and that is where an
// agent author or an embedder names them (askpoint.Call, askpoint.Config).
// They live here, in a leaf that imports no other part of askpoint but the
// question convention and the store interface, so that the engine, the
// fronts and telemetry can read them without importing the root package
// (docs/decisions/0084-one-set-of-types.md). The functions of this package
// that are not methods (Bind, WakeTokenOf, ...) are the runtime's side of the
// types: a user of askpoint cannot reach them.
package api
