// Package relay is an askpoint agent that delegates its task to a
// sub-agent over A2A and relays the sub-agent's questions to its own caller
// in its own terms.
//
// When the sub-task asks, the relay first tries its own resolvers (its own
// context, then policy; the client package's resolvers fit). If none
// answers, it pauses its own task in input-required with its own question:
// its own question ID, the text and schema its Restate gives (nothing of the
// sub-agent's names, IDs or URLs), and an expiry Margin earlier than the
// sub-agent's. The mapping (sub-task, sub-question) is the checkpoint, so
// the relay holds no goroutine or connection while its caller thinks, and a
// restart loses nothing. The caller's answer is validated twice: against
// the relay's schema by the runtime, then, translated, against the
// sub-agent's before it is sent down.
//
// While the sub-agent works, the relay's task waits without a run
// ([askpoint.Await]); the sub-agent's push notifications go to the relay's
// wake endpoint (CallbackURL/wake/TASK_ID) with a per-task token and resume
// it. The same notifications withdraw the relay's question when the
// sub-task moves on without it (answered another way, expired, failed). A
// sub-agent without push notifications, or one that refuses the relay's
// webhook, is read until its task pauses or finishes instead.
//
// A chain of relays ends with one meaning at every level. A caller's
// decline is carried down; a sub-task that ends rejected ends the relay's
// task rejected too. A cancel at the top cancels the task below it, whose
// relay cancels the one below that, and so on. Each level's question
// expires a Margin before the one below, so the top expires first: its
// task fails saying its question expired and the tasks below are canceled,
// none left paused. A sub-task that fails fails the relay's task. When the
// sub-agent refuses the caller's answer (its schema, or its re-ask), the
// relay re-asks in its own terms: through Config.Errors, or by default by
// where each field Translate sent down came from (a renamed field's error
// under the caller's name; a field whose value Translate mapped, or one
// the caller did not give, as not accepted, without the sub-agent's names
// or values). The sub-task's
// artifacts become the relay's when the sub-task completes.
//
// The machinery is public for agents that drive several sub-agents in an
// order of their own, as the workflow package does: a [Hop] drives one
// sub-agent the way the relay does, and its state is a [Checkpoint] that
// the agent keeps in its own task's checkpoint. The relay's own task
// checkpoint is one Checkpoint, stored as JSON whose field names do not
// change from one version to the next, so a task paused by an older
// version resumes on a newer one.
package relay

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/question"
)

