package question_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

func textMsg(s string) *a2a.Message { return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(s)) }

func TestTextAnswersMapToOptionsOfEveryType(t *testing.T) {
	cases := []struct {
		name   string
		schema string
		opts   []question.Option
		text   string
		want   string // the answer's fields, "" for a refusal
		errHas string
	}{
		{"number by value", `{"type":"object","required":["seats"],"properties":{"seats":{"type":"integer"}}}`,
			[]question.Option{{Value: 1, Label: "One seat"}, {Value: 2, Label: "Two seats"}}, "2", `{"seats":2}`, ""},
		{"number by label", `{"type":"object","required":["seats"],"properties":{"seats":{"type":"integer"}}}`,
			[]question.Option{{Value: 1, Label: "One seat"}, {Value: 2, Label: "Two seats"}}, "two seats", `{"seats":2}`, ""},
		{"object by label", `{"type":"object","required":["slot"],"properties":{"slot":{"type":"object"}}}`,
			[]question.Option{{Value: map[string]any{"day": "mon"}, Label: "Monday"}, {Value: map[string]any{"day": "tue"}, Label: "Tuesday"}}, "Tuesday", `{"slot":{"day":"tue"}}`, ""},
		{"label prefix", `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`,
			[]question.Option{{Value: true, Label: "Yes, pay"}, {Value: false, Label: "No, hold it"}}, "no", `{"ok":false}`, ""},
		{"ambiguous prefix", `{"type":"object","required":["c"],"properties":{"c":{"type":"string"}}}`,
			[]question.Option{{Value: "a", Label: "Pay now"}, {Value: "b", Label: "Pay later"}}, "pay", "", "more than one option"},
		{"boolean without options", `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`,
			nil, "Yes", `{"ok":true}`, ""},
		{"number without options", `{"type":"object","required":["n"],"properties":{"n":{"type":"number"}}}`,
			nil, "12.5", `{"n":12.5}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &question.Question{ID: "q-1", Text: "?", Schema: json.RawMessage(tc.schema), Options: tc.opts}
			if err := q.Check(); err != nil {
				t.Fatalf("Check: %v", err)
			}
			a, errs, err := question.Parse(textMsg(tc.text), q, 0)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if len(errs) == 0 || !strings.Contains(errs[0].Message, tc.errHas) {
					t.Fatalf("errors %+v, want one saying %q", errs, tc.errHas)
				}
				return
			}
			if len(errs) > 0 || string(a.Fields) != tc.want {
				t.Fatalf("answer %s (errors %+v), want %s", a.Fields, errs, tc.want)
			}
		})
	}
}

func TestOptionsOfAQuestionWithSeveralFieldsNameTheirField(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","required":["approve","reason"],"properties":{"approve":{"type":"boolean"},"reason":{"type":"string"}}}`)
	opts := []question.Option{{Value: true, Label: "Yes"}, {Value: false, Label: "No"}}
	if err := (&question.Question{Text: "?", Schema: schema, Options: opts}).Check(); err == nil || !strings.Contains(err.Error(), "OptionsFor") {
		t.Fatalf("options without their field: err = %v, want one pointing at OptionsFor", err)
	}
	if err := (&question.Question{Text: "?", Schema: schema, Options: opts, OptionsFor: "nope"}).Check(); err == nil {
		t.Fatal("options for a field the schema does not have were accepted")
	}
	q := &question.Question{ID: "q-1", Text: "?", Schema: schema, Options: opts, OptionsFor: "approve"}
	if err := q.Check(); err != nil {
		t.Fatal(err)
	}
	if errs := q.Validate(json.RawMessage(`{"approve":1,"reason":"x"}`)); len(errs) != 1 || errs[0].Pointer != "/approve" {
		t.Fatalf("a value outside the options: %+v, want one error at /approve", errs)
	}
	back, ok, err := question.FromMessage(q.Message())
	if !ok || err != nil || back.OptionsFor != "approve" || back.Options[0].Value != true {
		t.Fatalf("round trip over the wire: %+v (%v)", back, err)
	}
}
