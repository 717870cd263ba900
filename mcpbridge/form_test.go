package mcpbridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/question"
)

// Each kind of field is its MCP form property: captions, bounds, formats,
// lengths, defaults and required fields kept; what a form cannot say (a
// pattern, an exclusive bound of a number) said in the field's rules in
// words, never as a regular expression.
func TestFormOfEveryKindOfField(t *testing.T) {
	q := &question.Question{ID: "q1", Text: "Tell me", Schema: json.RawMessage(`{"type":"object",
		"required":["when","count","mood"],
		"properties":{
			"when":{"type":"string","format":"date","title":"Day"},
			"at":{"type":"string","format":"date-time"},
			"mail":{"type":"string","format":"email","default":"a@b.c"},
			"code":{"type":"string","pattern":"^CC-[0-9]{4}$","minLength":7,"maxLength":7,"description":"a cost centre"},
			"count":{"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10,"default":2},
			"amount":{"type":["number","null"],"exclusiveMinimum":0,"maximum":500},
			"ok":{"type":"boolean","default":true},
			"mood":{"type":"string","enum":["good","bad"],"default":"bad"},
			"size":{"oneOf":[{"const":1,"title":"Small"},{"const":2,"title":"Large"}]}
		}}`)}
	f, err := formOf(q)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(f.schema)
	want := `{"properties":{` +
		`"amount":{"description":"a number, at most 500, more than 0","maximum":500,"minimum":0,"title":"Amount","type":"number"},` +
		`"at":{"format":"date-time","title":"At","type":"string"},` +
		`"code":{"description":"a cost centre; 7 to 7 characters","maxLength":7,"minLength":7,"title":"Code","type":"string"},` +
		`"count":{"default":2,"maximum":9,"minimum":1,"title":"Count","type":"integer"},` +
		`"mail":{"default":"a@b.c","format":"email","title":"Mail","type":"string"},` +
		`"mood":{"default":"bad","enum":["good","bad"],"title":"Mood","type":"string"},` +
		`"ok":{"default":true,"title":"Ok","type":"boolean"},` +
		`"size":{"oneOf":[{"const":"1","title":"Small"},{"const":"2","title":"Large"}],"title":"Size","type":"string"},` +
		`"when":{"format":"date","title":"Day","type":"string"}},` +
		`"required":["when","count","mood"],"type":"object"}`
	if string(got) != want {
		t.Errorf("schema\n got %s\nwant %s", got, want)
	}
	// A choice comes back as the option's value, whatever its type.
	fields, _, errs := f.read(map[string]any{"when": "2027-01-02", "count": 3.0, "mood": "good", "size": "2", "code": ""})
	if len(errs) > 0 || fields["size"] != 2.0 || fields["mood"] != "good" {
		t.Errorf("fields %v, errors %v", fields, errs)
	}
	if _, has := fields["code"]; has {
		t.Errorf("an empty optional field was kept: %v", fields)
	}
	// What the form cannot say, the question's own check refuses.
	fields, _, _ = f.read(map[string]any{"when": "2027-01-02", "count": 3.0, "mood": "good", "code": "CC-12", "amount": 0.0})
	raw, _ := json.Marshal(fields)
	errs = q.Validate(raw)
	if s := question.ErrorsText(errs); !strings.Contains(s, "code") || !strings.Contains(s, "amount") {
		t.Errorf("errors %q, want the pattern and the exclusive bound", s)
	}
	if s := question.ErrorsText(f.explain(errs)); strings.Contains(s, "^CC-") || !strings.Contains(s, "not in the expected format (a cost centre)") {
		t.Errorf("errors %q, want the pattern in words", s)
	}
}

