package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/askpoint/askpoint/question"
)

// Policy is the policy resolver: declarative rules, kept in a JSON file,
// that answer questions a caller always answers the same way, within
// limits on what a policy may answer at all. For example:
//
//	{
//	  "rules": [
//	    {"name": "taxi-cost-centre",
//	     "when": {"field": "costCentre", "agent": "http://127.0.0.1:8420/expense", "caller": "alice"},
//	     "answer": "CC-4410"},
//	    {"name": "no-passwords", "when": {"field": "password"},
//	     "action": "decline", "reason": "passwords are never given by policy"}
//	  ],
//	  "limits": {"fields": ["costCentre", "password"], "optionsOnly": true, "max": {"amount": 100}}
//	}
//
// A rule applies to a question when every condition of its "when" holds:
// "field" is one of the question's schema properties, "agent" is the
// agent's URL (WithAgentURL), "caller" is the loop's caller (WithCaller),
// "text" occurs in the question's text (ignoring case), and "subject"
// matches what the question is about (the question's subject, e.g.
// {"amount": 1200, "currency": "EUR"}): each key must be in the subject,
// equal to the value given or, for a number, within the bounds given as
// {"below": N}, {"atMost": N}, {"above": N} or {"atLeast": N}. So
//
//	{"when": {"field": "approve", "subject": {"currency": "EUR", "amount": {"below": 100}}}, "answer": true}
//
// answers payments below 100 EUR and leaves larger ones to the next
// resolver (a person). A question without a subject matches no rule
// with one. A rule with
// "action" declines or cancels instead of answering; the first such rule
// that applies wins. Otherwise the policy answers each property from the
// first answer rule for it and answers the question only when every
// required property has an answer; a text-only question is answered by
// the first rule with "text" and a string "answer".
//
// Limits: "fields" lists the only properties a policy may answer (rules for
// others are refused when the policy is loaded); with "optionsOnly" a
// policy answers only a question's option field and only with one of the
// options it offers; "max" caps numeric answers per field. Whatever the
// limits, a policy never sends an answer that fails the question's schema
// or options: it passes the question to the next resolver instead.
type Policy struct {
	Rules  []Rule       `json:"rules"`
	Limits PolicyLimits `json:"limits"`
}

// Rule is one policy rule.
type Rule struct {
	Name   string `json:"name,omitempty"`
	When   When   `json:"when"`
	Answer any    `json:"answer,omitempty"`
	Action string `json:"action,omitempty"` // question.ActionDecline or question.ActionCancel
	Reason string `json:"reason,omitempty"`
}

// When says which questions a rule applies to; empty conditions always
// hold.
type When struct {
	Field   string         `json:"field,omitempty"`
	Agent   string         `json:"agent,omitempty"`
	Caller  string         `json:"caller,omitempty"`
	Text    string         `json:"text,omitempty"`
	Subject map[string]any `json:"subject,omitempty"`
}

// boundKeys are the keys of a numeric condition on a subject value.
var boundKeys = []string{"below", "atMost", "above", "atLeast"}

// subjectMatches says whether subject meets every condition of want.
func subjectMatches(want, subject map[string]any) bool {
	for k, cond := range want {
		got, has := subject[k]
		if !has {
			return false
		}
		bounds, isBounds := numericBounds(cond)
		if !isBounds {
			if !question.SameValue(cond, got) {
				return false
			}
			continue
		}
		n, isNum := toFloat(got)
		if !isNum {
			return false
		}
		for key, b := range bounds {
			switch {
			case key == "below" && !(n < b), key == "atMost" && !(n <= b),
				key == "above" && !(n > b), key == "atLeast" && !(n >= b):
				return false
			}
		}
	}
	return true
}

// numericBounds reads {"below": N, ...}; ok is false for any other value.
func numericBounds(cond any) (map[string]float64, bool) {
	m, ok := cond.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, false
	}
	out := map[string]float64{}
	for k, v := range m {
		if !slices.Contains(boundKeys, k) {
			return nil, false
		}
		n, isNum := toFloat(v)
		if !isNum {
			return nil, false
		}
		out[k] = n
	}
	return out, true
}

// PolicyLimits bound what a policy may answer.
type PolicyLimits struct {
	Fields      []string           `json:"fields,omitempty"`
	OptionsOnly bool               `json:"optionsOnly,omitempty"`
	Max         map[string]float64 `json:"max,omitempty"`
}

// LoadPolicy reads a policy file (JSON) and checks it.
func LoadPolicy(path string) (*Policy, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client: policy: %w", err)
	}
	p, err := ParsePolicy(raw)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return p, nil
}

// ParsePolicy decodes a policy (JSON, unknown keys refused) and checks it.
func ParsePolicy(raw []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var p Policy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("client: policy: %w", err)
	}
	for i := range p.Rules {
		p.Rules[i].Answer = plainNumbers(p.Rules[i].Answer)
		for k, v := range p.Rules[i].When.Subject {
			p.Rules[i].When.Subject[k] = plainNumbers(v)
		}
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return &p, nil
}

// plainNumbers turns json.Number values into float64 (or int64 when
// whole), so answers encode as the numbers they are.
func plainNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = plainNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = plainNumbers(e)
		}
	}
	return v
}

