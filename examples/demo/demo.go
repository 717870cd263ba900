// Package demo registers the agents `askpoint serve` runs, so that a Go
// program can serve the same ones: the worked example's expense agent
// ("expense"), the finance assistant in front of it ("assistant", an
// orchestrator that relays its question), the planning workflow
// ("planning", a group chat of "planner" and the expense agent that stops
// when the expense agent asks), the seat-booking agent ("booking", which
// holds a seat while it asks), the payment approval agent ("approval") and
// the travel agent ("travel", a straight-line agent that asks three
// questions in turn).
// With Options.Conformance it also serves the agent the A2A conformance
// suites drive ("conformance"), first, so that its card is the host's.
package demo

import (
	"context"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/examples/booking"
	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/examples/planning"
	"github.com/askpoint/askpoint/examples/travel"
)

// Options say how the demo agents are served.
type Options struct {
	// BaseURL is where the server is reached (http://127.0.0.1:8420):
	// the assistant and the planning workflow call the expense agent
	// there, and the expense agent notifies the assistant there. Required.
	BaseURL string
	// Ledger files the expenses (see OpenLedger). Defaults to
	// expense.IDLedger{}, which keeps nothing.
	Ledger expense.Ledger
	// CostCentres maps callers (principals) to the cost centre the
	// assistant charges their expenses to without asking.
	CostCentres map[string]string
	// Dial reaches this server's own agents, for the assistant and the
	// planning workflow: with tokens configured, a client that carries a
	// token of the server's (a principal in Config.OnBehalfOfPrincipals,
	// so that sub-tasks act for the caller). Nil: client.Dial, no token.
	Dial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
	// Conformance also serves the conformance suites' agent, first.
	Conformance bool
}

// Register registers the demo agents with srv.
func Register(srv *askpoint.Server, o Options) error {
	if o.BaseURL == "" {
		return fmt.Errorf("demo: Options.BaseURL is required: the orchestrators call the expense agent there")
	}
	if o.Ledger == nil {
		o.Ledger = expense.IDLedger{}
	}
	var specs []askpoint.AgentSpec
	if o.Conformance {
		specs = append(specs, askpoint.AgentSpec{Name: conformance.Name, Agent: conformance.Agent(), Card: conformance.Card()})
	}
	assistant, err := expense.Assistant(expense.AssistantConfig{
		ExpenseURL: o.BaseURL + "/expense", SelfURL: o.BaseURL + "/assistant", Defaults: o.CostCentres, Dial: o.Dial,
	})
	if err != nil {
		return err
	}
	chat, err := planning.Workflow(o.BaseURL, o.Dial)
	if err != nil {
		return err
	}
	specs = append(specs,
		askpoint.AgentSpec{Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, o.Ledger, nil), Card: expense.Card()},
		// A yes/no question with labelled options and a schema derived
		// from its answer type.
		askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()},
		// The seats live in memory, one inventory for every booking task
		// of this process.
		askpoint.AgentSpec{Name: "booking", Agent: booking.Agent(booking.NewInventory(), nil), Card: booking.Card()},
		askpoint.AgentSpec{Name: "assistant", Agent: assistant, Card: expense.AssistantCard()},
		askpoint.AgentSpec{Name: "planner", Agent: planning.Planner(), Card: planning.PlannerCard()},
		askpoint.AgentSpec{Name: "planning", Agent: chat, Card: planning.WorkflowCard()},
		// The agency lives in memory: quotes and bookings of this process.
		askpoint.AgentSpec{Name: "travel", Agent: travel.Agent(&travel.Desk{}), Card: travel.Card()},
	)
	for _, s := range specs {
		if err := srv.Register(s); err != nil {
			return err
		}
	}
	return nil
}
