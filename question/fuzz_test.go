package question

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// FuzzParse feeds arbitrary text and data parts to Parse for two questions.
// Parse must never panic, and an answer it accepts must validate clean.
func FuzzParse(f *testing.F) {
	seeds := []struct {
		which byte
		text  string
		data  string
	}{
		{0, "", `{"costCentre":"CC-4410"}`},
		{0, "", `{"questionId":"q-1","costCentre":"CC-4420"}`},
		{0, "", `{"questionId":"q-old","costCentre":"CC-4410"}`},
		{0, "CC-4420", ""},
		{0, "cost centre cc-4410", ""},
		{0, "engineering", ""},
		{0, "", `{"questionId":"q-1","action":"decline","reason":"not mine"}`},
		{0, "", `{"action":"cancel"}`},
		{0, "", `{"action":"approve"}`},
		{0, "", `{"costCentre":"CC-9999","note":"xxxxxxxxxxxxxxxxxxxx"}`},
		{0, "hello", `"CC-4410"`},
		{1, " Berlin ", ""},
		{1, "B", ""},
		{1, "", `{"city":["Berlin"]}`},
		{1, "", `{"questionId":null,"city":"Rome","reason":3}`},
	}
	for _, s := range seeds {
		f.Add(s.which, s.text, []byte(s.data))
	}
	f.Fuzz(func(t *testing.T, which byte, text string, data []byte) {
		q := expenseQuestion()
		if which%2 == 1 {
			q = cityQuestion()
		}
		var parts []*a2a.Part
		if len(data) > 0 {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				parts = append(parts, a2a.NewDataPart(v))
			}
		}
		if text != "" {
			parts = append(parts, a2a.NewTextPart(text))
		}
		m := a2a.NewMessage(a2a.MessageRoleUser, parts...)

		a, errs, err := Parse(m, q, 256)
		if err != nil {
			if !errors.Is(err, ErrWrongQuestion) {
				t.Fatalf("unexpected error %v", err)
			}
			if a != nil || errs != nil {
				t.Fatalf("wrong question with answer %+v, errs %+v", a, errs)
			}
			return
		}
		if a != nil {
			if !isJSONObject(a.Fields) || !json.Valid(a.Fields) {
				t.Fatalf("fields %q are not a JSON object", a.Fields)
			}
		}
		if errs == nil {
			if a == nil {
				t.Fatal("no answer and no errors")
			}
			if a.Action == "" {
				if verrs := q.Validate(a.Fields); verrs != nil {
					t.Fatalf("accepted answer %s fails validation: %+v", a.Fields, verrs)
				}
			} else if a.Action != ActionDecline && a.Action != ActionCancel {
				t.Fatalf("accepted unknown action %q", a.Action)
			}
		}
		for _, e := range errs {
			if e.Message == "" {
				t.Fatalf("field error without a message: %+v", errs)
			}
		}
	})
}
