package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store/sqlite"
)

// The caller's loop against an agent that pauses to ask which cost centre
// to charge: the question is answered from what the caller already knows
// (Facts), checked against the question's options before it is sent, on
// the same task, and the loop returns when the task has completed.
func ExampleRun() {
	ctx := context.Background()
	url, stop, err := serveExpenses(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	c, err := client.Dial(ctx, url, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Destroy()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))
	res, err := client.Run(ctx, c, msg,
		client.WithAgentURL(url),
		client.WithResolvers(client.Facts(map[string]any{"costCentre": "CC-4420"})))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range res.Answers {
		fmt.Printf("round %d: %s answered %s with %v\n", a.Round, a.By, a.QuestionID, a.Fields["costCentre"])
	}
	fmt.Println(res.State())
	for _, art := range res.Artifacts() {
		for _, p := range art.Parts {
			if t, ok := p.Content.(a2a.Text); ok {
				fmt.Println(t)
			}
		}
	}
	// Output:
	// round 1: context answered cost-centre with CC-4420
	// TASK_STATE_COMPLETED
	// Charged 42 EUR to CC-4420.
}

// An expense agent's checkpoint while it asks, and the answer it asks for.
type receiptClaim struct{ Amount int }
type costCentre struct {
	CostCentre string `json:"costCentre" jsonschema:"required,description=The cost centre to charge"`
}

// serveExpenses serves an agent that asks for a cost centre and then
// files the expense, on a real askpoint server: a SQLite file in a
// temporary directory, HTTP on 127.0.0.1. It returns the agent's URL and
// a function that stops everything.
func serveExpenses(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "askpoint-client-example")
	if err != nil {
		return "", nil, err
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "askpoint.db"))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	agent := askpoint.Steps[receiptClaim, costCentre]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{
				ID:      "cost-centre",
				Text:    "Which cost centre should this expense be charged to?",
				Schema:  question.MustSchemaFor[costCentre](),
				Options: []question.Option{{Value: "CC-4410"}, {Value: "CC-4420"}},
			}, receiptClaim{Amount: 42}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp receiptClaim, a costCentre) (askpoint.Outcome, error) {
			text := fmt.Sprintf("Charged %d EUR to %s.", cp.Amount, a.CostCentre)
			return askpoint.Complete(&a2a.Artifact{ID: "expense", Parts: a2a.ContentParts{a2a.NewTextPart(text)}}), nil
		},
	}
	srv, err := askpoint.NewServer(askpoint.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = srv.Register(askpoint.AgentSpec{Name: "expenses", Agent: agent,
			Card: a2a.AgentCard{Name: "Expenses", Description: "Files an expense; asks which cost centre to charge."}})
	}
	if err == nil {
		err = srv.Start(ctx)
	}
	if err != nil {
		st.Close()
		os.RemoveAll(dir)
		return "", nil, err
	}
	hs := httptest.NewServer(srv.Handler()) // on 127.0.0.1, a free port
	return hs.URL + "/expenses", func() {
		hs.Close()
		_ = srv.Stop(ctx)
		st.Close()
		os.RemoveAll(dir)
	}, nil
}
