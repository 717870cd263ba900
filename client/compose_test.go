package client_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/examples/approval"
)

// The terminal offers a boolean question's labelled options and takes
// "yes" for "Yes, pay"; with several fields it says which field the
// options are for and asks for the others.
func TestTerminalOffersLabelledBooleanOptions(t *testing.T) {
	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()})
	for _, tc := range []struct {
		request, input string
		wantShown      []string
	}{
		{"Pay invoice INV-7: 80 EUR to ACME", "yes\n\n", []string{"Options for Approve:", "1) Yes, pay", "2) No"}},
		{"Pay invoice INV-9: 1200 EUR to ACME", "1\nbudgeted in Q4\n", []string{"Options for Approve:", "1) Yes, pay", "reason"}},
	} {
		var out bytes.Buffer
		term := client.NewTerminal(strings.NewReader(tc.input), &out, "pat")
		res, err := client.Run(ctx(t), env.Client(t, "approval"), textMessage(tc.request), client.WithResolvers(term))
		if err != nil {
			t.Fatalf("%s: Run: %v\n%s", tc.request, err, out.String())
		}
		if res.State() != a2a.TaskStateCompleted {
			t.Fatalf("%s: ended %s, want completed\n%s", tc.request, res.State(), out.String())
		}
		for _, s := range tc.wantShown {
			if !strings.Contains(out.String(), s) {
				t.Fatalf("%s: the terminal did not show %q:\n%s", tc.request, s, out.String())
			}
		}
	}
}

// A policy rule matches what the question is about: payments below 100
// EUR are approved by policy, larger ones go to the next resolver (a
// person).
func TestPolicyMatchesTheQuestionsSubject(t *testing.T) {
	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()})
	policy, err := client.ParsePolicy([]byte(`{"rules": [
		{"name": "small-eur", "when": {"field": "approve", "subject": {"currency": "EUR", "amount": {"below": 100}}}, "answer": true}
	], "limits": {"optionsOnly": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		request   string
		wantAsked bool
	}{
		{"Pay invoice INV-1: 80 EUR to ACME", false},
		{"Pay invoice INV-2: 150 EUR to ACME", true},
		{"Pay invoice INV-3: 80 USD to ACME", true},
	} {
		asked := false
		person := client.ResolverFunc(func(_ context.Context, q *client.Query) (*client.Answer, error) {
			asked = true
			return &client.Answer{Fields: map[string]any{"approve": true}, By: client.ByPerson}, nil
		})
		res, err := client.Run(ctx(t), env.Client(t, "approval"), textMessage(tc.request), client.WithResolvers(policy, person))
		if err != nil {
			t.Fatalf("%s: Run: %v", tc.request, err)
		}
		if res.State() != a2a.TaskStateCompleted || asked != tc.wantAsked {
			t.Fatalf("%s: ended %s, person asked %v; want completed, person asked %v", tc.request, res.State(), asked, tc.wantAsked)
		}
	}
	if _, err := client.ParsePolicy([]byte(`{"rules": [{"when": {"field": "approve", "subject": {"amount": {"under": 100}}}, "answer": true}]}`)); err == nil || !strings.Contains(err.Error(), "below") {
		t.Fatalf("a subject condition with an unknown bound: err = %v, want one listing the bounds", err)
	}
}
