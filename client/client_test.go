package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

func costCentrePolicy(t *testing.T, agentURL string) *client.Policy {
	t.Helper()
	p, err := client.ParsePolicy([]byte(`{
		"rules": [{"name": "alice-cost-centre", "when": {"field": "costCentre", "agent": "` + agentURL + `", "caller": "alice"}, "answer": "CC-4410"}],
		"limits": {"fields": ["costCentre"], "optionsOnly": true}
	}`))
	if err != nil {
		t.Fatalf("ParsePolicy = %v", err)
	}
	return p
}

func TestPolicyAnswersTheWorkedExampleWithoutAPerson(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	for _, transport := range apitest.Transports {
		t.Run(string(transport), func(t *testing.T) {
			ib := openInbox(t, "")
			res, err := client.Run(ctx(t), dial(t, url, nil, transport), textMessage(receipt),
				client.WithAgentURL(url), client.WithCaller("alice"),
				client.WithResolvers(client.Facts(nil), costCentrePolicy(t, url), inbox.Person{Inbox: ib}))
			if err != nil {
				t.Fatalf("Run = %v", err)
			}
			if res.State() != a2a.TaskStateCompleted {
				t.Fatalf("state %s, want completed", res.State())
			}
			exp := artifactData(t, res, "expense")
			if exp["costCentre"] != "CC-4410" || !strings.HasPrefix(fmt.Sprint(exp["expenseId"]), "EXP-") {
				t.Errorf("expense artifact = %v; want costCentre CC-4410 and an expense ID", exp)
			}
			if res.Rounds != 1 || len(res.Answers) != 1 || res.Answers[0].By != client.ByPolicy || res.Answers[0].Rule != "alice-cost-centre" {
				t.Errorf("answers = %+v; want one, by policy rule alice-cost-centre", res.Answers)
			}
			// The audit trail says who answered, and the answer used the
			// question extension: a data part keyed by the question's ID.
			answers := userAnswers(t, res.Task)
			if len(answers) != 1 {
				t.Fatalf("history holds %d answers, want 1: %s", len(answers), dump(res.Task.History))
			}
			a := answers[0]
			if a.Metadata[client.MetaAnsweredBy] != client.ByPolicy || a.Metadata[client.MetaRule] != "alice-cost-centre" {
				t.Errorf("answer metadata = %v; want answeredBy policy and the rule", a.Metadata)
			}
			d := dataOf(a)
			if d["costCentre"] != "CC-4410" || d["questionId"] != res.Answers[0].QuestionID || res.Answers[0].QuestionID == "" {
				t.Errorf("answer data = %v; want costCentre and questionId %q", d, res.Answers[0].QuestionID)
			}
			if items, _ := ib.List(ctx(t), inbox.ListOptions{All: true}); len(items) != 0 {
				t.Errorf("the inbox holds %d items; a person should not have been asked", len(items))
			}
		})
	}
}

func TestPolicyForAnotherCallerLeavesTheQuestionToAPerson(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	ib := openInbox(t, "")
	res, err := client.Run(ctx(t), dial(t, url, nil), textMessage(receipt),
		client.WithAgentURL(url), client.WithCaller("bob"),
		client.WithResolvers(costCentrePolicy(t, url), inbox.Person{Inbox: ib}))
	var d *inbox.DeferredError
	if !errors.As(err, &d) || !errors.Is(err, client.ErrDeferred) {
		t.Fatalf("Run = %v; want a DeferredError", err)
	}
	if res.State() != a2a.TaskStateInputRequired || res.Waiting == nil || client.QuestionKey(res.Waiting.Status) != d.Item.Key {
		t.Errorf("result state %s waiting %+v; want input-required and the inbox item's question", res.State(), res.Waiting)
	}
	if res.Artifacts() != nil {
		t.Errorf("a paused task's artifacts were returned as the result: %v", res.Artifacts())
	}
}

func TestFactsThatFailTheQuestionArePassedOverToPolicy(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	res, err := client.Run(ctx(t), dial(t, url, nil), textMessage(receipt),
		client.WithAgentURL(url), client.WithCaller("alice"),
		client.WithResolvers(client.Facts(map[string]any{"costCentre": "CC-9999"}), costCentrePolicy(t, url)))
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(res.Answers) != 1 || res.Answers[0].By != client.ByPolicy {
		t.Fatalf("answers = %+v; want one answer, by policy (the fact CC-9999 is not an option)", res.Answers)
	}
	if got := artifactData(t, res, "expense")["costCentre"]; got != "CC-4410" {
		t.Errorf("costCentre %v, want CC-4410", got)
	}
}

