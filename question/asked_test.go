package question_test

import (
	"encoding/json"
	"testing"

	"github.com/askpoint/askpoint/question"
)

func TestAskedDropsFieldsTheSchemaDoesNotName(t *testing.T) {
	q := &question.Question{Text: "Which?", Schema: json.RawMessage(`{"type":"object","properties":{"costCentre":{"type":"string"},"note":{"type":"string"}}}`)}
	for _, c := range []struct{ in, want string }{
		{`{"costCentre":"CC-4410"}`, `{"costCentre":"CC-4410"}`},
		{`{"costCentre":"CC-4410","amount":0.01,"vendor":"<B>XXX</B>"}`, `{"costCentre":"CC-4410"}`},
		{`{"note":"n","date":"not-a-date"}`, `{"note":"n"}`},
		{`[1,2]`, `[1,2]`},
	} {
		got := q.Asked(json.RawMessage(c.in))
		if string(got) != c.want {
			t.Errorf("Asked(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	open := &question.Question{Text: "Anything?", Schema: json.RawMessage(`{"type":"object"}`)}
	if got := open.Asked(json.RawMessage(`{"x":1}`)); string(got) != `{"x":1}` {
		t.Errorf("a schema naming no properties: Asked = %s, want every field kept", got)
	}
}
