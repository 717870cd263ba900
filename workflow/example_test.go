package workflow_test

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
	"github.com/askpoint/askpoint/store/sqlite"
	"github.com/askpoint/askpoint/workflow"
)

// goAhead is the answer the booker asks for.
type goAhead struct {
	Book bool `json:"book" jsonschema:"required"`
}

// booker asks before it books, and says what it did.
func booker() askpoint.Agent {
	return askpoint.Steps[struct{}, goAhead]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			q := question.Question{Text: "Shall I book the 9:40 train to Lyon?", Schema: question.MustSchemaFor[goAhead]()}
			return askpoint.Ask(q, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, a goAhead) (askpoint.Outcome, error) {
			reply := "Nothing booked."
			if a.Book {
				reply = "Booked the 9:40 train."
			}
			return askpoint.Complete(&a2a.Artifact{ID: "booking", Parts: a2a.ContentParts{a2a.NewTextPart(reply)}}), nil
		},
	}
}

// announcer passes on what it is told.
func announcer() askpoint.Agent {
	return askpoint.Steps[struct{}, struct{}]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			told := fmt.Sprint(call.Request.Parts[0].Content)
			return askpoint.Complete(&a2a.Artifact{ID: "news", Parts: a2a.ContentParts{a2a.NewTextPart("Told the team: " + told)}}), nil
		},
	}
}

// A sequential workflow whose first participant asks: the run suspends
// with one request to its caller, saying who asks, and goes on with the
// next participant only once the caller's answer has reached the one that
// asked.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "workflow-example")
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

	trip, err := workflow.Agent(workflow.Config{
		Mode: workflow.Sequential,
		Participants: []workflow.Participant{
			{Name: "booker", URL: base + "/booker"},
			{Name: "announcer", URL: base + "/announcer"},
		},
		CallbackURL: base + "/trip", // where the participants' push notifications wake the run
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The server allows push notifications to itself (a loopback address).
	srv, _ := askpoint.NewServer(askpoint.Config{Store: st, Logger: slog.New(slog.DiscardHandler), WebhookHosts: []string{ln.Addr().String()}})
	_ = srv.Register(askpoint.AgentSpec{Name: "booker", Agent: booker(), Card: a2a.AgentCard{Name: "Booker", Description: "Books trains."}})
	_ = srv.Register(askpoint.AgentSpec{Name: "announcer", Agent: announcer(), Card: a2a.AgentCard{Name: "Announcer", Description: "Tells the team."}})
	_ = srv.Register(askpoint.AgentSpec{Name: "trip", Agent: trip, Card: a2a.AgentCard{Name: "Trip", Description: "Books, then tells the team."}})
	_ = srv.Start(ctx)
	defer srv.Stop(ctx)
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	defer hs.Close()

	c, err := client.Dial(ctx, base+"/trip", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Destroy()
	task, err := sendTask(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Get me to Lyon on Monday")))
	if err != nil {
		fmt.Println(err)
		return
	}
	q, _, _ := question.FromMessage(task.Status.Message)
	fmt.Println(task.Status.State)
	fmt.Println(q.Text)
	fmt.Println("about:", q.About[workflow.AboutParticipant])

	answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("yes"))
	answer.TaskID = task.ID
	if task, err = sendTask(ctx, c, answer); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(task.Status.State)
	fmt.Print(task.Artifacts[0].Parts[0].Content) // the transcript, a line per turn
	// Output:
	// TASK_STATE_INPUT_REQUIRED
	// booker asks: "Shall I book the 9:40 train to Lyon?"
	// about: booker
	// TASK_STATE_COMPLETED
	// caller: "Get me to Lyon on Monday"
	// booker: "Booked the 9:40 train."
	// announcer: "Told the team: Booked the 9:40 train."
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
