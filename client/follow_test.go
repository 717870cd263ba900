package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// Follow picks a task up where it is: a question still open goes to the
// resolvers (here deferred, as Run defers it), and once someone else has
// answered it the task's end is the result, with nothing sent.
func TestFollowPicksUpATaskAnsweredElsewhere(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	deferAll := client.WithResolvers(client.ResolverFunc(func(context.Context, *client.Query) (*client.Answer, error) {
		return nil, client.ErrDeferred
	}))
	c := dial(t, url, nil)
	res, err := client.Run(ctx(t), c, textMessage(receipt), client.WithAgentURL(url), deferAll)
	if !errors.Is(err, client.ErrDeferred) || res.Task == nil {
		t.Fatalf("Run = %v; want the question deferred", err)
	}
	id := res.Task.ID
	open, err := client.Follow(ctx(t), c, id, client.WithAgentURL(url), deferAll)
	if !errors.Is(err, client.ErrDeferred) || open.Waiting == nil || open.Waiting.Question == nil || len(open.Answers) != 0 {
		t.Fatalf("Follow on the open question = %+v, %v; want it deferred again, nothing sent", open, err)
	}
	q, _, err := question.FromMessage(open.Task.Status.Message)
	if err != nil || q == nil {
		t.Fatalf("question: %v", err)
	}
	answer := a2a.NewDataPart(map[string]any{"questionId": q.ID, "costCentre": "CC-4420"})
	answer.MediaType = question.MediaTypeJSON
	msg := a2a.NewMessageForTask(a2a.MessageRoleUser, res.Task, answer)
	if _, err := dial(t, url, nil).SendMessage(ctx(t), &a2a.SendMessageRequest{Message: msg}); err != nil {
		t.Fatalf("the answer from elsewhere: %v", err)
	}
	done, err := client.Follow(ctx(t), c, id, client.WithAgentURL(url), deferAll)
	if err != nil || done.State() != a2a.TaskStateCompleted || len(done.Answers) != 0 {
		t.Fatalf("Follow after the answer = %v, %v; want completed with no answer of its own", done.State(), err)
	}
	if exp := artifactData(t, done, "expense"); exp["costCentre"] != "CC-4420" {
		t.Errorf("expense %v; want CC-4420", exp)
	}
}
