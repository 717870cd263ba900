// Package approval is an example agent that asks a person to approve a
// payment: a boolean question with labelled options ("Yes, pay" / "No"),
// a schema derived from the answer type, and a machine-readable subject
// (the amount and currency) that a caller's policy can match on.
//
// The payment is read from the request's data part ({"invoice", "amount",
// "currency", "payee"}) when it has one, else from its text.
//
// Up to ReasonAbove the question has one field, approve. Above it the
// agent also wants a reason, so the question has two fields and its options
// say they are for approve. A person may answer in text: "yes", "Yes, pay",
// "no" and "true" all name an option; a reason then still has to be given
// in a data part.
//
// Try it with askpoint serve:
//
//	askpoint send http://127.0.0.1:8420/approval "Pay invoice INV-7: 80 EUR to ACME"
//	askpoint send --task TASK_ID http://127.0.0.1:8420/approval yes
package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// ReasonAbove is the amount above which an approval needs a reason.
const ReasonAbove = 1000

// Payment is what the agent asks about: its checkpoint, and the question's
// subject.
type Payment struct {
	Invoice  string  `json:"invoice"`
	Amount   float64 `json:"amount"`
	Currency string  `json:"currency"`
	Payee    string  `json:"payee"`
}

// Answer is the answer to a small payment's question.
type Answer struct {
	Approve bool   `json:"approve" jsonschema:"required,description=Pay the invoice?"`
	Reason  string `json:"reason,omitempty" jsonschema:"maxLength=200,description=Why (optional)"`
}

// LargeAnswer is the answer to a large payment's question: the reason is
// required.
type LargeAnswer struct {
	Approve bool   `json:"approve" jsonschema:"required,description=Pay the invoice?"`
	Reason  string `json:"reason" jsonschema:"required,minLength=3,maxLength=200,description=Why you approve or refuse it"`
}

// The schemas, derived from the answer types: they cannot disagree.
var (
	smallSchema = question.MustSchemaFor[Answer]()
	largeSchema = question.MustSchemaFor[LargeAnswer]()
)

// Options are the question's labelled options for the approve field.
var Options = []question.Option{{Value: true, Label: "Yes, pay"}, {Value: false, Label: "No"}}

var paymentText = regexp.MustCompile(`(?i)(?:invoice\s+(\S+?):?\s+)?([0-9]+(?:\.[0-9]+)?)\s*([A-Z]{3})(?:\s+to\s+(.+))?`)

// ParsePayment reads "Pay invoice INV-7: 1200 EUR to ACME".
func ParsePayment(text string) (Payment, bool) {
	m := paymentText.FindStringSubmatch(text)
	if m == nil {
		return Payment{}, false
	}
	amount, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return Payment{}, false
	}
	return Payment{Invoice: m[1], Amount: amount, Currency: strings.ToUpper(m[3]), Payee: strings.TrimSpace(strings.TrimSuffix(m[4], "."))}, true
}

// Question is the approval question for p.
func Question(p Payment) question.Question {
	q := question.Question{
		Text:       fmt.Sprintf("Pay %s %s to %s (invoice %s)?", amountText(p.Amount), p.Currency, orUnknown(p.Payee), orUnknown(p.Invoice)),
		Schema:     smallSchema,
		Options:    Options,
		OptionsFor: "approve",
		Subject:    map[string]any{"amount": p.Amount, "currency": p.Currency, "payee": p.Payee, "invoice": p.Invoice},
	}
	if p.Amount > ReasonAbove {
		q.Text += " It is above " + amountText(ReasonAbove) + " " + p.Currency + ", so please give a reason too."
		q.Schema = largeSchema
	}
	return q
}

// Agent is the approval agent.
func Agent() askpoint.Agent {
	return askpoint.Steps[Payment, LargeAnswer]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			p, ok := paymentData(call.Request)
			if !ok {
				p, ok = ParsePayment(text(call.Request))
			}
			if !ok {
				return askpoint.Reject(`I need a payment to approve, e.g. "Pay invoice INV-7: 80 EUR to ACME".`), nil
			}
			return askpoint.Ask(Question(p), p), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, p Payment, a LargeAnswer) (askpoint.Outcome, error) {
			if !a.Approve {
				reason := "The payment was not approved."
				if a.Reason != "" {
					reason += " Reason: " + a.Reason
				}
				return askpoint.Reject(reason), nil
			}
			art := &a2a.Artifact{ID: a2a.NewArtifactID(), Name: "payment", Parts: a2a.ContentParts{
				a2a.NewDataPart(map[string]any{"paid": true, "invoice": p.Invoice, "amount": p.Amount, "currency": p.Currency, "payee": p.Payee, "reason": a.Reason}),
			}}
			return askpoint.Complete(art).WithMessage(fmt.Sprintf("Paid %s %s to %s.", amountText(p.Amount), p.Currency, orUnknown(p.Payee))), nil
		},
	}
}

// Card describes the approval agent.
func Card() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "Payment approval",
		Description: "Asks a person to approve a payment before it is made.",
		Version:     "1.0.0",
		Skills: []a2a.AgentSkill{{
			ID: "approve", Name: "Approve a payment",
			Description: `Asks whether to pay an invoice, e.g. "Pay invoice INV-7: 80 EUR to ACME".`,
			Examples:    []string{"Pay invoice INV-7: 80 EUR to ACME"},
			Tags:        []string{"payments", "approval"},
		}},
	}
}

// paymentData reads a payment from the request's data part, as another
// agent (a workflow's previous participant) sends it.
func paymentData(m *a2a.Message) (Payment, bool) {
	if m == nil {
		return Payment{}, false
	}
	for _, part := range m.Parts {
		d, ok := part.Content.(a2a.Data)
		if !ok {
			continue
		}
		raw, err := json.Marshal(d.Value)
		if err != nil {
			continue
		}
		var p Payment
		if json.Unmarshal(raw, &p) == nil && p.Amount > 0 && p.Currency != "" {
			return p, true
		}
	}
	return Payment{}, false
}

func amountText(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func orUnknown(s string) string {
	if s == "" {
		return "(not given)"
	}
	return s
}

func text(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var out []string
	for _, p := range m.Parts {
		if t, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(t))
		}
	}
	return strings.Join(out, " ")
}
