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
