package client_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// questionsIn returns the questions the task's history holds, by ID.
func questionsIn(t *testing.T, task *a2a.Task) map[string]*question.Question {
	t.Helper()
	out := map[string]*question.Question{}
	for _, m := range task.History {
		if q, ok, err := question.FromMessage(m); ok && err == nil {
			out[q.ID] = q
		}
	}
	return out
}

// The server keeps each answer's decision record in the task's history as
// it was sent: GetTask shows, per question, who decided what, and the
// digest matches the question the history holds.
func TestDecisionRecordOfEveryAnswerSurvivesIntoTheTasksHistory(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	ib := openInbox(t, "")
	c := dial(t, url, nil)

	// The policy answers: the record names the rule, and no person.
	res, err := client.Run(ctx(t), c, textMessage(receipt), client.WithAgentURL(url), client.WithCaller("alice"),
		client.WithResolvers(costCentrePolicy(t, url), inbox.Person{Inbox: ib}))
	if err != nil || res.State() != a2a.TaskStateCompleted {
		t.Fatalf("Run = %v, state %s", err, res.State())
	}
	task, err := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	answers, asked := userAnswers(t, task), questionsIn(t, task)
	if len(answers) != 1 {
		t.Fatalf("history holds %d answers, want 1: %s", len(answers), dump(task.History))
	}
	d, ok, err := question.DecisionOf(answers[0])
	if !ok || err != nil {
		t.Fatalf("the stored answer carries no decision record (ok=%v, err=%v): metadata %v", ok, err, answers[0].Metadata)
	}
	q := asked[d.QuestionID]
	if q == nil || d.Version != 1 || d.By.Kind != question.DeciderPolicy || d.By.Rule != "alice-cost-centre" || d.By.Name != "" ||
		d.Decision != question.DecisionAnswered || d.At.IsZero() {
		t.Errorf("decision = %+v; want version 1, by policy rule alice-cost-centre, answered, for a question of the history", d)
	}
	if q != nil && d.QuestionDigest != question.Digest(q) {
		t.Errorf("digest %s, but the question in history digests to %s", d.QuestionDigest, question.Digest(q))
	}

	// A person declines with a reason: declined, the reason as justification.
	res, err = client.Run(ctx(t), c, textMessage(receipt), client.WithAgentURL(url),
		client.WithResolvers(client.ResolverFunc(func(_ context.Context, q *client.Query) (*client.Answer, error) {
			return &client.Answer{Action: question.ActionDecline, Reason: "not my receipt", By: client.ByPerson, Person: "erin", Via: "terminal"}, nil
		})))
	if res.State() != a2a.TaskStateRejected {
		t.Fatalf("after a decline: state %s (%v), want rejected", res.State(), err)
	}
	task, err = c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: res.Task.ID})
	if err != nil {
		t.Fatal(err)
	}
	answers = userAnswers(t, task)
	d, ok, err = question.DecisionOf(answers[len(answers)-1])
	if !ok || err != nil || d.By.Kind != question.DeciderPerson || d.By.Name != "erin" || d.By.Via != "terminal" ||
		d.Decision != question.DecisionDeclined || d.Justification != "not my receipt" {
		t.Errorf("decline's decision = %+v (ok=%v, err=%v); want declined by person erin via terminal, justified", d, ok, err)
	}
}
