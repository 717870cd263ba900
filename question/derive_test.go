package question_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint/question"
)

type trip struct {
	From  string    `json:"from" jsonschema:"required,pattern=^[A-Z]{3}$,description=Airport code\\, e.g. ZRH"`
	Seats int       `json:"seats" jsonschema:"minimum=1,maximum=9"`
	Class string    `json:"class,omitempty" jsonschema:"enum=economy|business"`
	When  time.Time `json:"when"`
	Tags  []string  `json:"tags,omitempty" jsonschema:"maxItems=3"`
	Skip  string    `json:"-"`
}

func TestSchemaForDescribesTheType(t *testing.T) {
	raw, err := question.SchemaFor[trip]()
	if err != nil {
		t.Fatal(err)
	}
	q := &question.Question{Text: "Which trip?", Schema: raw}
	if err := q.Check(); err != nil {
		t.Fatalf("derived schema %s does not check: %v", raw, err)
	}
	var s map[string]any
	_ = json.Unmarshal(raw, &s)
	props := s["properties"].(map[string]any)
	if _, has := props["Skip"]; has || len(props) != 5 {
		t.Fatalf("properties %v, want from, seats, class, when, tags", props)
	}
	if d := props["from"].(map[string]any)["description"]; d != "Airport code, e.g. ZRH" {
		t.Fatalf("description %q, want the escaped comma kept", d)
	}
	errs := q.Validate(json.RawMessage(`{"from":"zurich","seats":0,"class":"first","when":"tomorrow","other":1}`))
	got := map[string]bool{}
	for _, e := range errs {
		got[e.Pointer] = true
	}
	for _, p := range []string{"/from", "/seats", "/class", "/when", "/other"} {
		if !got[p] {
			t.Errorf("no error at %s in %+v", p, errs)
		}
	}
	if errs := q.Validate(json.RawMessage(`{"from":"ZRH","seats":2,"when":"2026-12-01T10:00:00Z"}`)); len(errs) > 0 {
		t.Fatalf("a valid answer was refused: %+v", errs)
	}
}

func TestSchemaForNamesTheFieldItCannotDescribe(t *testing.T) {
	type badTag struct {
		N int `json:"n" jsonschema:"pattern=x"`
	}
	type badKind struct {
		C chan int `json:"c"`
	}
	type self struct {
		Next *self `json:"next"`
	}
	for name, f := range map[string]func() error{
		"pattern on a number": func() error { _, err := question.SchemaFor[badTag](); return err },
		"a channel":           func() error { _, err := question.SchemaFor[badKind](); return err },
		"a recursive type":    func() error { _, err := question.SchemaFor[self](); return err },
		"not an object":       func() error { _, err := question.SchemaFor[map[int]string](); return err },
	} {
		err := f()
		if err == nil || !strings.Contains(err.Error(), "SchemaFor") {
			t.Errorf("%s: err = %v, want an error naming the problem", name, err)
		}
	}
}

// Every malformed tag is an error that names the type and the field:
// nothing of a tag is dropped or taken for something else in silence.
// (Tags that are not Go tag syntax at all, which go vet refuses in a
// source file, are in derive_tag_test.go.)
func TestSchemaForRefusesMalformedTags(t *testing.T) {
	type twice struct {
		N int `json:"n" jsonschema:"minimum=1" jsonschema:"maximum=9"`
	}
	type unknownKey struct {
		N int `json:"n" jsonschema:"min=1"`
	}
	type requiredValue struct {
		N int `json:"n" jsonschema:"required=false"`
	}
	type notANumber struct {
		N int `json:"n" jsonschema:"minimum=ten"`
	}
	type emptyItem struct {
		N int `json:"n" jsonschema:"minimum=1,,maximum=9"`
	}
	type keyTwice struct {
		N int `json:"n" jsonschema:"minimum=1,minimum=2"`
	}
	type emptyEnum struct {
		S string `json:"s" jsonschema:"enum="`
	}
	type inner struct {
		N int `json:"n" jsonschema:"maximum=x"`
	}
	type nested struct {
		Items []inner `json:"items"`
	}
	cases := map[string]struct {
		err       func() error
		field, is string
	}{
		"a key given twice":            {func() error { _, err := question.SchemaFor[twice](); return err }, "twice.N", `"jsonschema" twice`},
		"an unknown key":               {func() error { _, err := question.SchemaFor[unknownKey](); return err }, "unknownKey.N", `unknown key "min"`},
		"required with a value":        {func() error { _, err := question.SchemaFor[requiredValue](); return err }, "requiredValue.N", "takes no value"},
		"a bound that is not a number": {func() error { _, err := question.SchemaFor[notANumber](); return err }, "notANumber.N", "needs a number"},
		"an empty item":                {func() error { _, err := question.SchemaFor[emptyItem](); return err }, "emptyItem.N", "empty item"},
		"a jsonschema key twice":       {func() error { _, err := question.SchemaFor[keyTwice](); return err }, "keyTwice.N", "given twice"},
		"an enum without values":       {func() error { _, err := question.SchemaFor[emptyEnum](); return err }, "emptyEnum.S", "needs a value"},
		"a nested field":               {func() error { _, err := question.SchemaFor[nested](); return err }, "inner.N", `"items[].n"`},
	}
	for name, c := range cases {
		err := c.err()
		if err == nil {
			t.Errorf("%s: SchemaFor took it", name)
			continue
		}
		for _, want := range []string{"SchemaFor[question_test.", c.field, c.is} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error %q does not say %q", name, err, want)
			}
		}
	}
}

// The documented forms work: a comma written \\, and a backslash written
// \\ in the struct tag reach the schema as one comma and one backslash.
func TestSchemaForTakesTheDocumentedEscapes(t *testing.T) {
	type code struct {
		Code string `json:"code" jsonschema:"required,pattern=^\\d{1\\,3}$,description=One to three digits\\, e.g. 42"`
	}
	raw, err := question.SchemaFor[code]()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	_ = json.Unmarshal(raw, &s)
	c := s.Properties["code"]
	if c["pattern"] != `^\d{1,3}$` || c["description"] != "One to three digits, e.g. 42" {
		t.Fatalf("code's schema %v, want pattern ^\\d{1,3}$ and the description with its comma", c)
	}
	q := &question.Question{Text: "Which code?", Schema: raw}
	if errs := q.Validate(json.RawMessage(`{"code":"4242"}`)); len(errs) != 1 {
		t.Fatalf("four digits got errors %+v, want one (the pattern)", errs)
	}
}
