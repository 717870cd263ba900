package mcpbridge_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// rooms is what the rooms agent's question asks for.
type rooms struct {
	Days  []string `json:"days"`
	Rooms []int    `json:"rooms"`
	View  string   `json:"view"`
}

// roomsAgent asks for days (an untitled multi-choice), rooms (a titled
// multi-choice of integers) and a view (an untitled single choice), and
// completes with what it received, as a data part.
func roomsAgent() askpoint.AgentSpec {
	schema := json.RawMessage(`{"type":"object","required":["days","rooms","view"],"properties":{
		"days":{"type":"array","items":{"type":"string","enum":["mon","tue","wed"]},"minItems":1,"maxItems":2},
		"rooms":{"type":"array","items":{"anyOf":[{"const":1,"title":"Single"},{"const":2,"title":"Double"}]}},
		"view":{"type":"string","enum":["sea","city"]}}}`)
	return askpoint.AgentSpec{Name: "rooms", Card: a2a.AgentCard{Name: "Rooms", Description: "Books rooms."},
		Agent: askpoint.Steps[struct{}, rooms]{
			OnStart: func(context.Context, *askpoint.Call) (askpoint.Outcome, error) {
				return askpoint.Ask(question.Question{Text: "Which days, rooms and view?", Schema: schema}, struct{}{}), nil
			},
			OnAnswer: func(_ context.Context, _ *askpoint.Call, _ struct{}, got rooms) (askpoint.Outcome, error) {
				return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(), Name: "booking", Parts: a2a.ContentParts{a2a.NewDataPart(map[string]any{"days": got.Days, "rooms": got.Rooms, "view": got.View})}}), nil
			},
		}}
}

// Over real HTTP with the go-sdk client's own retry loop: a multi-choice
// is a multi-select (untitled as items.enum, titled as items.anyOf), an
// untitled single choice an enum; the picks reach the agent typed (the
// rooms as integers).
func TestMultiChoiceAndUntitledEnumRoundTrip(t *testing.T) {
	r := newRig(t, nil, roomsAgent())
	var asked []*mcp.ElicitParams
	answers := []map[string]any{
		{"days": []any{"tue", "wed"}, "rooms": []any{"2", "1"}, "view": "sea"},
	}
	cs := r.connect(t, "alice", "", func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params)
		a := answers[0]
		answers = answers[1:]
		return &mcp.ElicitResult{Action: "accept", Content: a}, nil
	})
	res := call(t, cs, "rooms", "two nights")
	if res.IsError || len(asked) != 1 {
		t.Fatalf("result %s after %d forms, want the booking after one", dump(res), len(asked))
	}
	props := properties(t, asked[0])["properties"].(map[string]any)
	for name, want := range map[string]string{
		"days":  `{"items":{"enum":["mon","tue","wed"],"type":"string"},"maxItems":2,"minItems":1,"title":"Days","type":"array"}`,
		"rooms": `{"items":{"anyOf":[{"const":"1","title":"Single"},{"const":"2","title":"Double"}]},"title":"Rooms","type":"array"}`,
		"view":  `{"enum":["sea","city"],"title":"View","type":"string"}`,
	} {
		if got := dump(props[name]); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	if got := dump(res.StructuredContent); got != `{"days":["tue","wed"],"rooms":[2,1],"view":"sea"}` {
		t.Errorf("the agent received %s", got)
	}
}

// A call without arguments (an MCP tool may take none) sends the agent
// one empty data part, and the agent asks for what it needs.
func TestACallWithoutArgumentsSendsAnEmptyDataPart(t *testing.T) {
	r := newRig(t, nil, roomsAgent())
	cs := r.connect(t, "alice", "", nil)
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "rooms", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	form(t, res)
	task := r.task(t, "rooms", res.Meta["dev.askpoint/taskId"])
	first := task.History[0]
	if len(first.Parts) != 1 || dump(first.Parts[0].Data()) != `{}` {
		t.Errorf("the first message is %s; want one empty data part", dump(first))
	}
}