func TestFactsFromTheRequestAnswerTheQuestion(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	data := a2a.NewDataPart(map[string]any{"costCentre": "CC-4420"})
	data.MediaType = question.MediaTypeJSON
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(receipt), data)
	res, err := client.Run(ctx(t), dial(t, url, nil), msg, client.WithResolvers(client.Facts(nil)))
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(res.Answers) != 1 || res.Answers[0].By != client.ByContext {
		t.Errorf("answers = %+v; want one, from context", res.Answers)
	}
	if got := artifactData(t, res, "expense")["costCentre"]; got != "CC-4420" {
		t.Errorf("costCentre %v, want CC-4420 from the request's data part", got)
	}
}

func TestReAskAnsweredCorrectlyOnTheSecondTry(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	var seen []*client.Query
	// A person in a chat types "engineering"; the agent re-asks with the
	// options; the person picks CC-4410.
	person := client.ResolverFunc(func(_ context.Context, q *client.Query) (*client.Answer, error) {
		seen = append(seen, q)
		if q.Refused == nil {
			return &client.Answer{Text: "engineering", By: client.ByPerson, Person: "erin"}, nil
		}
		return &client.Answer{Fields: map[string]any{"costCentre": "CC-4410"}, By: client.ByPerson, Person: "erin"}, nil
	})
	res, err := client.Run(ctx(t), dial(t, url, nil), textMessage(receipt), client.WithResolvers(person))
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(seen) != 2 {
		t.Fatalf("the resolver was asked %d times, want 2", len(seen))
	}
	re := seen[1]
	if re.Question.Attempt != 2 || re.Question.ID == seen[0].Question.ID || re.Refused == nil || re.Refused.Text != "engineering" {
		t.Errorf("second query: attempt %d, id %s (first %s), refused %+v; want the re-ask of the refused text answer",
			re.Question.Attempt, re.Question.ID, seen[0].Question.ID, re.Refused)
	}
	if len(re.Question.Errors) != 1 || re.Question.Errors[0].Message != "expected one of CC-4410, CC-4420" {
		t.Errorf("re-ask errors = %+v", re.Question.Errors)
	}
	if res.State() != a2a.TaskStateCompleted || res.Rounds != 2 {
		t.Errorf("state %s after %d rounds; want completed after 2", res.State(), res.Rounds)
	}
	if got := artifactData(t, res, "expense")["costCentre"]; got != "CC-4410" {
		t.Errorf("costCentre %v, want CC-4410", got)
	}
	// History: request, question, "engineering", re-ask, data answer.
	answers := userAnswers(t, res.Task)
	if len(answers) != 2 || dataOf(answers[0]) != nil || dataOf(answers[1])["questionId"] != re.Question.ID {
		t.Errorf("answers in history = %s", dump(answers))
	}
	for _, a := range answers {
		if a.Metadata[client.MetaAnsweredBy] != client.ByPerson || a.Metadata[client.MetaPerson] != "erin" {
			t.Errorf("answer metadata = %v; want answeredBy person, person erin", a.Metadata)
		}
	}
}

func TestARefusedAnswerIsNotRepeated(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	stubborn := client.ResolverFunc(func(_ context.Context, q *client.Query) (*client.Answer, error) {
		return &client.Answer{Text: "engineering", By: "stubborn"}, nil
	})
	res, err := client.Run(ctx(t), dial(t, url, nil), textMessage(receipt),
		client.WithResolvers(stubborn, client.Facts(map[string]any{"costCentre": "CC-4420"})))
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if len(res.Answers) != 2 || res.Answers[0].By != "stubborn" || res.Answers[1].By != client.ByContext {
		t.Errorf("answers = %+v; want stubborn once, then context", res.Answers)
	}
}

