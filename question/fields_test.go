package question

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

func fieldsQuestion() *Question {
	return &Question{
		ID: "q-1", Text: "Tell me about the trip.", Expires: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC),
		Schema: json.RawMessage(`{"type": "object", "required": ["to", "nights"], "properties": {
			"to":      {"type": "string", "title": "Destination", "minLength": 2, "pattern": "^[A-Z]"},
			"nights":  {"type": "integer", "minimum": 1, "maximum": 30},
			"when":    {"type": "string", "format": "date"},
			"refund":  {"type": "boolean", "default": true},
			"class":   {"oneOf": [{"const": "eco", "title": "Economy"}, {"const": 2, "title": "Business"}]},
			"seat":    {"enum": ["aisle", "window"]},
			"budget":  {"type": "number", "exclusiveMinimum": 0},
			"extras":  {"type": "array"}
		}}`),
	}
}

// One model for every face: kinds, closed sets with any JSON value and
// labels, defaults, in the schema's order with the required first.
func TestFieldsModelTheSchema(t *testing.T) {
	fs := fieldsQuestion().Fields()
	var got []string
	for _, f := range fs {
		got = append(got, f.Name+":"+string(f.Kind))
	}
	want := "to:text,nights:integer,when:date,refund:boolean,class:choice,seat:choice,budget:number,extras:json"
	if strings.Join(got, ",") != want {
		t.Fatalf("fields %v; want %s", got, want)
	}
	if fs[0].Label() != "Destination" || !fs[0].Required || fs[2].Required {
		t.Errorf("to: label %q required %v; when required %v", fs[0].Label(), fs[0].Required, fs[2].Required)
	}
	class := fs[4]
	if len(class.Options) != 2 || class.Options[0].Label != "Economy" || class.Options[1].Value != float64(2) || class.Options[1].Text() != "Business" {
		t.Errorf("class options %+v; want eco/Economy and 2/Business", class.Options)
	}
	if v, ok := class.Choose("business"); !ok || v != float64(2) {
		t.Errorf("Choose(business) = %v, %v; want the JSON value 2", v, ok)
	}
	if p := fieldsQuestion().Proposed(); len(p) != 1 || p["refund"] != true {
		t.Errorf("Proposed = %v; want refund true", p)
	}
}

