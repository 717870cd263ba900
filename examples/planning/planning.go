// Package planning is the workflow demo that askpoint serve runs at
// /planning: a group chat of a planner and the expense agent. The planner
// plans; the expense agent files the receipt and asks which cost centre to
// charge, which suspends the whole chat until the caller answers (the
// planner is not invoked meanwhile, and nothing the planner says can answer
// the expense agent's question); then the planner checks the result.
package planning

import (
	"context"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/relay"
	"github.com/askpoint/askpoint/workflow"
)

// Planner replies to the conversation so far: a plan before the expense
// agent has spoken, a check of what it said after. It reads the
// conversation's turns (workflow.ReadTranscript), not its lines: what the
// caller or another participant wrote cannot pass for the expense agent's
// turn.
func Planner() askpoint.Agent {
	return askpoint.Steps[struct{}, struct{}]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			// A message that is not a conversation (the planner asked
			// directly) has no turn of the expense agent: it gets a plan.
			turns, _ := workflow.ReadTranscript(text(call.Request))
			reply := "Plan: the expense agent files the receipt, then I check that it was filed."
			for _, turn := range turns {
				if turn.Speaker == "expense" {
					reply = "Checked: " + turn.Text + " Nothing is left to do."
				}
			}
			return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "reply", Parts: a2a.ContentParts{a2a.NewTextPart(reply)}}), nil
		},
	}
}

// PlannerCard describes the planner.
func PlannerCard() a2a.AgentCard {
	return a2a.AgentCard{Name: "Planner", Description: "Plans an expense filing and checks it was done; a participant of the planning workflow.", Version: "1.0.0"}
}

// Workflow is the planning group chat: planner, expense agent, planner.
// base is the server's base URL (http://HOST:PORT), where the planner and
// the expense agent are served and where the workflow hears from them;
// dial, when not nil, opens the clients that reach them (with credentials).
func Workflow(base string, dial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)) (askpoint.Agent, error) {
	return workflow.Agent(workflow.Config{
		Mode: workflow.GroupChat,
		Participants: []workflow.Participant{
			{Name: "planner", URL: base + "/planner"},
			{Name: "expense", URL: base + "/expense"},
		},
		MaxRounds:   3,
		CallbackURL: base + "/planning",
		Relay:       relay.Config{Dial: dial},
	})
}

// WorkflowCard describes the planning workflow.
func WorkflowCard() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "Planning workflow",
		Description: "A group chat of a planner and the expense agent. When a participant asks, the chat stops and the question comes to you.",
		Version:     "1.0.0",
		Skills: []a2a.AgentSkill{{
			ID: "plan-expense", Name: "Plan and file an expense",
			Description: "e.g. \"File my taxi receipt from Tuesday, 42 euros\".",
			Examples:    []string{"File my taxi receipt from Tuesday, 42 euros"}, Tags: []string{"workflow", "expenses"},
		}},
	}
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
	return strings.Join(out, "\n")
}
