package askpoint

import (
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/question"
)

// Outcome is what a step ends with. Build one with [Ask], [RequireAuth],
// [Complete], [Fail], [Reject] or [Await]; its methods add to it
// (WithMessage, OnExpiry, ExpiresAt, DefaultAnswer, Hold, WakeOn) and read
// it back (Kind, Question, Checkpoint, Artifacts, Text, Holds,
// ExpiryAction, Expiry), as a test of a step does. See [api.Outcome].
type Outcome = api.Outcome

// OutcomeKind names what an outcome does.
type OutcomeKind = api.OutcomeKind

// The outcomes a step can end with.
const (
	OutcomeNone     = api.OutcomeNone
	OutcomeAwait    = api.OutcomeAwait
	OutcomeAsk      = api.OutcomeAsk
	OutcomeAuth     = api.OutcomeAuth
	OutcomeComplete = api.OutcomeComplete
	OutcomeFail     = api.OutcomeFail
	OutcomeReject   = api.OutcomeReject
)

// ExpiryAction says what happens to a task whose question, or whose
// request for a credential, expires unanswered ([Outcome.OnExpiry]).
type ExpiryAction = api.ExpiryAction

const (
	// ExpireFail ends the task failed, with a status message naming the
	// question (or the credential awaited) and when it expired. The
	// default.
	ExpireFail = api.ExpireFail
	// ExpireCancel ends the task canceled.
	ExpireCancel = api.ExpireCancel
	// ExpireDefault resumes the task with the default answer set by
	// [Outcome.DefaultAnswer]; the agent's step sees Call.Expired. For a
	// question only: a credential has no default.
	ExpireDefault = api.ExpireDefault
)

// Ask pauses the task in input-required with q and saves checkpoint, which
// must encode to JSON. Ask once with everything: every missing field in one
// question (one schema with several required properties).
//
// When q.ID is empty the runtime assigns one; when q.Expires is zero the
// server's default expiry applies; when q.MaxAttempts is zero the server's
// default cap applies.
func Ask(q question.Question, checkpoint any) Outcome { return api.Ask(q, checkpoint) }

// RequireAuth pauses the task in auth-required. text tells the caller what
// credential is needed and how to provide it out of band; it must never
// contain a credential, and it must not be empty. The task resumes when
// [Server.CredentialArrived] is called or when the caller sends a
// follow-up message.
//
// Like a question, the pause has an end: it expires at
// [Outcome.ExpiresAt] (the server's question expiry, Config.QuestionExpiry,
// when unset), reminders go to the task's push receivers at
// Config.Reminders on the way, and at the expiry the task ends failed,
// with a status message naming the credential awaited and when it
// expired, or canceled ([Outcome.OnExpiry]); what it holds
// ([Outcome.Hold]) is released. A credential that comes after the expiry
// is refused with that status, as a late answer is.
//
//	return askpoint.RequireAuth("Sign in to the calendar at https://…, then tell me.", cp).
//		ExpiresAt(time.Now().Add(15 * time.Minute)).OnExpiry(askpoint.ExpireCancel), nil
func RequireAuth(text string, checkpoint any) Outcome { return api.RequireAuth(text, checkpoint) }

// Complete ends the task successfully with artifacts.
func Complete(artifacts ...*a2a.Artifact) Outcome { return api.Complete(artifacts...) }

// Fail ends the task in failed with a reason the caller can read.
func Fail(reason string) Outcome { return api.Fail(reason) }

// Reject ends the task in rejected: the agent will not do it.
func Reject(reason string) Outcome { return api.Reject(reason) }

// Await leaves the task working without a run while something outside the
// agent happens: a sub-agent works, a notification is due. what says what
// the task waits for (the status message); token is the secret that
// [Server.Wake] must be given to resume it (at least 16 characters; push
// notification configurations carry it as their token; [Call.WakeToken] is
// one the checkpoint need not keep); at deadline the task fails, saying
// what it waited for.
func Await(what string, checkpoint any, token string, deadline time.Time) Outcome {
	return api.Await(what, checkpoint, token, deadline)
}
