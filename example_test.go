package askpoint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store/sqlite"
)

// The checkpoint a greeter saves while it asks, and the answer it asks for.
type greeting struct{ Request string }
type name struct {
	Name string `json:"name" jsonschema:"required,description=Your name"`
}

// greeter asks for a name and then greets: the smallest agent that pauses.
func greeter() askpoint.Agent {
	return askpoint.Steps[greeting, name]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{
				Text:   "What is your name?",
				Schema: question.MustSchemaFor[name](),
			}, greeting{Request: "greet"}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp greeting, a name) (askpoint.Outcome, error) {
			return askpoint.Complete(&a2a.Artifact{ID: "greeting", Parts: a2a.ContentParts{a2a.NewTextPart("Hello, " + a.Name + "!")}}), nil
		},
	}
}

// An agent that asks one question, served on a SQLite file with all three
// A2A bindings on one port (Serve), asked and answered by the caller's
// loop.
func Example() {
	dir, _ := os.MkdirTemp("", "askpoint-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "askpoint.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	srv, _ := askpoint.NewServer(askpoint.Config{Store: st, Logger: slog.New(slog.DiscardHandler)})
	_ = srv.Register(askpoint.AgentSpec{Name: "greeter", Agent: greeter(),
		Card: a2a.AgentCard{Name: "Greeter", Description: "Asks your name, then greets you."}})

	ln, err := net.Listen("tcp", "127.0.0.1:0") // ListenAndServe(ctx, "127.0.0.1:8420") in a program
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }() // until ctx ends; then a graceful stop
	defer func() { stop(); <-served }()

	c, err := client.Dial(ctx, "http://"+ln.Addr().String()+"/greeter", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Destroy()
	facts := client.Facts(map[string]any{"name": "Ada"}) // answers from what the caller knows
	res, err := client.Run(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Greet me")), client.WithResolvers(facts))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.State())
	for _, a := range res.Task.Artifacts {
		for _, p := range a.Parts {
			if t, ok := p.Content.(a2a.Text); ok {
				fmt.Println(t)
			}
		}
	}
	// Output:
	// TASK_STATE_COMPLETED
	// Hello, Ada!
}

// A question's schema derived from the answer type, so that what is asked
// and what OnAnswer decodes cannot disagree.
func ExampleAsk() {
	q := question.Question{Text: "What is your name?", Schema: question.MustSchemaFor[name]()}
	var schema map[string]any
	_ = json.Unmarshal(q.Schema, &schema)
	fmt.Println(schema["required"], schema["type"])
	// Output: [name] object
}
