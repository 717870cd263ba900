package client

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// Who answered: the values of the askpoint.answeredBy metadata key.
const (
	ByContext = "context" // the caller's own context: the request and known facts
	ByPolicy  = "policy"  // a declarative policy rule
	ByPerson  = "person"  // a person
)

// Metadata keys the loop sets on every answer message, so that the task's
// history (the audit trail) says who answered.
const (
	MetaAnsweredBy = "askpoint.answeredBy" // ByContext, ByPolicy, ByPerson or a resolver's own name
	MetaRule       = "askpoint.rule"       // the policy rules that gave the answer
	MetaPerson     = "askpoint.person"     // the person who answered, when known
)

// Query is what a resolver is asked: the agent's open question and what
// the loop knows around it.
type Query struct {
	Agent     string     // the agent's URL (WithAgentURL), "" when not given
	Caller    string     // on whose behalf the loop runs (WithCaller)
	TaskID    a2a.TaskID // the paused task
	ContextID string
	// Request is the message that started the task (nil when unknown).
	Request *a2a.Message
	// Status is the agent's status message that asks.
	Status *a2a.Message
	// Question is the machine-readable question (the question extension's
	// data part); nil when the agent asked in text only.
	Question *question.Question
	// Text is what the agent asked, for a person.
	Text string
	// Round is this question's round: 1 for the first question of the loop.
	Round     int
	MaxRounds int
	// Refused is, on a re-ask, the answer the agent did not accept (the
	// reasons are in Question.Errors); nil otherwise.
	Refused *Answered
}

// Fields lists the question's schema properties, required ones first in
// the schema's order, then the others; nil for a text-only question.
func (q *Query) Fields() []Field {
	if q.Question == nil {
		return nil
	}
	return q.Question.Fields()
}

// Answer is a resolver's reply: an answer (Fields for a question with a
// data part, Text for a text-only question), or an action (decline or
// cancel) instead of an answer.
type Answer struct {
	// Fields is the answer object, sent in a data part with the question's
	// ID. Used when the question has a data part.
	Fields map[string]any
	// Text is sent as a text part. It answers a text-only question; for a
	// question with a data part it is a person's words, sent as they are
	// for the agent to read (the agent re-asks if it cannot).
	Text string
	// Action is question.ActionDecline or question.ActionCancel instead of
	// an answer; Reason says why.
	Action string
	Reason string

	// By says who answered (ByContext, ByPolicy, ByPerson, ...); the loop
	// records it in the message metadata.
	By string
	// Rule names the policy rules that gave the answer.
	Rule string
	// Person names the person who answered, when known.
	Person string
	// Justification is why, in the answerer's words (optional); it goes in
	// the answer's decision record.
	Justification string
	// Via says where the answer was given ("web inbox", "terminal"); it
	// goes in the decision record.
	Via string
}

// Answered is an answer the loop sent.
type Answered struct {
	Answer
	Round      int    // the question's round
	QuestionID string // the questionId answered, "" for a text-only question
	MessageID  string // the answer message's ID
}

// Resolver answers questions. Resolve returns (nil, nil) to pass the
// question to the next resolver in the chain, an Answer to answer it, or
// an error to stop the loop (the task stays paused). A resolver that hands
// the question to a person who will answer later returns an error wrapping
// ErrDeferred (inbox.Person does).
type Resolver interface {
	Resolve(ctx context.Context, q *Query) (*Answer, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, q *Query) (*Answer, error)

// Resolve implements Resolver.
func (f ResolverFunc) Resolve(ctx context.Context, q *Query) (*Answer, error) { return f(ctx, q) }

// Facts is the context resolver: it answers from what the caller already
// knows. Each of the question's schema properties is looked up by name in
// the facts (exactly, then ignoring case) and then in the data parts of the
// request that started the task. It answers when every required property
// is found and the answer passes the question's schema and options;
// otherwise it passes. It never answers a text-only question.
func Facts(facts map[string]any) Resolver {
	return factsResolver{facts: facts}
}

type factsResolver struct{ facts map[string]any }

func (f factsResolver) Resolve(_ context.Context, q *Query) (*Answer, error) {
	if q.Question == nil {
		return nil, nil
	}
	known := requestFacts(q.Request)
	for k, v := range f.facts {
		known[k] = v
	}
	fields := map[string]any{}
	for _, fd := range q.Fields() {
		v, ok := lookup(known, fd.Name)
		if !ok {
			if fd.Required {
				return nil, nil
			}
			continue
		}
		fields[fd.Name] = v
	}
	if len(fields) == 0 {
		return nil, nil
	}
	if errs := validateFields(q.Question, fields); len(errs) > 0 {
		return nil, nil
	}
	return &Answer{Fields: fields, By: ByContext}, nil
}

// requestFacts collects the fields of the request's JSON-object data parts.
func requestFacts(m *a2a.Message) map[string]any {
	out := map[string]any{}
	if m == nil {
		return out
	}
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		d, ok := p.Content.(a2a.Data)
		if !ok {
			continue
		}
		obj, ok := d.Value.(map[string]any)
		if !ok {
			continue
		}
		for k, v := range obj {
			out[k] = v
		}
	}
	return out
}

func lookup(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// validateFields checks an answer object against the question locally,
// exactly as the agent's side of the convention will.
func validateFields(q *question.Question, fields map[string]any) []question.FieldError {
	raw, err := json.Marshal(fields)
	if err != nil {
		return []question.FieldError{{Message: "the answer cannot be encoded as JSON: " + err.Error()}}
	}
	return q.Validate(raw)
}

// sameAnswer says whether two answers say the same thing.
func sameAnswer(a, b *Answer) bool {
	if a == nil || b == nil {
		return false
	}
	if a.Action != b.Action || a.Reason != b.Reason || a.Text != b.Text {
		return false
	}
	ra, _ := json.Marshal(a.Fields)
	rb, _ := json.Marshal(b.Fields)
	return bytes.Equal(ra, rb)
}
