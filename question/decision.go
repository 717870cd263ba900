package question

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// DecisionKey is the answer message's metadata key that holds the record of
// who decided what (a Decision).
const DecisionKey = ExtensionURI + "#decision"

// DecisionVersion is the version of the decision record this package
// writes.
const DecisionVersion = 1

// The decisions a record names.
const (
	DecisionAnswered = "answered" // answered (accepted what the agent proposed, if it proposed anything)
	DecisionEdited   = "edited"   // answered with a value other than the one the agent proposed
	DecisionDeclined = "declined" // declined to answer
	DecisionCanceled = "canceled" // asked for the task to be canceled
)

// Kinds of decider.
const (
	DeciderPerson  = "person"  // a person (Name says who, as they logged in)
	DeciderContext = "context" // the caller's own context (facts it knew)
	DeciderPolicy  = "policy"  // a policy rule (Rule names it)
)

// Decision records, bound to one question, who decided what: it travels in
// the answer message's metadata under DecisionKey, so that the task's
// history holds it next to the answer.
type Decision struct {
	Version    int     `json:"version"`
	QuestionID string  `json:"questionId"`
	By         Decider `json:"by"`
	Decision   string  `json:"decision"`
	// Justification is why, in the decider's words (optional).
	Justification string `json:"justification,omitempty"`
	// QuestionDigest is Digest of the question as it was shown.
	QuestionDigest string    `json:"questionDigest"`
	At             time.Time `json:"at"`
}

// Decider says who decided.
type Decider struct {
	Kind string `json:"kind"`           // DeciderPerson, DeciderContext, DeciderPolicy, or a resolver's own name
	Name string `json:"name,omitempty"` // the person, as they logged in or said
	Rule string `json:"rule,omitempty"` // the policy rules that gave the answer
	Via  string `json:"via,omitempty"`  // where: "web inbox", "terminal", ...
}

// Metadata is the decision as a message metadata value (generic JSON, as it
// reads after a trip over the wire).
func (d Decision) Metadata() map[string]any {
	raw, _ := json.Marshal(d)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m
}

// DecisionOf reads the decision record of an answer message. ok is false
// when the message carries none; err is set when it carries one that cannot
// be read.
func DecisionOf(m *a2a.Message) (d *Decision, ok bool, err error) {
	if m == nil || m.Metadata == nil {
		return nil, false, nil
	}
	v, has := m.Metadata[DecisionKey]
	if !has {
		return nil, false, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, true, fmt.Errorf("decision record: %w", err)
	}
	var out Decision
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, true, fmt.Errorf("decision record: %w", err)
	}
	if out.QuestionID == "" || out.Decision == "" {
		return nil, true, errors.New("decision record: questionId and decision are required")
	}
	return &out, true, nil
}

// Digest identifies the question as it was shown: "sha256:" and the hex
// SHA-256 of the canonical JSON (keys sorted, no spaces, no HTML escaping) of
// the question's data part with the key "text" added, holding the text part
// as shown (on a re-ask, with its notice). Any change to what a person saw
// (text, schema, options, expiry, errors) changes the digest.
func Digest(q *Question) string {
	obj := q.wireObject()
	text := q.Text
	if q.attempt() > 1 {
		text = joinNotice(q.Text, q.Notice())
	}
	obj["text"] = text
	return digestOf(obj)
}

// DigestText is the digest of a question asked in text only.
func DigestText(text string) string {
	return digestOf(map[string]any{"text": text})
}

func digestOf(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	sum := sha256.Sum256(bytes.TrimRight(b.Bytes(), "\n"))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DecisionFor names the decision an answer makes: declined or canceled for
// an action, edited when the question proposed values (schema defaults) and
// the answer changes one of them, else answered.
func (q *Question) DecisionFor(action string, fields map[string]any) string {
	switch action {
	case ActionDecline:
		return DecisionDeclined
	case ActionCancel:
		return DecisionCanceled
	}
	if q == nil {
		return DecisionAnswered
	}
	for k, proposed := range q.Proposed() {
		got, ok := fields[k]
		if !ok {
			continue // the agent's default stands
		}
		if !sameJSON(got, proposed) {
			return DecisionEdited
		}
	}
	return DecisionAnswered
}

func sameJSON(a, b any) bool {
	ra, errA := json.Marshal(a)
	rb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ra, &va)
	_ = json.Unmarshal(rb, &vb)
	return reflect.DeepEqual(va, vb)
}
