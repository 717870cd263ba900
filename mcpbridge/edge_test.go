package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// nested asks a question whose answer is an object inside the answer.
func nested() askpoint.AgentSpec {
	schema := json.RawMessage(`{"type":"object","required":["trip"],"properties":{"trip":{"type":"object","properties":{"city":{"type":"string"}}}}}`)
	return askpoint.AgentSpec{Name: "nested", Card: a2a.AgentCard{Name: "Nested", Description: "Asks for an object."},
		Agent: askpoint.Steps[struct{}, map[string]any]{
			OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Which trip?", Schema: schema}, struct{}{}), nil
			},
			OnAnswer: func(context.Context, *askpoint.Call, struct{}, map[string]any) (askpoint.Outcome, error) {
				return askpoint.Complete(), nil
			},
		}}
}

// A question MCP's flat forms cannot express is refused in words that
// name the field and why; the task waits at the agent, untouched.
func TestANestedQuestionIsRefusedClearly(t *testing.T) {
	r := newRig(t, nil, nested())
	cs := r.connect(t, "alice", "", nil)
	res := call(t, cs, "nested", "go")
	if !res.IsError || res.NeedsInput() {
		t.Fatalf("result %s, want a tool error", dump(res))
	}
	for _, w := range []string{`field "trip" is of type object`, "cannot be asked here", "stays paused", "askpoint send --task"} {
		if !strings.Contains(text(res), w) {
			t.Errorf("%q does not say %q", text(res), w)
		}
	}
	if task := r.task(t, "nested", res.Meta["dev.askpoint/taskId"]); task.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("task is %s, want it still waiting", task.Status.State)
	}
}

// A client of revision 2025-11-25 has no multi round-trip requests: it
// is asked each form with elicitation/create, the answers go to the
// agent, and the call returns the result. A client of 2025-06-18 reads a
// choice's titles from enumNames.
func TestAnOlderClientIsAskedWithElicitationCreate(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			r := newRig(t, nil)
			var (
				messages []string
				first    map[string]any // the city's property, as this client was asked it
			)
			answers := []map[string]any{{"answer": "Oslo"}, {"start": "2027-06-01", "end": "2027-06-03", "travellers": 1}, {"answer": "true"}}
			cs := r.connect(t, "alice", version, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				if messages == nil {
					raw, _ := json.Marshal(req.Params.RequestedSchema)
					var schema struct {
						Properties map[string]map[string]any `json:"properties"`
					}
					if err := json.Unmarshal(raw, &schema); err != nil {
						t.Errorf("requestedSchema %s: %v", raw, err)
					}
					first = schema.Properties["answer"]
				}
				messages = append(messages, req.Params.Message)
				a := answers[0]
				answers = answers[1:]
				return &mcp.ElicitResult{Action: "accept", Content: a}, nil
			})
			if v := cs.InitializeResult().ProtocolVersion; v != version {
				t.Fatalf("negotiated %s, want %s", v, version)
			}
			res := call(t, cs, "travel", "A trip")
			if res.IsError || text(res) != "Booked Oslo: TRV-001" {
				t.Fatalf("result %s", dump(res))
			}
			if len(messages) != 3 || !strings.Contains(messages[2], "Book Oslo") {
				t.Errorf("asked %q, want the three questions", messages)
			}
			// The labelled cities as this revision says a titled choice:
			// oneOf const/title from 2025-11-25 (SEP-1330), enum with
			// enumNames before it.
			got, _ := json.Marshal(first)
			want := `"oneOf":[{"const":"Lisbon","title":"Lisbon, Portugal"}`
			if version < "2025-11-25" {
				want = `"enum":["Lisbon","Oslo","Rome","Kyoto"],"enumNames":["Lisbon, Portugal","Oslo, Norway","Rome, Italy","Kyoto, Japan"]`
			}
			if !strings.Contains(string(got), want) || (version < "2025-11-25") == strings.Contains(string(got), "oneOf") {
				t.Errorf("the city was asked as %s; want it with %s", got, want)
			}
		})
	}
}

// A cancel goes to the agent as askpoint's cancel action.
func TestCancelIsTheCancelAction(t *testing.T) {
	r := newRig(t, nil)
	cs, res, _ := pending(t, r)
	key, _ := form(t, res)
	done, err := retry(t, cs, "expense_agent", mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "cancel"}}, res.RequestState)
	if err != nil {
		t.Fatal(err)
	}
	if !done.IsError || !strings.Contains(text(done), "The task ended") {
		t.Errorf("result %s, want the task's end as a tool error", dump(done))
	}
	task := r.task(t, "expense", res.Meta["dev.askpoint/taskId"])
	if !task.Status.State.Terminal() {
		t.Fatalf("task is %s, want it ended", task.Status.State)
	}
	last := task.History[len(task.History)-1]
	for _, m := range task.History {
		if m.Role == a2a.MessageRoleUser {
			last = m
		}
	}
	if !strings.Contains(dump(last.Parts), `"action":"cancel"`) {
		t.Errorf("the last answer %s is not a cancel", dump(last.Parts))
	}
}

// An agent that is down is a tool error that says so; nothing hangs.
func TestAnAgentThatIsDownIsAToolError(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "alice", "", nil)
	r.env.Stop()
	res := call(t, cs, "expense_agent", "File my taxi receipt")
	if !res.IsError || !strings.Contains(text(res), "cannot be reached") || !strings.Contains(text(res), r.env.AgentURL("expense")) {
		t.Errorf("result %s, want a tool error naming the agent's URL", dump(res))
	}
}
