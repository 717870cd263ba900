package question_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// The answer the worked example's expense agent asks for.
type costCentre struct {
	CostCentre string `json:"costCentre" jsonschema:"required,pattern=^CC-[0-9]{4}$,description=The cost centre to charge"`
}

// costCentreQuestion is the question the examples ask: one field, two
// options, a fixed ID and expiry (the runtime fills both in when an agent
// leaves them empty).
func costCentreQuestion() *question.Question {
	return &question.Question{
		ID:          "q-1",
		Text:        "Which cost centre should this expense be charged to?",
		Expires:     time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
		Schema:      question.MustSchemaFor[costCentre](),
		Options:     []question.Option{{Value: "CC-4410", Label: "Engineering"}, {Value: "CC-4420", Label: "Research"}},
		MaxAttempts: 3,
	}
}

// A question is a status message with a text part for a person and a data
// part for a machine; Check is what the runtime runs before it asks.
func ExampleQuestion_Message() {
	q := costCentreQuestion()
	if err := q.Check(); err != nil {
		fmt.Println(err)
		return
	}
	m := q.Message()
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			fmt.Println("text:", c)
		case a2a.Data:
			v := c.Value.(map[string]any)
			fmt.Println("data:", v["questionId"], v["expires"], v["options"])
		}
	}
	fmt.Println("extension:", m.Extensions[0])
	// Output:
	// text: Which cost centre should this expense be charged to?
	// data: q-1 2026-12-02T09:00:00Z [map[label:Engineering value:CC-4410] map[label:Research value:CC-4420]]
	// extension: https://askpoint.dev/ext/question/v1
}

// Parse reads an answer message against the open question: a data part
// that names the question, or text that names exactly one option (by its
// value or its label). Decode turns a valid answer into the answer type.
func ExampleParse() {
	q := costCentreQuestion()
	for _, m := range []*a2a.Message{
		a2a.NewMessage(a2a.MessageRoleUser, a2a.NewDataPart(map[string]any{"questionId": "q-1", "costCentre": "CC-4410"})),
		a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("research")),
	} {
		ans, errs, err := question.Parse(m, q, 0)
		if err != nil || len(errs) > 0 {
			fmt.Println(err, errs)
			continue
		}
		cc, err := question.Decode[costCentre](ans)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s (from text: %v)\n", cc.CostCentre, ans.FromText)
	}
	// Output:
	// CC-4410 (from text: false)
	// CC-4420 (from text: true)
}

// An answer that is not accepted gets its errors, with JSON pointers into
// the answer, and the re-ask carries them with the next attempt.
func ExampleQuestion_ReAsk() {
	q := costCentreQuestion()
	_, errs, err := question.Parse(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("engineering dept")), q, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	printErrors(errs)
	// The same check on a data answer: a field the schema lacks, a missing one.
	printErrors(q.Validate(json.RawMessage(`{"costCentre": "CC-4410", "note": "taxi"}`)))
	printErrors(q.Validate(json.RawMessage(`{}`)))
	next := q.ReAsk("q-2", errs)
	fmt.Println(next.ID, "attempt", next.Attempt, "of", next.MaxAttempts)
	fmt.Println(next.Notice())
	// Output:
	// error at "/costCentre": expected one of CC-4410, CC-4420
	// error at "/note": unexpected field note
	// error at "/costCentre": missing required field costCentre
	// q-2 attempt 2 of 3
	// That answer was not accepted: expected one of CC-4410, CC-4420. (attempt 2 of 3)
}

func printErrors(errs []question.FieldError) {
	for _, e := range errs {
		fmt.Printf("error at %q: %s\n", e.Pointer, e.Message)
	}
}

// SchemaFor derives the answer schema from the Go type the answer decodes
// into, so the two cannot disagree. A comma inside a tag's value is
// written \\, in the struct tag.
func ExampleSchemaFor() {
	type approval struct {
		Approve bool   `json:"approve" jsonschema:"required,description=Pay the invoice?"`
		Reason  string `json:"reason,omitempty" jsonschema:"maxLength=200,description=Why\\, in a sentence"`
	}
	schema, err := question.SchemaFor[approval]()
	if err != nil {
		fmt.Println(err)
		return
	}
	var pretty map[string]any
	_ = json.Unmarshal(schema, &pretty)
	out, _ := json.MarshalIndent(pretty, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "additionalProperties": false,
	//   "properties": {
	//     "approve": {
	//       "description": "Pay the invoice?",
	//       "type": "boolean"
	//     },
	//     "reason": {
	//       "description": "Why, in a sentence",
	//       "maxLength": 200,
	//       "type": "string"
	//     }
	//   },
	//   "required": [
	//     "approve"
	//   ],
	//   "type": "object"
	// }
}
