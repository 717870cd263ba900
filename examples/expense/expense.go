// Package expense is askpoint's worked example: an expense agent that files
// a receipt, asking the caller for whatever it cannot work out itself (the
// cost centre when the caller has several, and any missing amount or date)
// in one machine-answerable question.
package expense

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// Expense is what the agent files.
type Expense struct {
	ExpenseID  string  `json:"expenseId,omitempty"`
	Amount     float64 `json:"amount,omitempty"`
	Currency   string  `json:"currency,omitempty"`
	Date       string  `json:"date,omitempty"` // YYYY-MM-DD
	Vendor     string  `json:"vendor,omitempty"`
	CostCentre string  `json:"costCentre,omitempty"`
}

// Checkpoint is what the agent saves while it waits for an answer.
type Checkpoint struct {
	Expense     Expense  `json:"expense"`
	CostCentres []string `json:"costCentres"`
}

// Answer holds every field the agent may ask for; a question asks only for
// the missing ones.
type Answer struct {
	CostCentre string   `json:"costCentre"`
	Amount     *float64 `json:"amount"`
	Currency   string   `json:"currency"`
	Date       string   `json:"date"`
}

// Directory says which cost centres a caller may charge.
type Directory interface {
	CostCentres(ctx context.Context, principal string) ([]string, error)
}

// Fixture is a Directory from a map; callers not in it get Default.
type Fixture struct {
	ByPrincipal map[string][]string
	Default     []string
}

// CostCentres implements Directory.
func (f Fixture) CostCentres(_ context.Context, principal string) ([]string, error) {
	if cc, ok := f.ByPrincipal[principal]; ok {
		return cc, nil
	}
	return f.Default, nil
}

// DefaultDirectory is the worked example's: every caller belongs to
// CC-4410 and CC-4420.
var DefaultDirectory = Fixture{Default: []string{"CC-4410", "CC-4420"}}

// Ledger files expenses. File must be idempotent on key: filing again with
// the same key returns the first filing's ID and files nothing new.
type Ledger interface {
	File(ctx context.Context, key string, e Expense) (string, error)
}

// IDLedger files nothing anywhere: it derives the expense ID from the key,
// so the same step always yields the same ID.
type IDLedger struct{}

// File implements Ledger.
func (IDLedger) File(_ context.Context, key string, _ Expense) (string, error) {
	sum := sha256.Sum256([]byte(key))
	return "EXP-" + strings.ToUpper(hex.EncodeToString(sum[:5])), nil
}

// Agent builds the expense agent. now gives "today" for weekday names
// (nil: time.Now).
func Agent(dir Directory, ledger Ledger, now func() time.Time) askpoint.Agent {
	if now == nil {
		now = time.Now
	}
	return askpoint.Steps[Checkpoint, Answer]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			text := messageText(call.Request)
			if strings.TrimSpace(text) == "" {
				return askpoint.Reject("Send the receipt as text, e.g. \"File my taxi receipt from Tuesday, 42 euros\"."), nil
			}
			// The caller's own cost centres: through a relay, the caller the
			// relay calls for, not the relay's principal.
			ccs, err := dir.CostCentres(ctx, call.Caller())
			if err != nil {
				return askpoint.Outcome{}, err
			}
			if len(ccs) == 0 {
				return askpoint.Reject("You have no cost centre to charge expenses to."), nil
			}
			e := Parse(text, now())
			if len(ccs) == 1 {
				e.CostCentre = ccs[0]
			}
			return next(ctx, call, ledger, Checkpoint{Expense: e, CostCentres: ccs})
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, a Answer) (askpoint.Outcome, error) {
			if a.CostCentre != "" {
				cp.Expense.CostCentre = a.CostCentre
			}
			if a.Amount != nil {
				cp.Expense.Amount = *a.Amount
				cp.Expense.Currency = strings.ToUpper(a.Currency)
				if cp.Expense.Currency == "" {
					cp.Expense.Currency = "EUR"
				}
			}
			if a.Date != "" {
				cp.Expense.Date = a.Date
			}
			return next(ctx, call, ledger, cp)
		},
	}
}

