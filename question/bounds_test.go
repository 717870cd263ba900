package question_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/askpoint/askpoint/question"
)

// exponential is a chain of anyOf whose two branches each $ref the next
// level: validation work doubles per level (issue 23, finding 4).
func exponential(levels int) json.RawMessage {
	var defs []string
	for i := range levels {
		defs = append(defs, fmt.Sprintf(`"l%d":{"anyOf":[{"$ref":"#/$defs/l%d"},{"$ref":"#/$defs/l%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"l%d":{"type":"string","minLength":1000}`, levels))
	return json.RawMessage(`{"type":"object","properties":{"x":{"$ref":"#/$defs/l0"}},"$defs":{` + strings.Join(defs, ",") + `}}`)
}

func TestAnswerSchemasThatWouldCostTooMuchAreRefusedAtCompileTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		schema json.RawMessage
		want   string
	}{
		{"exponential anyOf/$ref chain", exponential(18), "evaluations per value"},
		{"too many $refs", refs(question.MaxSchemaRefs + 1), "$ref keywords"},
		{"too many subschemas", props(question.MaxSubschemas + 1), "subschemas"},
		{"too large", json.RawMessage(`{"type":"object","description":"` + strings.Repeat("x", question.MaxSchemaBytes) + `"}`), "bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := question.Question{Text: "Which?", Schema: tc.schema}
			err := q.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check() = %v; want an error naming %q", err, tc.want)
			}
			// Validation refuses at once too, instead of running.
			if errs := q.Validate(json.RawMessage(`{"x":"short"}`)); len(errs) != 1 || !strings.Contains(errs[0].Message, "broken") {
				t.Errorf("Validate() = %v; want the broken-schema error", errs)
			}
		})
	}
	// Ordinary schemas, recursive ones included, pass.
	for _, s := range []string{
		`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`,
		`{"type":"object","properties":{"tree":{"$ref":"#/$defs/node"}},"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}}}`,
		string(exponential(6)),
	} {
		q := question.Question{Text: "Which?", Schema: json.RawMessage(s)}
		if err := q.Check(); err != nil {
			t.Errorf("Check(%s) = %v, want nil", s, err)
		}
	}
}

func refs(n int) json.RawMessage {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/s"}`, i))
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(ps, ",") + `},"$defs":{"s":{"type":"string"}}}`)
}

func props(n int) json.RawMessage {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf(`"p%d":{"type":"string"}`, i))
	}
	return json.RawMessage(`{"type":"object","properties":{` + strings.Join(ps, ",") + `}}`)
}
