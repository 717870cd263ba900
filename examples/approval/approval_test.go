package approval_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/question"
)

func start(t *testing.T) *a2aclient.Client {
	t.Helper()
	env := askpointtest.Start(t, askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()})
	return env.Client(t, "approval")
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return c
}

func send(t *testing.T, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(ctx(t), &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T, want a task", res)
	}
	return task
}

func ask(t *testing.T, c *a2aclient.Client, text string) (*a2a.Task, *question.Question) {
	t.Helper()
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
	return task, openQuestion(t, task)
}

func openQuestion(t *testing.T, task *a2a.Task) *question.Question {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task is %s (%s), want input-required", task.Status.State, statusText(task))
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if !ok || err != nil {
		t.Fatalf("no question in the status message (%v)", err)
	}
	return q
}

func answerText(t *testing.T, c *a2aclient.Client, task *a2a.Task, text string) *a2a.Task {
	t.Helper()
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.TaskID = task.ID
	return send(t, c, m)
}

func answerData(t *testing.T, c *a2aclient.Client, task *a2a.Task, v map[string]any) *a2a.Task {
	t.Helper()
	p := a2a.NewDataPart(v)
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = task.ID
	return send(t, c, m)
}

func statusText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return ""
	}
	var out []string
	for _, p := range task.Status.Message.Parts {
		if s, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(s))
		}
	}
	return strings.Join(out, " ")
}

func TestABooleanApprovalOffersLabelledOptions(t *testing.T) {
	c := start(t)
	task, q := ask(t, c, "Pay invoice INV-7: 80 EUR to ACME")
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
			if tc.text != "yes" {
				task, _ = ask(t, c, "Pay invoice INV-7: 80 EUR to ACME")
			}
			got := answerText(t, c, task, tc.text)
			if got.Status.State != tc.want {
				t.Fatalf("text answer %q: task is %s (%s), want %s", tc.text, got.Status.State, statusText(got), tc.want)
			}
			if tc.want == a2a.TaskStateCompleted && (len(got.Artifacts) != 1 || got.Artifacts[0].Name != "payment") {
				t.Fatalf("completed with artifacts %+v, want the payment", got.Artifacts)
			}
		})
	}
	t.Run("neither option", func(t *testing.T) {
		task, _ := ask(t, c, "Pay invoice INV-7: 80 EUR to ACME")
		got := answerText(t, c, task, "maybe")
		q := openQuestion(t, got)
		if q.Attempt != 2 || len(q.Errors) != 1 || q.Errors[0].Pointer != "/approve" || !strings.Contains(q.Errors[0].Message, "Yes, pay") {
			t.Fatalf("re-ask %+v, want attempt 2 with one error at /approve listing the options", q)
		}
	})
}

func TestALargeApprovalOffersOptionsForOneOfItsFields(t *testing.T) {
	c := start(t)
	task, q := ask(t, c, "Pay invoice INV-9: 1200 EUR to ACME")
	var schema struct {
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(q.Schema, &schema)
	if len(schema.Required) != 2 || q.OptionsFor != "approve" || len(q.Options) != 2 {
		t.Fatalf("schema %s with options for %q, want two required fields and options for approve", q.Schema, q.OptionsFor)
	}
	got := answerText(t, c, task, "yes")
	re := openQuestion(t, got)
	if len(re.Errors) != 1 || re.Errors[0].Pointer != "/reason" {
		t.Fatalf("text answer yes: re-ask errors %+v, want the missing reason only", re.Errors)
	}
	got = answerData(t, c, got, map[string]any{"approve": true, "reason": "budgeted in Q4"})
	if got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("data answer: task is %s (%s), want completed", got.Status.State, statusText(got))
	}
}

func TestTheSchemaIsDerivedFromTheAnswerType(t *testing.T) {
	c := start(t)
	task, q := ask(t, c, "Pay invoice INV-9: 1200 EUR to ACME")
	want := question.MustSchemaFor[approval.LargeAnswer]()
	if string(q.Schema) != string(want) {
		t.Fatalf("answerSchema %s, want the one derived from LargeAnswer %s", q.Schema, want)
	}
	got := answerData(t, c, task, map[string]any{"approve": "yes please", "reason": "ok", "extra": 1})
	re := openQuestion(t, got)
	ptrs := map[string]bool{}
	for _, e := range re.Errors {
		ptrs[e.Pointer] = true
	}
	if !ptrs["/approve"] || !ptrs["/reason"] || !ptrs["/extra"] {
		t.Fatalf("re-ask errors %+v, want /approve (not a boolean), /reason (too short) and /extra (not declared)", re.Errors)
	}
}

func TestTheQuestionCarriesItsSubject(t *testing.T) {
	c := start(t)
	_, q := ask(t, c, "Pay invoice INV-9: 1200 EUR to ACME")
	if q.Subject["amount"] != float64(1200) || q.Subject["currency"] != "EUR" || q.Subject["payee"] != "ACME" {
		t.Fatalf("subject %v, want amount 1200, currency EUR, payee ACME", q.Subject)
	}
}