// next asks for everything still missing in one question, or files the
// expense.
func next(ctx context.Context, call *askpoint.Call, ledger Ledger, cp Checkpoint) (askpoint.Outcome, error) {
	e := cp.Expense
	var missing []string
	if e.Amount <= 0 {
		missing = append(missing, "amount")
	}
	if e.Date == "" {
		missing = append(missing, "date")
	}
	if e.CostCentre == "" {
		missing = append(missing, "costCentre")
	}
	switch {
	case len(missing) == 0:
		id, err := ledger.File(ctx, call.Key, e)
		if err != nil {
			return askpoint.Outcome{}, fmt.Errorf("file the expense: %w", err)
		}
		e.ExpenseID = id
		summary := fmt.Sprintf("Filed expense %s: %.2f %s on %s for %s, charged to %s.", id, e.Amount, e.Currency, e.Date, e.Vendor, e.CostCentre)
		data := a2a.NewDataPart(e.fields())
		data.MediaType = "application/json"
		return askpoint.Complete(&a2a.Artifact{
			Name:  "expense",
			Parts: a2a.ContentParts{a2a.NewTextPart(summary), data},
		}).WithMessage(summary), nil
	case len(missing) == 1 && missing[0] == "costCentre":
		// The worked example's question: one field, a small closed set,
		// offered as options.
		q := question.Question{
			Text:   "Which cost centre should this expense be charged to? " + strings.Join(cp.CostCentres, " or ") + ".",
			Schema: costCentreSchema,
		}
		for _, cc := range cp.CostCentres {
			q.Options = append(q.Options, question.Option{Value: cc})
		}
		return askpoint.Ask(q, cp), nil
	}
	props := map[string]any{}
	for _, m := range missing {
		switch m {
		case "amount":
			props["amount"] = map[string]any{"type": "number", "exclusiveMinimum": 0, "description": "the amount on the receipt"}
			props["currency"] = map[string]any{"type": "string", "enum": []string{"EUR", "USD", "GBP", "CHF"}, "description": "defaults to EUR"}
		case "date":
			props["date"] = map[string]any{"type": "string", "pattern": `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`, "description": "the receipt's date, YYYY-MM-DD"}
		case "costCentre":
			props["costCentre"] = map[string]any{"type": "string", "pattern": costCentrePattern, "enum": cp.CostCentres}
		}
	}
	q := question.Question{
		Text:   "To file this " + vendorOr(e.Vendor) + " receipt I need " + listNeeds(missing, cp.CostCentres) + ".",
		Schema: mustJSON(map[string]any{"type": "object", "required": missing, "properties": props}),
	}
	return askpoint.Ask(q, cp), nil
}

// costCentrePattern is what a cost centre looks like.
const costCentrePattern = `^CC-[0-9]{4}$`

// costCentreSchema is the answer schema of the question for the cost
// centre alone: the same for every caller (the options name the caller's
// own), so written once.
var costCentreSchema = mustJSON(map[string]any{
	"type": "object", "required": []string{"costCentre"},
	"properties": map[string]any{"costCentre": map[string]any{"type": "string", "pattern": costCentrePattern}},
})

// fields is the expense as its artifact's data part carries it: the JSON
// object of Expense, as generic values.
func (e Expense) fields() map[string]any {
	m := make(map[string]any, 6)
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("expenseId", e.ExpenseID)
	set("currency", e.Currency)
	set("date", e.Date)
	set("vendor", e.Vendor)
	set("costCentre", e.CostCentre)
	if e.Amount != 0 {
		m["amount"] = e.Amount
	}
	return m
}

func vendorOr(v string) string {
	if v == "" {
		return "expense"
	}
	return strings.ToLower(v)
}

func listNeeds(missing []string, ccs []string) string {
	var parts []string
	for _, m := range missing {
		switch m {
		case "amount":
			parts = append(parts, "the amount (and currency, EUR if not said)")
		case "date":
			parts = append(parts, "the receipt's date (YYYY-MM-DD)")
		case "costCentre":
			parts = append(parts, "the cost centre ("+strings.Join(ccs, " or ")+")")
		}
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

var currencies = map[string]string{
	"euro": "EUR", "euros": "EUR", "eur": "EUR", "€": "EUR",
	"dollar": "USD", "dollars": "USD", "usd": "USD", "$": "USD",
	"pound": "GBP", "pounds": "GBP", "gbp": "GBP", "£": "GBP",
	"chf": "CHF", "franc": "CHF", "francs": "CHF",
}

func parseAmount(s string) float64 {
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", "."), 64)
	if err != nil {
		return 0
	}
	return f
}

func messageText(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.Content.(a2a.Text); ok {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(string(t))
		}
	}
	return b.String()
}
