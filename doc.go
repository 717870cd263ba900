// Package askpoint runs A2A 1.0 agents that stop to ask a question and carry
// on later: minutes later from a machine, or days later from a person.
//
// An agent is a resumable step function. Declare a checkpoint type C and an
// answer type A, write what happens when a task starts and when an answer
// arrives, and return one [Outcome]: [Ask] a question and save the
// checkpoint, [Complete] with artifacts, [Fail] or [Reject] with a reason,
// [RequireAuth], or [Await] an event. [Steps] is the typed way to write
// one:
//
//	agent := askpoint.Steps[Checkpoint, Answer]{
//		OnStart:  func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) { ... },
//		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, a Answer) (askpoint.Outcome, error) { ... },
//	}
//
// A [Server] serves agents over the A2A bindings on a durable store
// (store/sqlite by default, store/postgres for several nodes). A paused task
// is rows in the store, never a waiting goroutine: a restart loses nothing,
// and any node can take an answer for any task. Answers are validated
// against the question's JSON Schema and re-asked with errors; duplicates
// are harmless, two racing answers cannot both resume, and unanswered
// questions (and requests for a credential) expire. Persistence, the wire, validation, re-asks, leases and
// push notifications are the runtime's.
//
//	srv, err := askpoint.NewServer(askpoint.Config{Store: st, Tokens: tokens})
//	err = srv.Register(askpoint.AgentSpec{Name: "expense", Agent: agent, Card: card})
//	err = srv.ListenAndServe(ctx, "127.0.0.1:8420") // JSON-RPC, HTTP+JSON and gRPC, until ctx ends
//
// [Server.Serve] puts all three bindings on one port behind one edge: the
// same tokens, limits and timeouts on each, a connection cap, a graceful
// stop. [Server.Handler] and [Server.GRPC] mount them on servers of your
// own; [Server.Handle] adds a page of your own beside them. Config.Observer
// takes the telemetry package's metrics and traces (or an [Observer] of
// yours); askpointtest serves agents for their tests.
//
// The types of this package's API are defined once, in internal/api, and
// aliased here (Call, Outcome, Config, ...): their fields and methods are
// documented there. The engine that runs tasks is internal/engine, the
// fronts internal/front (HTTP) and internal/grpcfront; question holds the
// question convention, client the caller's side, relay and workflow the
// orchestrators.
package askpoint
