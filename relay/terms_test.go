package relay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

// paymentsLeaf asks how to pay, as "method" (card or credit), and refuses
// credit once with a re-ask of its own, in its own terms.
type paymentsLeaf struct {
	mu  sync.Mutex
	got []string
}

type paymentsCP struct {
	Round int `json:"round"`
}

var methodSchema = json.RawMessage(`{"type":"object","required":["method"],"properties":{"method":{"type":"string","enum":["card","credit"]}}}`)

func (p *paymentsLeaf) spec() askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "payments", Card: a2a.AgentCard{Name: "Payments", Description: "Asks how to pay."},
		Agent: askpoint.Steps[paymentsCP, map[string]any]{
			OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Method?", Schema: methodSchema}, paymentsCP{Round: 1}), nil
			},
			OnAnswer: func(ctx context.Context, call *askpoint.Call, cp paymentsCP, a map[string]any) (askpoint.Outcome, error) {
				p.mu.Lock()
				p.got = append(p.got, fmt.Sprint(a["method"]))
				p.mu.Unlock()
				if a["method"] == "credit" && cp.Round == 1 {
					return askpoint.Ask(question.Question{
						Text: "Method?", Schema: methodSchema, Attempt: 2, MaxAttempts: 3,
						Errors: []question.FieldError{{Pointer: "/method", Message: "credit is not taken above 100 EUR; expected one of card"}},
					}, paymentsCP{Round: 2}), nil
				}
				return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Parts: a2a.ContentParts{a2a.NewTextPart("paid")}}), nil
			},
		}}
}

func (p *paymentsLeaf) answers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.got...)
}

// leafWords are the payments agent's names and values, which the relay's
// caller never gave ("mastercard" is the caller's own).
var leafWords = regexp.MustCompile(`\b(method|card|credit)\b`)

// The relay asks "payment" (visa, mastercard or paypal) and translates it
// to the payments agent's "method", mapping the values. Its caller is
// re-asked in the relay's terms, whether the payments agent's schema
// refuses the translated answer (paypal has no method) or the agent
// itself re-asks (credit above 100 EUR): at /payment, with nothing of the
// agent's field name or values. Only the answers that passed the relay's
// check reach the agent.
func TestARelayThatMapsValuesReAsksInItsOwnTerms(t *testing.T) {
	leaf := &paymentsLeaf{}
	sub := askpointtest.Start(t, leaf.spec())
	top := askpointtest.Listen(t)
	methods := map[string]string{"visa": "card", "mastercard": "credit", "paypal": "paypal"}
	top.Serve(t, chainRelay(t, "top", relay.Config{
		SubAgentName: "the payments desk", SubAgentURL: sub.AgentURL("payments"), CallbackURL: top.AgentURL("top"),
		Restate: func(_ context.Context, _ *askpoint.Call, q *question.Question) (question.Question, error) {
			return question.Question{Text: "How will you pay?", Schema: json.RawMessage(
				`{"type":"object","required":["payment"],"properties":{"payment":{"type":"string","enum":["visa","mastercard","paypal"]}}}`)}, nil
		},
		Translate: func(_ context.Context, _ *askpoint.Call, _ *question.Question, a map[string]any) (map[string]any, error) {
			return map[string]any{"method": methods[fmt.Sprint(a["payment"])]}, nil
		},
	}))
	c := top.Client(t, "top")
	task := sendState(t, testCtx(t), c, userText("Pay the invoice"), a2a.TaskStateInputRequired)

	reAsk := func(payment, why string) {
		t.Helper()
		got := send(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"payment": payment}))
		if got.Status.State != a2a.TaskStateInputRequired {
			got = waitState(t, testCtx(t), c, task.ID, a2a.TaskStateInputRequired)
		}
		re := questionOf(t, got)
		if len(re.Errors) == 0 {
			t.Fatalf("%s: the relay asks %+v, want a re-ask with errors", why, re)
		}
		for _, e := range re.Errors {
			if e.Pointer != "/payment" {
				t.Errorf("%s: the re-ask points at %q, want /payment (the caller's field)", why, e.Pointer)
			}
		}
		raw, _ := json.Marshal(re.Errors)
		if w := leafWords.FindString(string(raw) + " " + statusText(got)); w != "" {
			t.Errorf("%s: the re-ask says %q of the payments agent's terms: %s / %q", why, w, raw, statusText(got))
		}
	}
	reAsk("paypal", "the payments agent's schema refuses the translation")
	reAsk("mastercard", "the payments agent re-asks")
	settleTop(t, c, send(t, testCtx(t), c, dataAnswer(task.ID, map[string]any{"payment": "visa"})), a2a.TaskStateCompleted)
	if got := leaf.answers(); !slices.Equal(got, []string{"credit", "card"}) {
		t.Fatalf("the payments agent got %q, want [credit card] (paypal refused at the relay)", got)
	}
}
