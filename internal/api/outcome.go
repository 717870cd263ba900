package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// OutcomeKind names what an outcome does.
type OutcomeKind string

// The outcomes a step can end with.
const (
	OutcomeNone     OutcomeKind = ""
	OutcomeAwait    OutcomeKind = "await"
	OutcomeAsk      OutcomeKind = "ask"
	OutcomeAuth     OutcomeKind = "auth"
	OutcomeComplete OutcomeKind = "complete"
	OutcomeFail     OutcomeKind = "fail"
	OutcomeReject   OutcomeKind = "reject"
)

// Outcome is what a step ends with. Build one with Ask, RequireAuth,
// Complete, Fail, Reject or Await (askpoint's functions of those names).
type Outcome struct {
	kind       OutcomeKind
	question   *question.Question
	checkpoint any
	artifacts  []*a2a.Artifact
	text       string

	// Ask and RequireAuth: what happens at the pause's expiry; Ask only:
	// the default answer; Ask, RequireAuth and Await: what the task holds
	// while it waits; RequireAuth only: when the pause expires (zero: the
	// server's question expiry).
	onExpiry      ExpiryAction
	defaultAnswer any
	holds         []Hold
	expires       time.Time

	// Ask and Await: the token that lets Server.Wake resume the task;
	// Await: when to stop waiting.
	wakeToken string
	deadline  time.Time
}

// Ask pauses the task in input-required with q and saves checkpoint (see
// askpoint.Ask).
func Ask(q question.Question, checkpoint any) Outcome {
	return Outcome{kind: OutcomeAsk, question: &q, checkpoint: checkpoint}
}

// RequireAuth pauses the task in auth-required until a credential arrives
// or the pause expires (see askpoint.RequireAuth).
func RequireAuth(text string, checkpoint any) Outcome {
	return Outcome{kind: OutcomeAuth, text: text, checkpoint: checkpoint}
}

// Complete ends the task successfully with artifacts.
func Complete(artifacts ...*a2a.Artifact) Outcome {
	return Outcome{kind: OutcomeComplete, artifacts: artifacts}
}

// Fail ends the task in failed with a reason the caller can read.
func Fail(reason string) Outcome {
	return Outcome{kind: OutcomeFail, text: reason}
}

// Reject ends the task in rejected: the agent will not do it.
func Reject(reason string) Outcome {
	return Outcome{kind: OutcomeReject, text: reason}
}

// Await leaves the task working without a run until an event or the
// deadline (see askpoint.Await).
func Await(what string, checkpoint any, token string, deadline time.Time) Outcome {
	return Outcome{kind: OutcomeAwait, text: what, checkpoint: checkpoint, wakeToken: token, deadline: deadline}
}

// Kind says what the outcome does.
func (o Outcome) Kind() OutcomeKind { return o.kind }

// Question is the question of an Ask outcome, nil otherwise.
func (o Outcome) Question() *question.Question { return o.question }

// Checkpoint is what an Ask, RequireAuth or Await outcome saves.
func (o Outcome) Checkpoint() any { return o.checkpoint }

// Artifacts are a Complete outcome's artifacts.
func (o Outcome) Artifacts() []*a2a.Artifact { return o.artifacts }

// Text is the status message's text: the reason of Fail and Reject, what
// RequireAuth asks for, what Await waits for, or what WithMessage set.
func (o Outcome) Text() string { return o.text }

// WithMessage adds a status message for the caller to a Complete, Fail or
// Reject outcome (Fail and Reject already carry their reason).
func (o Outcome) WithMessage(text string) Outcome {
	o.text = text
	return o
}

// ExpiryAction says what happens to a task whose question, or whose
// request for a credential, expires unanswered.
type ExpiryAction string