// Check reports the first rule that can never be used as written.
func (p *Policy) Check() error {
	for i, r := range p.Rules {
		name := r.label(i)
		for k, cond := range r.When.Subject {
			if m, isObj := cond.(map[string]any); isObj {
				if _, ok := numericBounds(m); !ok {
					return fmt.Errorf("client: policy: %s: subject condition %q must be a value or numeric bounds (%s)", name, k, strings.Join(boundKeys, ", "))
				}
			}
		}
		switch r.Action {
		case "":
			if r.Answer == nil {
				return fmt.Errorf("client: policy: %s has neither an answer nor an action", name)
			}
			if r.When.Field == "" && r.When.Text == "" {
				return fmt.Errorf(`client: policy: %s answers but says for which field ("when": {"field": ...}) or question text ("when": {"text": ...})`, name)
			}
			if r.When.Field == "" {
				if _, ok := r.Answer.(string); !ok {
					return fmt.Errorf("client: policy: %s answers a text question, so its answer must be a string", name)
				}
			}
		case question.ActionDecline, question.ActionCancel:
			if r.Answer != nil {
				return fmt.Errorf("client: policy: %s has both an answer and the action %q; give one", name, r.Action)
			}
		default:
			return fmt.Errorf("client: policy: %s has the action %q; use %q or %q", name, r.Action, question.ActionDecline, question.ActionCancel)
		}
		if r.Action == "" && r.When.Field != "" && len(p.Limits.Fields) > 0 && !slices.Contains(p.Limits.Fields, r.When.Field) {
			return fmt.Errorf("client: policy: %s answers %s, which limits.fields does not allow (allowed: %s)",
				name, r.When.Field, strings.Join(p.Limits.Fields, ", "))
		}
	}
	return nil
}

func (r Rule) label(i int) string {
	if r.Name != "" {
		return fmt.Sprintf("rule %q", r.Name)
	}
	return fmt.Sprintf("rules[%d]", i)
}

func (r Rule) id(i int) string {
	if r.Name != "" {
		return r.Name
	}
	return fmt.Sprintf("rules[%d]", i)
}

// applies says whether the rule's conditions other than the field hold.
func (w When) applies(q *Query) bool {
	if w.Agent != "" && strings.TrimSuffix(w.Agent, "/") != strings.TrimSuffix(q.Agent, "/") {
		return false
	}
	if w.Caller != "" && w.Caller != q.Caller {
		return false
	}
	if w.Text != "" && !strings.Contains(strings.ToLower(q.Text), strings.ToLower(w.Text)) {
		return false
	}
	if len(w.Subject) > 0 && (q.Question == nil || !subjectMatches(w.Subject, q.Question.Subject)) {
		return false
	}
	return true
}

// Resolve implements Resolver.
func (p *Policy) Resolve(_ context.Context, q *Query) (*Answer, error) {
	var fields []Field
	if q.Question != nil {
		fields = q.Fields()
	}
	has := func(name string) bool {
		return slices.ContainsFunc(fields, func(f Field) bool { return f.Name == name })
	}

	// Actions first: a rule that refuses outranks rules that would answer.
	for i, r := range p.Rules {
		if r.Action == "" || !r.When.applies(q) {
			continue
		}
		if r.When.Field != "" && !has(r.When.Field) {
			continue
		}
		return &Answer{Action: r.Action, Reason: r.Reason, By: ByPolicy, Rule: r.id(i)}, nil
	}

	if q.Question == nil {
		for i, r := range p.Rules {
			if r.Action != "" || r.When.Field != "" || r.When.Text == "" || !r.When.applies(q) {
				continue
			}
			if s, ok := r.Answer.(string); ok {
				return &Answer{Text: s, By: ByPolicy, Rule: r.id(i)}, nil
			}
		}
		return nil, nil
	}

	optionField := q.Question.OptionField()
	answer := map[string]any{}
	var used []string
	for _, f := range fields {
		for i, r := range p.Rules {
			if r.Action != "" || r.When.Field != f.Name || !r.When.applies(q) {
				continue
			}
			if p.allowed(q.Question, optionField, f.Name, r.Answer) != nil {
				continue
			}
			answer[f.Name] = r.Answer
			used = append(used, r.id(i))
			break
		}
		if _, ok := answer[f.Name]; !ok && f.Required {
			return nil, nil
		}
	}
	if len(answer) == 0 {
		return nil, nil
	}
	if errs := validateFields(q.Question, answer); len(errs) > 0 {
		return nil, nil
	}
	return &Answer{Fields: answer, By: ByPolicy, Rule: strings.Join(used, ", ")}, nil
}

var errLimit = errors.New("outside the policy's limits")

// allowed applies the limits to one field's answer.
func (p *Policy) allowed(q *question.Question, optionField, field string, v any) error {
	if len(p.Limits.Fields) > 0 && !slices.Contains(p.Limits.Fields, field) {
		return errLimit
	}
	if field == optionField && len(q.Options) > 0 {
		if !slices.ContainsFunc(q.Options, func(o question.Option) bool { return question.SameValue(o.Value, v) }) {
			return errLimit
		}
	} else if p.Limits.OptionsOnly {
		return errLimit
	}
	if limit, ok := p.Limits.Max[field]; ok {
		n, isNum := toFloat(v)
		if !isNum || n > limit {
			return errLimit
		}
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}
