package relay_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
	"github.com/askpoint/askpoint/store/sqlite"
)

// charge is the answer the ledger agent asks for.
type charge struct {
	CostCentre string `json:"costCentre" jsonschema:"required"`
}

// ledgerAgent asks which cost centre to charge, then files the expense.
func ledgerAgent() askpoint.Agent {
	return askpoint.Steps[struct{}, charge]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			q := question.Question{Text: "Cost centre: CC-4410 or CC-4420?", Schema: question.MustSchemaFor[charge]()}
			return askpoint.Ask(q, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, c charge) (askpoint.Outcome, error) {
			return askpoint.Complete(&a2a.Artifact{ID: "filed", Parts: a2a.ContentParts{a2a.NewTextPart("Filed, charged to " + c.CostCentre + ".")}}), nil
		},
	}
}

// A relay in front of a sub-agent that asks: the caller gets the relay's
// own question, in the relay's words, and its answer travels down to the
// sub-agent's question. Both agents are served by one server here; the
// sub-agent could as well be anywhere else.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "relay-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "askpoint.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	base := "http://" + ln.Addr().String()

	assistant, err := relay.Agent(relay.Config{
		SubAgentURL:  base + "/ledger",
		SubAgentName: "the ledger",
		CallbackURL:  base + "/assistant", // where the ledger's push notifications wake the relay
		Restate: func(_ context.Context, _ *askpoint.Call, sub *question.Question) (question.Question, error) {
			return question.Question{Text: "Which budget should I charge, Engineering or Research?", Schema: sub.Schema,
				Options: []question.Option{{Value: "CC-4410", Label: "Engineering"}, {Value: "CC-4420", Label: "Research"}}}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The server allows push notifications to itself (a loopback address).
	srv, _ := askpoint.NewServer(askpoint.Config{Store: st, Logger: slog.New(slog.DiscardHandler), WebhookHosts: []string{ln.Addr().String()}})
	_ = srv.Register(askpoint.AgentSpec{Name: "ledger", Agent: ledgerAgent(), Card: a2a.AgentCard{Name: "Ledger", Description: "Files expenses."}})
	_ = srv.Register(askpoint.AgentSpec{Name: "assistant", Agent: assistant, Card: a2a.AgentCard{Name: "Assistant", Description: "Files expenses through the ledger."}})
	_ = srv.Start(ctx)
	defer srv.Stop(ctx)
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer hs.Close()

	c, err := client.Dial(ctx, base+"/assistant", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Destroy()
	task, err := sendTask(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt, 42 euros")))
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _, _ := question.FromMessage(task.Status.Message)
	fmt.Println(task.Status.State)
	fmt.Println(q.Text)

	answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Research")) // an option's label
	answer.TaskID = task.ID
	if task, err = sendTask(ctx, c, answer); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Status.State)
	fmt.Println(task.Artifacts[0].Parts[0].Content)
	// Output:
	// TASK_STATE_INPUT_REQUIRED
	// Which budget should I charge, Engineering or Research?
	// TASK_STATE_COMPLETED
	// Filed, charged to CC-4420.
}

// sendTask sends m and waits for the task to pause or finish.
func sendTask(ctx context.Context, c *a2aclient.Client, m *a2a.Message) (*a2a.Task, error) {
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		return nil, err
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		return nil, fmt.Errorf("the agent answered with a message, not a task")
	}
	return task, nil
}