// nagAgent asks for a name again and again.
func nagAgent() askpoint.Agent {
	ask := func(n int) askpoint.Outcome {
		return askpoint.Ask(question.Question{
			Text:   fmt.Sprintf("Question %d: what is your name?", n),
			Schema: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`),
		}, n)
	}
	return askpoint.Steps[int, map[string]any]{
		OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) { return ask(1), nil },
		OnAnswer: func(_ context.Context, _ *askpoint.Call, n int, _ map[string]any) (askpoint.Outcome, error) {
			return ask(n + 1), nil
		},
	}
}

func TestAnAgentThatAsksFourTimesHitsTheRoundCapAndIsCanceled(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{
		{Name: "nag", Agent: nagAgent(), Card: a2a.AgentCard{Name: "Nag", Description: "Always asks again."}},
	}})
	url := env.AgentURL("nag")
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("streaming=%v", streaming), func(t *testing.T) {
			c := dial(t, url, nil)
			res, err := client.Run(ctx(t), c, textMessage("hello"), client.WithStreaming(streaming),
				client.WithResolvers(client.Facts(map[string]any{"name": "Ada"})))
			if !errors.Is(err, client.ErrKeptAsking) {
				t.Fatalf("Run = %v; want ErrKeptAsking", err)
			}
			if !strings.Contains(err.Error(), "Question 4") || !strings.Contains(err.Error(), "canceled") {
				t.Errorf("error %q does not name the fourth question and the cancel", err)
			}
			if res.Rounds != client.DefaultMaxRounds {
				t.Errorf("rounds = %d, want %d", res.Rounds, client.DefaultMaxRounds)
			}
			task, gerr := c.GetTask(ctx(t), &a2a.GetTaskRequest{ID: res.Task.ID})
			if gerr != nil {
				t.Fatalf("GetTask = %v", gerr)
			}
			if task.Status.State != a2a.TaskStateCanceled {
				t.Errorf("the task is %s on the server, want canceled", task.Status.State)
			}
			asked := 0
			for _, m := range task.History {
				if m.Role == a2a.MessageRoleAgent {
					asked++
				}
			}
			if asked < 4 {
				t.Errorf("the agent asked %d questions, want 4", asked)
			}
		})
	}
}

func TestBothStreamSettings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		setting  askpoint.InputRequiredStreams
		stream   bool
		validate func(t *testing.T, calls []string)
	}{
		{"close/streaming", askpoint.CloseStreams, true, func(t *testing.T, calls []string) {
			// The stream ends at the first question, so the loop needs a new
			// streaming call or a subscription (which askpoint keeps open
			// while the task is paused) to see what follows.
			if n := count(calls, "SendStreamingMessage") + count(calls, "SubscribeToTask"); n < 2 {
				t.Errorf("calls %v: want a new stream after the stream closed at the first question", calls)
			}
		}},
		{"open/streaming", askpoint.KeepStreamsOpen, true, func(t *testing.T, calls []string) {
			// One stream carries the whole task; the answers go alongside it.
			if count(calls, "SendStreamingMessage") != 1 || count(calls, "SubscribeToTask") != 0 || count(calls, "SendMessage") != 2 {
				t.Errorf("calls %v: want one stream read to the end, with two answers sent alongside", calls)
			}
		}},
		{"close/blocking", askpoint.CloseStreams, false, func(t *testing.T, calls []string) {
			if count(calls, "SendMessage") != 3 {
				t.Errorf("calls %v: want three blocking sends", calls)
			}
		}},
		{"open/blocking", askpoint.KeepStreamsOpen, false, func(t *testing.T, calls []string) {
			if count(calls, "SendMessage") != 3 {
				t.Errorf("calls %v: want three blocking sends", calls)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.InputRequiredStreams = tt.setting }})
			for _, transport := range apitest.Transports {
				t.Run(string(transport), func(t *testing.T) {
					res, err := client.Run(ctx(t), dial(t, env.AgentURL("script"), nil, transport), textMessage("ask-twice"),
						client.WithStreaming(tt.stream),
						client.WithResolvers(client.Facts(map[string]any{"name": "Ada", "colour": "green"})))
					if err != nil {
						t.Fatalf("Run = %v (calls %v)", err, res.Calls)
					}
					if got := artifactText(res, "result"); got != "Ada likes green" {
						t.Errorf("result %q, want %q", got, "Ada likes green")
					}
					if res.Rounds != 2 {
						t.Errorf("rounds %d, want 2", res.Rounds)
					}
					tt.validate(t, res.Calls)
				})
			}
		})
	}
}

func TestPartialArtifactsOfAStreamAreReadOnlyAtTheEnd(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	res, err := client.Run(ctx(t), dial(t, env.AgentURL("script"), nil), textMessage("progress"), client.WithStreaming(true))
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	var names []string
	for _, a := range res.Artifacts() {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "partial,result" {
		t.Errorf("artifacts %v, want partial and result from the terminal task", names)
	}
}

// slowAgent asks for a name and then works until released.
type slowAgent struct {
	entered chan struct{}
	release chan struct{}
}

func (s *slowAgent) agent() askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{
				Text:   "What is your name?",
				Schema: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`),
			}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, _ *askpoint.Call, _ struct{}, a map[string]any) (askpoint.Outcome, error) {
			select {
			case s.entered <- struct{}{}:
			default:
			}
			select {
			case <-s.release:
			case <-ctx.Done():
				return askpoint.Outcome{}, ctx.Err()
			}
			return askpoint.Complete(&a2a.Artifact{Name: "result", Parts: a2a.ContentParts{a2a.NewTextPart(fmt.Sprintf("hello %v", a["name"]))}}), nil
		},
	}
}