const (
	// ExpireFail ends the task failed, with a status message naming the
	// question (or the credential awaited) and when it expired. The
	// default.
	ExpireFail ExpiryAction = "fail"
	// ExpireCancel ends the task canceled.
	ExpireCancel ExpiryAction = "cancel"
	// ExpireDefault resumes the task with the default answer set by
	// [Outcome.DefaultAnswer]; the agent's step sees Call.Expired.
	ExpireDefault ExpiryAction = "default"
)

// OnExpiry sets what an Ask outcome's question, or a RequireAuth
// outcome's request for a credential, does when it expires unanswered:
// [ExpireFail] (the default) or [ExpireCancel]. To resume a question with
// an answer instead, use [Outcome.DefaultAnswer].
func (o Outcome) OnExpiry(a ExpiryAction) Outcome {
	o.onExpiry = a
	return o
}

// ExpiresAt sets when a RequireAuth outcome's pause expires if no
// credential has come by then (no earlier than t: the store keeps
// milliseconds, and t is rounded up to one); what happens then is
// [Outcome.OnExpiry]'s. Unset, the server's question expiry applies
// (Config.QuestionExpiry). It is RequireAuth's only: a question's expiry
// is its Expires field and a wait's is Await's deadline, and the runtime
// fails a task whose Ask or Await outcome sets it.
func (o Outcome) ExpiresAt(t time.Time) Outcome {
	o.expires = t
	return o
}

// Expiry is what [Outcome.ExpiresAt] set, zero when unset.
func (o Outcome) Expiry() time.Time { return o.expires }

// DefaultAnswer makes an Ask outcome's question resume the task with
// answer when it expires unanswered. answer must encode to a JSON object
// valid against the question's schema; the runtime checks it when the
// agent asks. A credential has no default: the runtime fails a task whose
// RequireAuth outcome sets one.
func (o Outcome) DefaultAnswer(answer any) Outcome {
	o.onExpiry = ExpireDefault
	o.defaultAnswer = answer
	return o
}

// Hold declares something the task holds while its question is open,
// while it waits for a credential (RequireAuth), or while it awaits an
// event (Await): a seat, stock, a budget reservation, a sub-agent's task.
// The runtime calls the agent's release ([Releaser],
// or Steps.OnRelease) for it at h.Until if the task has not resumed by
// then, or as soon as the task ends without resuming (it expires, or the
// caller cancels). A task that resumes first gets its holds back in
// [Call.Holds].
func (o Outcome) Hold(h Hold) Outcome {
	o.holds = append(o.holds, h)
	return o
}

// Holds are an Ask, RequireAuth or Await outcome's holds.
func (o Outcome) Holds() []Hold { return o.holds }

// ExpiryAction is what an Ask or RequireAuth outcome's pause does at its
// expiry.
func (o Outcome) ExpiryAction() ExpiryAction {
	if o.onExpiry == "" {
		return ExpireFail
	}
	return o.onExpiry
}

// WakeOn lets an Ask outcome's question be withdrawn by an event: a call
// to Server.Wake with token resumes the task (the agent's Waker decides
// first whether the event matters) even though nobody answered.
func (o Outcome) WakeOn(token string) Outcome {
	o.wakeToken = token
	return o
}

// DefaultAnswerOf is the default answer an Ask outcome set, nil when none.
func DefaultAnswerOf(o Outcome) any { return o.defaultAnswer }

// WakeTokenOf is the wake token of an Ask (WakeOn) or Await outcome.
func WakeTokenOf(o Outcome) string { return o.wakeToken }

// DeadlineOf is an Await outcome's deadline.
func DeadlineOf(o Outcome) time.Time { return o.deadline }

// handBuiltWakeToken is the wake token of a Call built by hand: an HMAC of
// its task ID under a secret of the process.
func handBuiltWakeToken(taskID string) string {
	m := hmac.New(sha256.New, processSecret())
	m.Write([]byte(taskID))
	return hex.EncodeToString(m.Sum(nil))
}

var processSecret = sync.OnceValue(func() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
})
