package expense

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

// CostCentreNames are the finance assistant's own words for the cost
// centres: what it shows its callers instead of the expense agent's codes.
var CostCentreNames = map[string]string{"CC-4410": "Engineering", "CC-4420": "Research"}

// AssistantConfig describes the finance assistant.
type AssistantConfig struct {
	// ExpenseURL is the expense agent's base URL.
	ExpenseURL string
	// SelfURL is the assistant's own base URL, where the expense agent's
	// notifications reach it.
	SelfURL string
	// Defaults maps a caller (principal) to the cost centre the assistant
	// charges when the expense agent asks; callers not in it are asked.
	Defaults map[string]string
	// Margin, Now and Dial tune the relay (see relay.Config); zero:
	// defaults.
	Margin time.Duration
	Now    func() time.Time
	Dial   func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
}

// Assistant is the worked example's finance assistant: an orchestrator in
// front of the expense agent. When the expense agent asks which cost centre
// to charge, the assistant answers from what it knows (the caller's default
// cost centre, and says so in the task's history); otherwise it asks its
// own caller, with the cost centres named in its own words, and carries the
// answer down.
func Assistant(cfg AssistantConfig) (askpoint.Agent, error) {
	return relay.Agent(relay.Config{
		SubAgentURL:  cfg.ExpenseURL,
		SubAgentName: "the expense agent",
		CallbackURL:  cfg.SelfURL,
		Resolvers:    []client.Resolver{defaultCostCentre(cfg.Defaults)},
		Restate:      restateForCaller,
		Margin:       cfg.Margin,
		Now:          cfg.Now,
		Dial:         cfg.Dial,
	})
}

// defaultCostCentre answers a question that needs only the cost centre
// with the caller's default, when the caller has one and the question
// offers it.
func defaultCostCentre(defaults map[string]string) client.Resolver {
	return client.ResolverFunc(func(_ context.Context, q *client.Query) (*client.Answer, error) {
		cc, ok := defaults[q.Caller]
		if !ok || q.Question == nil {
			return nil, nil
		}
		fields := q.Fields()
		for _, f := range fields {
			if f.Required && f.Name != "costCentre" {
				return nil, nil // it needs more than the assistant knows
			}
		}
		for _, o := range q.Question.Options {
			if o.Value == cc {
				return &client.Answer{Fields: map[string]any{"costCentre": cc}, By: client.ByContext}, nil
			}
		}
		return nil, nil
	})
}

// restateForCaller asks the expense agent's question in the assistant's
// words: cost centres by their names, nothing of the expense agent's
// question IDs.
func restateForCaller(_ context.Context, _ *askpoint.Call, sub *question.Question) (question.Question, error) {
	own := question.Question{Schema: sub.Schema}
	var names []string
	for _, o := range sub.Options {
		cc := question.ValueText(o.Value)
		label, shown := cc, cc
		if n, ok := CostCentreNames[cc]; ok {
			label, shown = n, fmt.Sprintf("%s (%s)", n, cc)
		}
		own.Options = append(own.Options, question.Option{Value: cc, Label: label})
		names = append(names, shown)
	}
	switch {
	case len(names) > 0:
		own.Text = "Which budget should I charge this expense to: " + strings.Join(names, " or ") + "?"
	default:
		own.Text = "Before I can file this expense: " + sub.Text
	}
	return own, nil
}

// AssistantCard describes the finance assistant.
func AssistantCard() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "Finance assistant",
		Description: "Files expenses for you through the expense agent. Charges your default budget when it knows it, and asks you otherwise.",
		Version:     "1.0.0",
		Skills: []a2a.AgentSkill{{
			ID: "expenses", Name: "File an expense",
			Description: "Files a receipt described in text, e.g. \"File my taxi receipt from Tuesday, 42 euros\".",
			Examples:    []string{"File my taxi receipt from Tuesday, 42 euros"},
			Tags:        []string{"expenses", "finance", "orchestrator"},
		}},
	}
}