func TestAConnectionCutInTheMiddleIsRecovered(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		setting askpoint.InputRequiredStreams
		stream  bool
	}{
		{"blocking", askpoint.CloseStreams, false},
		{"streaming/close", askpoint.CloseStreams, true},
		{"streaming/open", askpoint.KeepStreamsOpen, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			slow := &slowAgent{entered: make(chan struct{}, 1), release: make(chan struct{})}
			env := apitest.Start(t, apitest.Options{Quiet: true,
				Config: func(c *askpoint.Config) { c.InputRequiredStreams = tt.setting },
				Agents: []askpoint.AgentSpec{{Name: "slow", Agent: slow.agent(), Card: a2a.AgentCard{Name: "Slow", Description: "Works a while after the answer."}}},
			})
			var net severable
			c := dial(t, env.AgentURL("slow"), net.client())
			type outcome struct {
				res *client.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := client.Run(ctx(t), c, textMessage("hi"), client.WithStreaming(tt.stream), client.WithPollInterval(20*time.Millisecond),
					client.WithResolvers(client.Facts(map[string]any{"name": "Ada"})))
				done <- outcome{res, err}
			}()
			select {
			case <-slow.entered: // the answer was taken; the agent is working and the loop waits on a call
			case o := <-done:
				t.Fatalf("Run returned before the agent worked on the answer: %v", o.err)
			case <-time.After(20 * time.Second):
				t.Fatal("the agent never received the answer")
			}
			if n := net.sever(); n == 0 {
				t.Fatal("there was no connection to cut")
			}
			close(slow.release)
			var o outcome
			select {
			case o = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Run did not recover from the cut connection")
			}
			if o.err != nil {
				t.Fatalf("Run = %v (calls %v)", o.err, o.res.Calls)
			}
			if got := artifactText(o.res, "result"); got != "hello Ada" {
				t.Errorf("result %q, want hello Ada", got)
			}
			if o.res.Rounds != 1 {
				t.Errorf("rounds %d, want 1 (the answer was not sent twice)", o.res.Rounds)
			}
			if hist := userAnswers(t, o.res.Task); len(hist) != 1 {
				t.Errorf("the task took %d answers, want 1", len(hist))
			}
			t.Logf("calls: %v", o.res.Calls)
			recovered := count(o.res.Calls, "SubscribeToTask") + count(o.res.Calls, "GetTask")
			if recovered < 2 { // the recovery call plus the final read
				t.Errorf("calls %v: want a subscription or poll after the cut", o.res.Calls)
			}
		})
	}
}

