package question_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
)

// A single-value answer type is one required field, which Decode reads
// back, and a text answer of a person fills it.
func TestSchemaForASingleValueIsOneRequiredFieldThatDecodeReads(t *testing.T) {
	schema, err := question.SchemaFor[bool]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"answer":{"type":"boolean"}},"required":["answer"],"type":"object"}`
	if string(schema) != want {
		t.Fatalf("SchemaFor[bool] = %s, want %s", schema, want)
	}
	q := &question.Question{ID: "q1", Text: "Book it?", Schema: schema}
	ans, errs, err := question.Parse(a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("yes")), q, 0)
	if err != nil || len(errs) > 0 {
		t.Fatalf("Parse(yes) = %v, %v", errs, err)
	}
	if v, err := question.Decode[bool](ans); err != nil || !v {
		t.Fatalf("Decode[bool] = %v, %v; want true", v, err)
	}
	for name, s := range map[string]func() (json.RawMessage, error){
		"string": question.SchemaFor[string], "int": question.SchemaFor[int], "[]string": question.SchemaFor[[]string],
		"time.Time": question.SchemaFor[time.Time],
	} {
		raw, err := s()
		if err != nil {
			t.Errorf("SchemaFor[%s]: %v", name, err)
			continue
		}
		var obj struct {
			Required []string `json:"required"`
		}
		if json.Unmarshal(raw, &obj) != nil || len(obj.Required) != 1 || obj.Required[0] != question.ScalarField {
			t.Errorf("SchemaFor[%s] = %s, want one required field %q", name, raw, question.ScalarField)
		}
	}
	if _, err := question.SchemaFor[map[int]string](); err == nil {
		t.Error("SchemaFor[map[int]string] = nil error, want one: it has no JSON form")
	}
}

// FieldError is an error that names its field.
func TestFieldErrorIsAnErrorNamingItsField(t *testing.T) {
	var err error = question.FieldError{Pointer: "/end", Message: "before the start"}
	if err.Error() != "/end: before the start" {
		t.Errorf("Error() = %q", err.Error())
	}
	if got := (question.FieldError{Message: "no"}).Error(); got != "no" {
		t.Errorf("Error() of the whole answer = %q, want just the message", got)
	}
}