// The question's options belong to its option field, labels included.
func TestFieldsTakeTheQuestionsOptions(t *testing.T) {
	q := &Question{ID: "q", Text: "Which?", Schema: json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`),
		Options: []Option{{Value: "CC-4410", Label: "Engineering"}, {Value: "CC-4420"}}}
	fs := q.Fields()
	if len(fs) != 1 || fs[0].Kind != KindChoice || len(fs[0].Options) != 2 || fs[0].Options[0].Label != "Engineering" {
		t.Fatalf("fields %+v; want one choice with the two options", fs)
	}
	if _, err := fs[0].Parse("engineering"); err != nil {
		t.Errorf("Parse(engineering) by label: %v", err)
	}
	if _, err := fs[0].Parse("marketing"); err == nil || err.Error() != "expected one of CC-4410, CC-4420" {
		t.Errorf("Parse(marketing) = %v; want the words the agent uses", err)
	}
}

// A form refuses what the agent would: type errors at the field, then the
// schema's own errors.
func TestParseFormRefusesAsTheAgentWould(t *testing.T) {
	q := fieldsQuestion()
	_, errs := q.ParseForm(map[string]string{"to": "x", "nights": "two", "when": "tomorrow", "refund": "maybe"})
	got := map[string]string{}
	for _, e := range errs {
		got[e.Pointer] = e.Message
	}
	want := map[string]string{"/nights": "expected an integer", "/when": "expected a date (YYYY-MM-DD)", "/refund": "expected a boolean"}
	for p, m := range want {
		if got[p] != m {
			t.Errorf("%s: %q, want %q (all: %v)", p, got[p], m, errs)
		}
	}
	_, errs = q.ParseForm(map[string]string{"to": "x", "nights": "40", "class": "Economy"})
	byField := q.ErrorsByField(errs)
	if strings.Join(byField["to"], "; ") != `"x" does not match ^[A-Z]; must be at least 2 characters long` || strings.Join(byField["nights"], "") != "must be at most 30" {
		t.Errorf("schema errors by field: %v", byField)
	}
	fields, errs := q.ParseForm(map[string]string{"to": "Rome", "nights": "3", "class": "Business", "budget": "12,5", "extras": `["late checkout"]`})
	if len(errs) != 0 || fields["nights"] != int64(3) || fields["class"] != float64(2) || fields["budget"] != 12.5 {
		t.Errorf("a good form: %v, %v", fields, errs)
	}
	if _, errs := q.ParseForm(map[string]string{"nights": "3"}); len(errs) != 1 || errs[0].Message != "missing required field to" {
		t.Errorf("a missing field: %v", errs)
	}
}

// The digest is what was shown: it survives the trip through a message,
// and changes with anything a person saw.
func TestDigestIsTheQuestionAsShown(t *testing.T) {
	q := fieldsQuestion()
	back, ok, err := FromMessage(q.Message())
	if !ok || err != nil {
		t.Fatal(err)
	}
	if Digest(q) != Digest(back) || !strings.HasPrefix(Digest(q), "sha256:") {
		t.Errorf("digest %s before the wire, %s after", Digest(q), Digest(back))
	}
	re := q.ReAsk("q-2", []FieldError{{Pointer: "/to", Message: "no"}})
	changed := *q
	changed.Text = "Tell me about the other trip."
	if Digest(re) == Digest(q) || Digest(&changed) == Digest(q) {
		t.Error("a re-ask or another text has the same digest")
	}
	if q.DecisionFor("", map[string]any{"refund": false}) != DecisionEdited || q.DecisionFor("", map[string]any{"refund": true}) != DecisionAnswered ||
		q.DecisionFor(ActionDecline, nil) != DecisionDeclined || q.DecisionFor(ActionCancel, nil) != DecisionCanceled {
		t.Error("DecisionFor: want edited when a proposed value changes, answered when kept, declined, canceled")
	}
	d := Decision{Version: 1, QuestionID: "q-1", By: Decider{Kind: DeciderPerson, Name: "frank"}, Decision: DecisionAnswered, QuestionDigest: Digest(q)}
	m := &a2a.Message{Metadata: map[string]any{DecisionKey: d.Metadata()}}
	got, ok, err := DecisionOf(m)
	if !ok || err != nil || got.By.Name != "frank" || got.QuestionDigest != d.QuestionDigest {
		t.Errorf("DecisionOf = %+v, %v, %v", got, ok, err)
	}
}

// Issue 32, point 3: every face can say a field in words: its caption
// (title, else the name in words), its constraints without a regular
// expression, its errors for people; and a question's own reason field.
func TestFieldsSayThemselvesInWords(t *testing.T) {
	for name, want := range map[string]string{"costCentre": "Cost centre", "invoice_id": "Invoice id", "payeeIBAN": "Payee IBAN", "approve": "Approve", "x": "X"} {
		if got := Humanize(name); got != want {
			t.Errorf("Humanize(%q) = %q, want %q", name, got, want)
		}
	}
	q := &Question{ID: "q", Text: "Book?", Schema: json.RawMessage(`{"type":"object","required":["code","nights","reason"],"properties":{
		"code":   {"type":"string","pattern":"^[A-Z]{3}-[0-9]{3}$","examples":["ABC-123"]},
		"date":   {"type":"string","pattern":"^[0-9]{4}-[0-9]{2}-[0-9]{2}$","description":"the day you fly, YYYY-MM-DD"},
		"nights": {"type":"integer","minimum":1,"maximum":30,"title":"Nights away"},
		"reason": {"type":"string","minLength":3,"maxLength":200}}}`)}
	byName := map[string]Field{}
	for _, f := range q.Fields() {
		byName[f.Name] = f
	}
	for _, c := range []struct{ field, caption, rules string }{
		{"code", "Code", "in the expected format, for example ABC-123"},
		{"date", "Date", ""},
		{"nights", "Nights away", "a whole number from 1 to 30"},
		{"reason", "Reason", "3 to 200 characters"},
	} {
		f := byName[c.field]
		if f.Caption() != c.caption || f.Rules() != c.rules {
			t.Errorf("%s: caption %q, rules %q; want %q, %q", c.field, f.Caption(), f.Rules(), c.caption, c.rules)
		}
	}
	for _, c := range []struct{ field, msg, want string }{
		{"code", `"abc" does not match ^[A-Z]{3}-[0-9]{3}$`, `"abc" is not in the expected format, for example ABC-123`},
		{"date", `"friday" does not match ^[0-9]{4}-[0-9]{2}-[0-9]{2}$`, `"friday" is not in the expected format (the day you fly, YYYY-MM-DD)`},
		{"nights", "missing required field nights", "This is required."},
		{"nights", "expected an integer", "expected a whole number"},
		{"nights", "must be at most 30", "must be at most 30"},
	} {
		if got := byName[c.field].Explain(c.msg); got != c.want {
			t.Errorf("%s: Explain(%q) = %q, want %q", c.field, c.msg, got, c.want)
		}
	}
	for _, c := range []struct {
		e    FieldError
		want string
	}{
		{FieldError{Pointer: "/code", Message: `"abc" does not match ^[A-Z]{3}-[0-9]{3}$`}, `Code: "abc" is not in the expected format, for example ABC-123`},
		{FieldError{Pointer: "/nights", Message: "missing required field nights"}, "Nights away: This is required."},
		{FieldError{Pointer: "/reason/0", Message: "expected a string"}, "Reason 0: expected a string"},
		{FieldError{Pointer: "/other", Message: "not allowed"}, "not allowed"},
		{FieldError{Message: "expected an object"}, "expected an object"},
	} {
		if got := q.ExplainError(c.e); got != c.want {
			t.Errorf("ExplainError(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
	if rf := q.ReasonField(); rf != "reason" {
		t.Errorf("ReasonField = %q, want reason", rf)
	}
	if rf := fieldsQuestion().ReasonField(); rf != "" {
		t.Errorf("ReasonField of a question without one = %q", rf)
	}
	opts := (&Question{ID: "q", Text: "Pay?", Schema: json.RawMessage(`{"type":"object","required":["approve"],"properties":{"approve":{"type":"boolean"}}}`),
		Options: []Option{{Value: true, Label: "Yes, pay"}, {Value: false, Label: "No"}}}).Fields()[0]
	if got := opts.Explain("expected one of true, false"); got != "Choose one of: Yes, pay, No" {
		t.Errorf("Explain of a choice: %q", got)
	}
}

// MCP's legacy titled enum: enumNames, one per value, label the options;
// a list of another length labels none of them.
func TestFieldsLabelAnEnumByItsEnumNames(t *testing.T) {
	fs := SchemaFields(json.RawMessage(`{"type":"object","properties":{
		"size": {"type":"string","enum":["s","l"],"enumNames":["Small","Large"]},
		"odd":  {"type":"string","enum":["a","b"],"enumNames":["Only one"]}}}`))
	if len(fs) != 2 || fs[0].Kind != KindChoice || fs[0].Options[0].Text() != "Small" || fs[0].Options[1].Text() != "Large" {
		t.Fatalf("size options %+v; want s/Small and l/Large", fs[0].Options)
	}
	if fs[1].Options[0].Label != "" || fs[1].Options[1].Label != "" {
		t.Errorf("odd options %+v; want no labels from a list of another length", fs[1].Options)
	}
}

// An array of a closed set is a multi-choice: its items' options, labelled
// as a choice's are, and its bounds; an array of free values has none.
func TestFieldsReadAnArrayOfChoices(t *testing.T) {
	fs := SchemaFields(json.RawMessage(`{"type":"object","properties":{
		"days": {"type":"array","items":{"type":"string","enum":["mon","tue"]},"minItems":1,"maxItems":2},
		"rooms":{"type":"array","items":{"anyOf":[{"const":1,"title":"Single"},{"const":2,"title":"Double"}]}},
		"tags": {"type":"array","items":{"type":"string"}}}}`))
	if len(fs) != 3 {
		t.Fatalf("fields %+v", fs)
	}
	days, rooms, tags := fs[0], fs[1], fs[2]
	if days.Kind != KindJSON || len(days.Items) != 2 || days.Items[1].Value != "tue" || *days.MinItems != 1 || *days.MaxItems != 2 {
		t.Errorf("days %+v; want the items mon and tue, 1 to 2 of them", days)
	}
	if len(rooms.Items) != 2 || rooms.Items[0].Value != 1.0 || rooms.Items[0].Label != "Single" || rooms.MinItems != nil {
		t.Errorf("rooms %+v; want 1/Single and 2/Double", rooms)
	}
	if tags.Items != nil {
		t.Errorf("tags items %+v; want none", tags.Items)
	}
}
