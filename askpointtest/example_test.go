package askpointtest_test

import (
	"context"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/question"
)

type order struct{ Item string }

type size struct {
	Size string `json:"size" jsonschema:"required,enum=S|M|L"`
}

// shop asks which size, then takes the order.
var shop = askpoint.Steps[order, size]{
	OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
		return askpoint.Ask(question.Question{Text: "Which size: S, M or L?", Schema: question.MustSchemaFor[size]()}, order{Item: "shirt"}), nil
	},
	OnAnswer: func(ctx context.Context, call *askpoint.Call, o order, a size) (askpoint.Outcome, error) {
		return askpoint.Complete(&a2a.Artifact{ID: "order", Parts: a2a.ContentParts{a2a.NewTextPart(o.Item + ", size " + a.Size)}}), nil
	},
}

// An agent served on a real server (a SQLite file, the A2A bindings on
// 127.0.0.1), asked, answered and read back. In a test, askpointtest.Start(t,
// ...) does what Open does and stops the server when the test ends.
func ExampleOpen() {
	env, err := askpointtest.Open(askpointtest.Options{}, askpoint.AgentSpec{Name: "shop", Agent: shop,
		Card: a2a.AgentCard{Name: "Shop", Description: "Takes orders."}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Close()
	ctx := context.Background()
	c, err := env.Dial(ctx, "shop")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Destroy()

	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("a shirt"))})
	if err != nil {
		fmt.Println(err)
		return
	}
	task := res.(*a2a.Task)
	q, _, _ := question.FromMessage(task.Status.Message)
	fmt.Println(task.Status.State, q.Text)

	answer := a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewDataPart(map[string]any{"questionId": q.ID, "size": "M"}))
	if res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: answer}); err != nil {
		fmt.Println(err)
		return
	}
	task = res.(*a2a.Task)
	fmt.Println(task.Status.State, task.Artifacts[0].Parts[0].Text())
	// Output:
	// TASK_STATE_INPUT_REQUIRED Which size: S, M or L?
	// TASK_STATE_COMPLETED shirt, size M
}