func TestFormRefusesWhatIsNotFlat(t *testing.T) {
	for schema, why := range map[string]string{
		`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"}}}}`: `field "tags" is of type array`,
		`{"type":"object","properties":{"x":{"type":["string","number"]}}}`:                  `field "x" is of type string or number`,
		`{"type":"object","properties":{"x":{}}}`:                                            `field "x" is of no single type`,
		`{"type":"object"}`: "names no fields",
	} {
		_, err := formOf(&question.Question{ID: "q", Schema: json.RawMessage(schema)})
		if !errors.Is(err, ErrNotAForm) || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: %v, want ErrNotAForm saying %q", schema, err, why)
		}
	}
}

// A question in words only is one required text field.
func TestFormOfAQuestionInWords(t *testing.T) {
	f, err := formOf(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(f.schema); string(got) != `{"properties":{"answer":{"title":"Answer","type":"string"}},"required":["answer"],"type":"object"}` {
		t.Errorf("schema %s", got)
	}
	if _, text, errs := f.read(map[string]any{"answer": "Tuesday"}); text != "Tuesday" || len(errs) > 0 {
		t.Errorf("text %q, errors %v", text, errs)
	}
}

// An elicitation is a question whose schema is the requestedSchema as
// given: a legacy titled enum's enumNames label its options, the one
// choice field's options are the question's; what is not MCP's flat
// subset, and URL mode, are refused by name.
func TestQuestionOfAnElicitation(t *testing.T) {
	q, err := QuestionOf(&mcp.ElicitParams{Mode: "form", Message: "Which size?", RequestedSchema: map[string]any{
		"type": "object", "required": []any{"size"}, "properties": map[string]any{
			"size":  map[string]any{"type": "string", "enum": []any{"s", "l"}, "enumNames": []any{"Small", "Large"}},
			"count": map[string]any{"type": "integer", "minimum": 1},
		}}})
	if err != nil {
		t.Fatal(err)
	}
	if q.Text != "Which size?" || q.OptionsFor != "size" || len(q.Options) != 2 || q.Options[1].Label != "Large" || q.ID != "" {
		t.Errorf("question %+v; want the message, the size's labelled options and no ID", q)
	}
	multi, err := QuestionOf(&mcp.ElicitParams{Message: "Which days?", RequestedSchema: map[string]any{
		"type": "object", "properties": map[string]any{
			"days": map[string]any{"type": "array", "items": map[string]any{"anyOf": []any{
				map[string]any{"const": "mon", "title": "Monday"}, map[string]any{"const": "tue", "title": "Tuesday"}}}},
		}}})
	if err != nil {
		t.Fatalf("a multi-select: %v", err)
	}
	if fs := multi.Fields(); len(fs) != 1 || len(fs[0].Items) != 2 || fs[0].Items[1].Label != "Tuesday" {
		t.Errorf("fields %+v, want days with its two labelled items", fs)
	}
	for _, c := range []struct {
		p    *mcp.ElicitParams
		want error
		says string
	}{
		{&mcp.ElicitParams{Message: "Pick", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{
			"tags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}}, ErrNotAForm, `field "tags" is of type array`},
		{&mcp.ElicitParams{Message: "Pick", RequestedSchema: map[string]any{"type": "string"}}, ErrNotAForm, "not an object schema"},
		{&mcp.ElicitParams{Message: "", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}}, ErrNotAForm, "no message"},
		{&mcp.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://x.example/"}, ErrNotForm, "URL mode"},
	} {
		_, err := QuestionOf(c.p)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("QuestionOf(%+v) = %v; want %v saying %q", c.p, err, c.want, c.says)
		}
	}
}

// An option set without labels of its own is an untitled enum, "enum" and
// nothing else; one with labels is oneOf const/title, a title for every
// option (MCP 2025-11-25's enum schemas, SEP-1330). A label that is the
// value itself is no label.
func TestUntitledEnumsAreEnumsAndTitledOnesOneOf(t *testing.T) {
	q := &question.Question{ID: "q", Text: "Pick", Schema: json.RawMessage(`{"type":"object","properties":{
		"plain":{"type":"string","enum":["a","b"]},
		"same":{"oneOf":[{"const":"a","title":"a"},{"const":"b"}]},
		"legacy":{"type":"string","enum":["s","l"],"enumNames":["Small","Large"]},
		"some":{"oneOf":[{"const":"x","title":"Ex"},{"const":"y"}]}
	}}`)}
	f, err := formOf(q)
	if err != nil {
		t.Fatal(err)
	}
	props := f.schema["properties"].(map[string]any)
	for name, want := range map[string]string{
		"plain":  `{"enum":["a","b"],"title":"Plain","type":"string"}`,
		"same":   `{"enum":["a","b"],"title":"Same","type":"string"}`,
		"legacy": `{"oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}],"title":"Legacy","type":"string"}`,
		"some":   `{"oneOf":[{"const":"x","title":"Ex"},{"const":"y","title":"y"}],"title":"Some","type":"string"}`,
	} {
		if got, _ := json.Marshal(props[name]); string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	fields, _, errs := f.read(map[string]any{"plain": "b", "legacy": "l"})
	if len(errs) > 0 || fields["plain"] != "b" || fields["legacy"] != "l" {
		t.Errorf("fields %v, errors %v", fields, errs)
	}
}

// An array whose items are a closed set is MCP's multi-select: items of
// enum when untitled, of anyOf const/title when titled, with minItems,
// maxItems and a default; the picked consts come back as the options'
// values, of their own type, and a pick that is none of them is an error
// at the field.
func TestAMultiChoiceIsAMultiSelect(t *testing.T) {
	q := &question.Question{ID: "q", Text: "Pick", Schema: json.RawMessage(`{"type":"object","required":["days"],"properties":{
		"days":{"type":"array","items":{"type":"string","enum":["mon","tue","wed"]},"minItems":1,"maxItems":2,"default":["mon"]},
		"rooms":{"type":"array","title":"Rooms","items":{"anyOf":[{"const":1,"title":"Single"},{"const":2,"title":"Double"}]}}
	}}`)}
	f, err := formOf(q)
	if err != nil {
		t.Fatal(err)
	}
	props := f.schema["properties"].(map[string]any)
	for name, want := range map[string]string{
		"days":  `{"default":["mon"],"items":{"enum":["mon","tue","wed"],"type":"string"},"maxItems":2,"minItems":1,"title":"Days","type":"array"}`,
		"rooms": `{"items":{"anyOf":[{"const":"1","title":"Single"},{"const":"2","title":"Double"}]},"title":"Rooms","type":"array"}`,
	} {
		if got, _ := json.Marshal(props[name]); string(got) != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	fields, _, errs := f.read(map[string]any{"days": []any{"tue", "wed"}, "rooms": []any{"2", "1"}})
	if got, _ := json.Marshal(fields); len(errs) > 0 || string(got) != `{"days":["tue","wed"],"rooms":[2,1]}` {
		t.Errorf("fields %s, errors %v", got, errs)
	}
	raw, _ := json.Marshal(fields)
	if errs := q.Validate(raw); len(errs) > 0 {
		t.Errorf("the answer read back fails the question: %v", errs)
	}
	for _, bad := range []any{[]any{"mon", "fri"}, "mon", []any{1.0}} {
		_, _, errs = f.read(map[string]any{"days": bad})
		if len(errs) != 1 || errs[0].Pointer != "/days" || !strings.Contains(errs[0].Message, "mon, tue, wed") {
			t.Errorf("days %v: errors %v, want one at /days naming the options", bad, errs)
		}
	}
	// Too many is the question's own check, before anything is sent.
	fields, _, _ = f.read(map[string]any{"days": []any{"mon", "tue", "wed"}})
	raw, _ = json.Marshal(fields)
	if errs := q.Validate(raw); len(errs) == 0 {
		t.Errorf("three days passed maxItems 2")
	}
}
