package approval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/question"
)

func start(t *testing.T) *askpointtest.Env {
	return askpointtest.Start(t, askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()})
}

// ask sends a payment to approve and returns the task and its question.
func ask(t *testing.T, env *askpointtest.Env, text string) (*a2a.Task, *question.Question) {
	t.Helper()
	task := env.Send(t, "approval", text)
	return task, env.Question(t, task)
}

func TestABooleanApprovalOffersLabelledOptions(t *testing.T) {
	env := start(t)
	_, q := ask(t, env, "Pay invoice INV-7: 80 EUR to ACME")
	if len(q.Options) != 2 || q.Options[0].Value != true || q.Options[0].Label != "Yes, pay" || q.Options[1].Value != false || q.Options[1].Label != "No" {
		t.Fatalf("options %+v, want true \"Yes, pay\" and false \"No\"", q.Options)
	}
	if q.OptionsFor != "approve" {
		t.Fatalf("optionsFor %q, want approve", q.OptionsFor)
	}
	for _, tc := range []struct {
		text string
		want a2a.TaskState
	}{
		{"yes", a2a.TaskStateCompleted},
		{"Yes, pay", a2a.TaskStateCompleted},
		{"true", a2a.TaskStateCompleted},
		{"No", a2a.TaskStateRejected},
		{"n", a2a.TaskStateRejected},
	} {
		t.Run(tc.text, func(t *testing.T) {
			task, _ := ask(t, env, "Pay invoice INV-7: 80 EUR to ACME")
			got := env.Answer(t, task, tc.text)
			if got.Status.State != tc.want {
				t.Fatalf("text answer %q: task is %s, want %s", tc.text, got.Status.State, tc.want)
			}
			if tc.want == a2a.TaskStateCompleted && (len(got.Artifacts) != 1 || got.Artifacts[0].Name != "payment") {
				t.Fatalf("completed with artifacts %+v, want the payment", got.Artifacts)
			}
		})
	}
	t.Run("neither option", func(t *testing.T) {
		task, _ := ask(t, env, "Pay invoice INV-7: 80 EUR to ACME")
		q := env.Question(t, env.Answer(t, task, "maybe"))
		if q.Attempt != 2 || len(q.Errors) != 1 || q.Errors[0].Pointer != "/approve" || !strings.Contains(q.Errors[0].Message, "Yes, pay") {
			t.Fatalf("re-ask %+v, want attempt 2 with one error at /approve listing the options", q)
		}
	})
}

func TestALargeApprovalOffersOptionsForOneOfItsFields(t *testing.T) {
	env := start(t)
	task, q := ask(t, env, "Pay invoice INV-9: 1200 EUR to ACME")
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(q.Schema, &schema)
	if len(schema.Required) != 2 || q.OptionsFor != "approve" || len(q.Options) != 2 {
		t.Fatalf("schema %s with options for %q, want two required fields and options for approve", q.Schema, q.OptionsFor)
	}
	got := env.Answer(t, task, "yes")
	if re := env.Question(t, got); len(re.Errors) != 1 || re.Errors[0].Pointer != "/reason" {
		t.Fatalf("text answer yes: re-ask errors %+v, want the missing reason only", re.Errors)
	}
	got = env.Answer(t, got, approval.LargeAnswer{Approve: true, Reason: "budgeted in Q4"})
	if got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("data answer: task is %s, want completed", got.Status.State)
	}
}

func TestTheSchemaIsDerivedFromTheAnswerType(t *testing.T) {
	env := start(t)
	task, q := ask(t, env, "Pay invoice INV-9: 1200 EUR to ACME")
	if want := question.MustSchemaFor[approval.LargeAnswer](); string(q.Schema) != string(want) {
		t.Fatalf("answerSchema %s, want the one derived from LargeAnswer %s", q.Schema, want)
	}
	re := env.Question(t, env.Answer(t, task, map[string]any{"approve": "yes please", "reason": "ok", "extra": 1}))
	ptrs := map[string]bool{}
	for _, e := range re.Errors {
		ptrs[e.Pointer] = true
	}
	if !ptrs["/approve"] || !ptrs["/reason"] || !ptrs["/extra"] {
		t.Fatalf("re-ask errors %+v, want /approve (not a boolean), /reason (too short) and /extra (not declared)", re.Errors)
	}
}

func TestTheQuestionCarriesItsSubject(t *testing.T) {
	_, q := ask(t, start(t), "Pay invoice INV-9: 1200 EUR to ACME")
	if q.Subject["amount"] != float64(1200) || q.Subject["currency"] != "EUR" || q.Subject["payee"] != "ACME" {
		t.Fatalf("subject %v, want amount 1200, currency EUR, payee ACME", q.Subject)
	}
}
