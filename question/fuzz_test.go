package question

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
		{1, "", `{"action":null,"city":"R<o>me","reason":"x","z":[1,2.50,{"b":true,"a":null}]}`},
		{0, "", `{"costCentre":"CC-4410","note":"\u2028 & caf\u00e9 \ud800","n":1e400}`},
		{1, "", `{ "city" : "Rome" , "city":"Bonn"}`},
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
		sameAsDecoded(t, q, data)

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

// sameAsDecoded holds the in-place readers of onepass.go to what they
// replace: the data part's encoding read by parseData and by
// parseDataDecoded, its fields decoded by decodeCompact and by a
// json.Decoder with UseNumber, and Asked against askedDecoded, for data as
// it came and as json.Marshal writes its value.
func sameAsDecoded(t *testing.T, q *Question, data []byte) {
	t.Helper()
	c, err := compileSchema(q.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.Asked(data), askedDecoded(data, c.props); !bytes.Equal(got, want) {
		t.Fatalf("Asked(%q) = %q, through a map %q", data, got, want)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	if got, want := q.Asked(raw), askedDecoded(raw, c.props); !bytes.Equal(got, want) {
		t.Fatalf("Asked(%q) = %q, through a map %q", raw, got, want)
	}
	if got, ok := decodeCompact(raw); ok {
		want := decodeNumbers(t, raw)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeCompact(%q) = %#v, a json.Decoder %#v", raw, got, want)
		}
	} else if json.Valid(raw) {
		t.Fatalf("decodeCompact(%q) failed on json.Marshal's output", raw)
	}
	if !isJSONObject(raw) {
		return
	}
	a1, e1, err1 := parseData(raw, q, c, 256)
	a2, e2, err2 := parseDataDecoded(raw, q, c, 256)
	if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(a1, a2) || !reflect.DeepEqual(e1, e2) {
		t.Fatalf("parseData(%q) = %+v, %+v, %v; through a map %+v, %+v, %v", raw, a1, e1, err1, a2, e2, err2)
	}
}

func decodeNumbers(t *testing.T, raw []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
