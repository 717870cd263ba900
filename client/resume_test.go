package client_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
)

func TestPersonDefersToTheInboxAndResumeCompletesAfterARestart(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	path := filepath.Join(t.TempDir(), "inbox.db")

	// The first "process": run until the question needs a person.
	ib := openInbox(t, path)
	res, err := client.Run(ctx(t), dial(t, url, nil), textMessage(receipt),
		client.WithAgentURL(url), client.WithCaller("alice"),
		client.WithResolvers(client.Facts(nil), inbox.Person{Inbox: ib}))
	var d *inbox.DeferredError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v; want a DeferredError", err)
	}
	it := d.Item
	if it.AgentURL != url || it.TaskID != string(res.Task.ID) || it.ContextID != res.Task.ContextID ||
		it.Question == nil || it.Key != it.Question.ID || len(it.Options()) != 2 || it.Round != 1 || it.Caller != "alice" || it.Request == nil {
		t.Fatalf("inbox item = %+v; want the agent, task, context, question, round, caller and request", it)
	}
	if err := ib.Close(); err != nil {
		t.Fatal(err)
	}

	// Later, another "process" opens the same file and resumes.
	ib2 := openInbox(t, path)
	open, err := ib2.List(ctx(t), inbox.ListOptions{})
	if err != nil || len(open) != 1 || open[0].ID != it.ID {
		t.Fatalf("List = %v, %v; want the one open item", open, err)
	}
	res2, err := inbox.Resume(ctx(t), ib2, it.ID, client.Answer{Fields: map[string]any{"costCentre": "CC-4420"}, Person: "alice"})
	if err != nil {
		t.Fatalf("Resume = %v", err)
	}
	if got := artifactData(t, res2, "expense")["costCentre"]; got != "CC-4420" {
		t.Errorf("costCentre %v, want CC-4420", got)
	}
	if res2.Rounds != 1 {
		t.Errorf("rounds %d, want 1", res2.Rounds)
	}
	answers := userAnswers(t, res2.Task)
	if len(answers) != 1 || answers[0].Metadata[client.MetaAnsweredBy] != client.ByPerson || answers[0].Metadata[client.MetaPerson] != "alice" {
		t.Errorf("history answers %s; want one, by the person alice", dump(answers))
	}
	after, err := ib2.Get(ctx(t), it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.State != inbox.StateAnswered || after.AnsweredBy != "person (alice)" || string(after.Answer) != `{"costCentre":"CC-4420"}` {
		t.Errorf("item after Resume: state %s by %q answer %s; want answered by person (alice)", after.State, after.AnsweredBy, after.Answer)
	}

	// Answering it again is refused.
	if _, err := inbox.Resume(ctx(t), ib2, it.ID, client.Answer{Fields: map[string]any{"costCentre": "CC-4410"}}); !errors.Is(err, client.ErrStale) {
		t.Errorf("second Resume = %v; want ErrStale", err)
	}
}

// deferredReceipt serves the expense agent and runs the receipt on a
// client of it with only a person to answer, through a new inbox; it
// requires the run to end deferred to that inbox.
func deferredReceipt(t *testing.T) (*a2aclient.Client, *inbox.Inbox, *inbox.DeferredError) {
	t.Helper()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	ib := openInbox(t, "")
	c := dial(t, url, nil)
	_, err := client.Run(ctx(t), c, textMessage(receipt), client.WithAgentURL(url), client.WithResolvers(inbox.Person{Inbox: ib}))
	var d *inbox.DeferredError
	if !errors.As(err, &d) {
		t.Fatalf("Run = %v; want a DeferredError", err)
	}
	return c, ib, d
}

func TestResumeRefusesAnInvalidAnswerAndSendsNothing(t *testing.T) {
	t.Parallel()
	c, ib, d := deferredReceipt(t)
	_, err := inbox.Resume(ctx(t), ib, d.Item.ID, client.Answer{Fields: map[string]any{"costCentre": "CC-9999"}})
	var invalid *client.InvalidAnswerError
	if !errors.As(err, &invalid) || len(invalid.Errors) != 1 || invalid.Errors[0].Message != "expected one of CC-4410, CC-4420" {
		t.Fatalf("Resume = %v; want an InvalidAnswerError naming the options", err)
	}
	task, err := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: a2a.TaskID(d.Item.TaskID)})
	if err != nil {
		t.Fatal(err)
	}
	if len(userAnswers(t, task)) != 0 {
		t.Errorf("an invalid answer reached the agent")
	}
	if it, _ := ib.Get(ctx(t), d.Item.ID); it.State != inbox.StateOpen {
		t.Errorf("item is %s after a refused answer, want open", it.State)
	}
}

func TestResumeOfAQuestionAnsweredElsewhereClosesTheItem(t *testing.T) {
	t.Parallel()
	c, ib, d := deferredReceipt(t)
	// Someone answers through another client.
	other := textMessage("CC-4410")
	other.TaskID = a2a.TaskID(d.Item.TaskID)
	if _, err := c.SendMessage(ctx(t), &a2a.SendMessageRequest{Message: other}); err != nil {
		t.Fatal(err)
	}
	res, err := inbox.Resume(ctx(t), ib, d.Item.ID, client.Answer{Fields: map[string]any{"costCentre": "CC-4420"}})
	if !errors.Is(err, client.ErrStale) {
		t.Fatalf("Resume = %v; want ErrStale", err)
	}
	if res.State() != a2a.TaskStateCompleted {
		t.Errorf("result state %s; want the task as it stands (completed)", res.State())
	}
	it, _ := ib.Get(ctx(t), d.Item.ID)
	if it.State != inbox.StateClosed || it.Note != "the task is now completed" {
		t.Errorf("item %s (%q); want closed, the task is now completed", it.State, it.Note)
	}
}

func TestResumeOfAReAskPromptsAgainThroughTheChain(t *testing.T) {
	t.Parallel()
	_, ib, d := deferredReceipt(t)
	// The person's words are not an option: the agent re-asks, and the
	// re-ask goes back to the inbox as a new item.
	res, err := inbox.Resume(ctx(t), ib, d.Item.ID, client.Answer{Text: "engineering"},
		client.WithResolvers(inbox.Person{Inbox: ib}))
	var d2 *inbox.DeferredError
	if !errors.As(err, &d2) {
		t.Fatalf("Resume = %v; want the re-ask deferred", err)
	}
	if d2.Item.ID == d.Item.ID || d2.Item.Question.Attempt != 2 || d2.Item.Round != 2 || len(d2.Item.Question.Errors) != 1 {
		t.Errorf("re-ask item = %+v; want a new item, attempt 2, round 2, with the error", d2.Item)
	}
	first, _ := ib.Get(ctx(t), d.Item.ID)
	if first.State != inbox.StateAnswered {
		t.Errorf("first item is %s, want answered", first.State)
	}
	if res.Rounds != 1 {
		t.Errorf("rounds %d, want 1", res.Rounds)
	}
	res, err = inbox.Resume(ctx(t), ib, d2.Item.ID, client.Answer{Fields: map[string]any{"costCentre": "CC-4410"}})
	if err != nil {
		t.Fatalf("Resume of the re-ask = %v", err)
	}
	if res.Rounds != 2 || artifactData(t, res, "expense")["costCentre"] != "CC-4410" {
		t.Errorf("rounds %d, artifacts %s", res.Rounds, dump(res.Artifacts()))
	}
}