func TestPolicyDeclineEndsTheTaskRejected(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	p, err := client.ParsePolicy([]byte(`{"rules":[{"name":"no-expenses","when":{"field":"costCentre"},"action":"decline","reason":"expenses go through finance"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := client.Run(ctx(t), dial(t, env.AgentURL("expense"), nil), textMessage(receipt), client.WithResolvers(p))
	var ended *client.EndedError
	if !errors.As(err, &ended) || !errors.Is(err, client.ErrNotCompleted) || ended.State != a2a.TaskStateRejected {
		t.Fatalf("Run = %v; want an EndedError, rejected", err)
	}
	if !strings.Contains(ended.Reason, "expenses go through finance") {
		t.Errorf("reason %q does not carry the policy's reason", ended.Reason)
	}
	if res.Artifacts() != nil {
		t.Errorf("a rejected task returned artifacts")
	}
	answers := userAnswers(t, res.Task)
	if len(answers) != 1 || dataOf(answers[0])["action"] != "decline" || answers[0].Metadata[client.MetaRule] != "no-expenses" {
		t.Errorf("history answers %s; want one decline action by rule no-expenses", dump(answers))
	}
}

func TestNoResolverLeavesTheTaskPaused(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	res, err := client.Run(ctx(t), dial(t, env.AgentURL("script"), nil), textMessage("ask"))
	if !errors.Is(err, client.ErrUnanswered) {
		t.Fatalf("Run = %v; want ErrUnanswered", err)
	}
	if res.State() != a2a.TaskStateInputRequired {
		t.Errorf("state %s, want input-required", res.State())
	}
}

func TestPolicyFileIsCheckedWhenLoaded(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ policy, mentions string }{
		{`{"rules":[{"when":{"field":"x"}}]}`, "neither an answer nor an action"},
		{`{"rules":[{"when":{"field":"x"},"answer":1,"action":"decline"}]}`, "both an answer and the action"},
		{`{"rules":[{"when":{"field":"x"},"action":"shrug"}]}`, `use "decline" or "cancel"`},
		{`{"rules":[{"when":{"field":"amount"},"answer":5}],"limits":{"fields":["costCentre"]}}`, "limits.fields does not allow"},
		{`{"rules":[{"answer":"x"}]}`, "for which field"},
		{`{"rules":[], "limit": {}}`, "unknown field"},
	} {
		_, err := client.ParsePolicy([]byte(tt.policy))
		if err == nil || !strings.Contains(err.Error(), tt.mentions) {
			t.Errorf("ParsePolicy(%s) = %v; want an error mentioning %q", tt.policy, err, tt.mentions)
		}
	}
}

func TestPolicyLimitsKeepAnswersWithinBounds(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","required":["amount"],"properties":{"amount":{"type":"number"}}}`)
	q := &client.Query{Question: &question.Question{ID: "q-1", Text: "How much?", Schema: schema}}
	for _, tt := range []struct {
		policy string
		want   any
	}{
		{`{"rules":[{"when":{"field":"amount"},"answer":80}],"limits":{"max":{"amount":100}}}`, int64(80)},
		{`{"rules":[{"when":{"field":"amount"},"answer":120}],"limits":{"max":{"amount":100}}}`, nil},
		{`{"rules":[{"when":{"field":"amount"},"answer":80}],"limits":{"optionsOnly":true}}`, nil},
	} {
		p, err := client.ParsePolicy([]byte(tt.policy))
		if err != nil {
			t.Fatal(err)
		}
		a, err := p.Resolve(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		var got any
		if a != nil {
			got = a.Fields["amount"]
		}
		if got != tt.want {
			t.Errorf("policy %s answered %v (%T), want %v", tt.policy, got, got, tt.want)
		}
	}
}

func TestAuthRequiredStopsTheLoopAndLeavesTheTaskPaused(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	res, err := client.Run(ctx(t), dial(t, env.AgentURL("script"), nil), textMessage("auth"), client.WithStreaming(true))
	if !errors.Is(err, client.ErrAuthRequired) || !strings.Contains(err.Error(), "Sign in to the calendar") {
		t.Fatalf("Run = %v; want ErrAuthRequired with the agent's words", err)
	}
	if res.State() != a2a.TaskStateAuthRequired {
		t.Errorf("state %s, want auth-required", res.State())
	}
}

func TestDeferringToAPersonLeavesNoGoroutineOfTheLoop(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) { c.InputRequiredStreams = askpoint.KeepStreamsOpen }})
	url := env.AgentURL("expense")
	ib := openInbox(t, "")
	_, err := client.Run(ctx(t), dial(t, url, nil), textMessage(receipt), client.WithStreaming(true),
		client.WithAgentURL(url), client.WithResolvers(inbox.Person{Inbox: ib}))
	if !errors.Is(err, client.ErrDeferred) {
		t.Fatalf("Run = %v; want ErrDeferred", err)
	}
	// The server kept the stream open, but the loop closed it and waited
	// for its reader before returning. (A reader that has just closed its
	// done channel may still be on its way out, and a goroutine's end is
	// no event one can wait on: look again every 10ms, for at most 2s.)
	buf := make([]byte, 1<<20)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(2 * time.Second)
	for {
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "askpoint/askpoint/client.") {
			return
		}
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("a goroutine of the loop outlived Run:\n%s", stacks)
		}
	}
}