// Config describes a relay.
type Config struct {
	// SubAgentURL is the sub-agent's base URL (its card is at
	// SubAgentURL/.well-known/agent-card.json). Required.
	SubAgentURL string
	// SubAgentName names the sub-agent to the caller in status messages
	// ("the expense agent"); never its URL. Defaults to "the agent I
	// asked".
	SubAgentName string
	// CallbackURL is this relay's own base URL as the sub-agent reaches
	// it (for example http://127.0.0.1:8420/assistant). The sub-agent's
	// push notifications go to CallbackURL/wake/TASK_ID. Required.
	CallbackURL string

	// Forward builds the message for the sub-agent from the step's call.
	// nil forwards the request's parts.
	Forward func(ctx context.Context, call *askpoint.Call) (*a2a.Message, error)
	// Resolvers answer the sub-agent's question before the caller is
	// asked: the relay's own context first, then policy. Query.Caller is
	// the caller's principal. An answer's By is recorded.
	Resolvers []client.Resolver
	// Restate turns the sub-agent's question into the relay's own: its
	// text, schema and options in the relay's terms. The relay sets the ID,
	// the expiry and, on a re-ask, the attempt and errors. nil keeps the
	// text, schema and options.
	Restate func(ctx context.Context, call *askpoint.Call, sub *question.Question) (question.Question, error)
	// Translate turns the caller's answer to the relay's question into an
	// answer to the sub-agent's: it may rename fields, map their values,
	// add or drop fields. nil passes the answer unchanged. An error is
	// re-asked as it is, in the relay's terms.
	//
	// The relay keeps, with the sub-task, where each field it sent down
	// came from, so that the sub-agent's refusal of the answer (what its
	// schema says of it, or its own re-ask) is re-asked in the caller's
	// terms, never in the sub-agent's (see Errors).
	Translate func(ctx context.Context, call *askpoint.Call, sub *question.Question, answer map[string]any) (map[string]any, error)

	// Errors turns the sub-agent's reasons for refusing a translated
	// answer (its re-ask's errors, or what its schema says of the
	// translated answer) into the relay's own terms, for the relay's
	// re-ask. Set it to say more than the default does.
	//
	// nil, with Translate set, says each error by where its field came
	// from. A field sent down with the caller's value as it is (under the
	// caller's name, or renamed: "note" sent as "comment") keeps the
	// sub-agent's error, under the caller's field name, in the pointer and
	// in the message. A field whose value Translate mapped ("visa" sent as
	// method "card") points at the caller's field, when the relay can tell
	// which (the field of the same name, or the one left over), and says
	// that the sub-agent did not accept that field: the sub-agent's message
	// speaks of a value the caller never gave. Anything else (a field the
	// caller did not give, the whole answer) is the sub-agent not accepting
	// the answer. Without Translate the sub-agent's errors are re-asked as
	// they are: the caller's terms are the sub-agent's.
	Errors func(ctx context.Context, call *askpoint.Call, sub *question.Question, errs []question.FieldError) []question.FieldError

	// Margin is how much earlier than the sub-agent's question the
	// relay's question expires, so that the caller's answer still has time
	// to travel down. Defaults to 5 minutes; when the sub-question expires
	// sooner than twice the margin, the relay's question gets half the time
	// that is left.
	Margin time.Duration
	// MaxWait bounds how long the relay waits for a working sub-agent.
	// Defaults to 24h.
	MaxWait time.Duration
	// SettleWithin is how long one call to the sub-agent may wait for it
	// to pause or finish before the relay waits for its notification
	// instead. Defaults to 3s.
	SettleWithin time.Duration
	// Dial opens a client for the sub-agent. Defaults to grpcdial.Dial
	// with a plain HTTP client.
	Dial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
	// Now is the clock for expiries and deadlines. Defaults to time.Now.
	Now func() time.Time
	// Logger receives the relay's log lines (a sub-agent it cannot reach,
	// one that takes no push notifications). Defaults to slog.Default();
	// a workflow's participants log to its Relay.Logger.
	Logger *slog.Logger
}

// Agent returns the relay agent for cfg.
func Agent(cfg Config) (askpoint.Agent, error) {
	return newRelay(cfg)
}

// newRelay checks cfg and fills in its defaults.
func newRelay(cfg Config) (*relay, error) {
	if cfg.SubAgentURL == "" || cfg.CallbackURL == "" {
		return nil, errors.New("relay: SubAgentURL and CallbackURL are required")
	}
	if cfg.SubAgentName == "" {
		cfg.SubAgentName = "the agent I asked"
	}
	if cfg.Margin <= 0 {
		cfg.Margin = 5 * time.Minute
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 24 * time.Hour
	}
	if cfg.SettleWithin <= 0 {
		cfg.SettleWithin = 3 * time.Second
	}
	if cfg.Dial == nil {
		cfg.Dial = func(ctx context.Context, u string) (*a2aclient.Client, error) {
			return grpcdial.Dial(ctx, u, client.DialOptions{})
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.CallbackURL = strings.TrimSuffix(cfg.CallbackURL, "/")
	return &relay{cfg: cfg}, nil
}

// ErrUnreadableQuestion says a sub-task asks something without the
// question extension's machine-readable part: nothing a relay can restate.
var ErrUnreadableQuestion = errors.New("relay: the sub-agent's question has no machine-readable part")
