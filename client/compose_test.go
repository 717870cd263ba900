package client_test

import (
	"bytes"
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
		{"Pay invoice INV-7: 80 EUR to ACME", "yes\n\n", []string{"Options for approve:", "1) Yes, pay", "2) No"}},
		{"Pay invoice INV-9: 1200 EUR to ACME", "1\nbudgeted in Q4\n", []string{"Options for approve:", "1) Yes, pay", "reason"}},
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
