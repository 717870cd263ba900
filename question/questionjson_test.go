package question

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/jsontest"
)

// FuzzQuestionJSON: a question built from the fuzzer's bytes (every member
// set or not, strings with what encoding/json escapes, option values and
// subjects of every generic kind and others it cannot encode, schemas
// spaced, HTML-bearing, empty or invalid, times in other zones and out of
// the years it can write) is written by encodeQuestion as json.Marshal
// writes it, failing where it fails; what it wrote is read back by
// readQuestion into the value json.Unmarshal gives; and the fuzzer's bytes
// themselves, read as a question, are left to json.Unmarshal (false) or
// read as it reads them.
func FuzzQuestionJSON(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte(`{"questionId":"q-1","text":"Which cost centre?","expires":"2026-12-04T17:00:00.5Z","answerSchema":{"type":"object"},"options":[{"value":"CC-4410"},{"value":"CC-4420","label":"B"}]}`))
	f.Add([]byte(`{"questionId":"q","text":"","expires":"2026-12-04T17:00:00Z","answerSchema":null,"subject":{"a":[1,true]},"attempt":2,"maxAttempts":3,"errors":[{"pointer":"/a","message":"m"}],"about":{"x":"y"},"holds":[{"name":"n","until":"2026-12-04T17:00:00+01:00"}]}`))
	f.Add(bytes.Repeat([]byte{0xff, 0x07, 0x03, 'a', '<', 0x81}, 30))
	f.Fuzz(func(t *testing.T, in []byte) {
		g := &gen{in: in}
		q := questionGen(g)
		want, wantErr := json.Marshal(q)
		got, err := encodeQuestion(q)
		if (err == nil) != (wantErr == nil) || err == nil && !bytes.Equal(got, want) {
			t.Fatalf("encodeQuestion:\n got %s (%v)\nwant %s (%v)", got, err, want, wantErr)
		}
		if wantErr == nil {
			// A key of about beyond ASCII, or one JSON escapes, is
			// json.Unmarshal's to read.
			plain := true
			for k := range q.About {
				if kj, _ := json.Marshal(k); string(kj) != `"`+k+`"` || strings.ContainsFunc(k, func(r rune) bool { return r >= 0x80 }) {
					plain = false
				}
			}
			sameQuestionRead(t, want, plain)
		}
		sameQuestionRead(t, in, false)
	})
}

// sameQuestionRead checks readQuestion, and decodeQuestion, against
// json.Unmarshal on raw; must says readQuestion has to read it.
func sameQuestionRead(t *testing.T, raw []byte, must bool) {
	t.Helper()
	jsontest.SameRead(t, raw, must, readQuestion)
	var d, want Question
	derr, werr := decodeQuestion(raw, &d), json.Unmarshal(raw, &want)
	if (derr == nil) != (werr == nil) || !reflect.DeepEqual(d, want) {
		t.Fatalf("decodeQuestion(%s) = %#v, %v; json.Unmarshal %#v, %v", raw, d, derr, want, werr)
	}
}

// gen builds values from a fuzzer's bytes; past their end it reads zeros.
type gen struct{ in []byte }

func (g *gen) byte() byte {
	if len(g.in) == 0 {
		return 0
	}
	c := g.in[0]
	g.in = g.in[1:]
	return c
}

func (g *gen) str() string {
	switch c := g.byte(); {
	case c < 8:
		return [...]string{"", "<b>&amp;</b>", "\u2028\u2029", "line\nnext\t\"q\"\\", "\x00\x1f\x7f", "é 漢字 🎉", "\xff\xc3", "CC-4410"}[c]
	default:
		n := int(c % 20)
		n = min(n, len(g.in))
		s := string(g.in[:n])
		g.in = g.in[n:]
		return s
	}
}

func (g *gen) value(depth int) any {
	switch c := g.byte(); c % 11 {
	case 0:
		return nil
	case 1:
		return g.byte()%2 == 0
	case 2:
		return float64(int8(g.byte())) / 4
	case 3:
		return [...]float64{1e21, 1e-7, math.MaxFloat64, math.NaN(), math.Inf(1), 0.1}[g.byte()%6]
	case 4:
		if depth > 3 {
			return "deep"
		}
		m := map[string]any{}
		for n := g.byte() % 3; n > 0; n-- {
			m[g.str()] = g.value(depth + 1)
		}
		return m
	case 5:
		if depth > 3 {
			return nil
		}
		var s []any
		for n := g.byte() % 3; n > 0; n-- {
			s = append(s, g.value(depth+1))
		}
		return s
	case 6:
		return 7 // not a generic value: through json.Marshal
	case 7:
		return json.RawMessage(`{ "a" : 1 }`)
	case 8:
		return func() {} // json.Marshal fails
	default:
		return g.str()
	}
}

func (g *gen) time() time.Time {
	c := g.byte()
	if c%8 == 0 {
		return time.Time{}
	}
	t := time.Unix(int64(g.byte())<<24|int64(g.byte())<<16, int64(g.byte())*3906251)
	switch c % 8 {
	case 1:
		return t.In(time.FixedZone("", int(int8(g.byte()))*900))
	case 2:
		return t.AddDate(int(g.byte())*40, 0, 0).UTC() // past 9999 for some
	}
	return t.UTC()
}

func questionGen(g *gen) *Question {
	set := func() bool { return g.byte()%3 != 0 }
	q := &Question{ID: g.str(), Text: g.str(), Expires: g.time()}
	switch g.byte() % 8 {
	case 0:
	case 1:
		q.Schema = json.RawMessage{}
	case 2:
		q.Schema = json.RawMessage(`{ "type": "object" }`)
	case 3:
		q.Schema = json.RawMessage(`{"type":"string","pattern":"^<a>&$"}`)
	case 4:
		q.Schema = json.RawMessage(`{"type":`)
	case 5:
		q.Schema = json.RawMessage(g.str())
	default:
		q.Schema = json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`)
	}
	if c := g.byte() % 4; c == 1 {
		q.Options = []Option{}
	} else if c > 1 {
		for n := g.byte() % 3; n > 0; n-- {
			q.Options = append(q.Options, Option{Value: g.value(0), Label: g.str()})
		}
	}
	if set() {
		q.OptionsFor = g.str()
	}
	if set() {
		q.Subject = map[string]any{}
		for n := g.byte() % 3; n > 0; n-- {
			q.Subject[g.str()] = g.value(1)
		}
	}
	if set() {
		q.Attempt = int(int8(g.byte()))
	}
	if set() {
		q.MaxAttempts = int(g.byte())
	}
	if set() {
		for n := g.byte() % 3; n >= 0 && n < 3; n-- {
			q.Errors = append(q.Errors, FieldError{Pointer: g.str(), Message: g.str()})
			if n == 0 {
				break
			}
		}
	}
	if set() {
		q.About = map[string]string{}
		for n := g.byte() % 3; n > 0; n-- {
			q.About[g.str()] = g.str()
		}
	}
	if set() {
		for n := g.byte()%2 + 1; n > 0; n-- {
			q.Holds = append(q.Holds, Held{Name: g.str(), Until: g.time()})
		}
	}
	return q
}

// TestQuestionJSONForms: the question the worked example asks, and a
// re-ask with everything set, written as json.Marshal writes them and
// read back by hand; and forms readQuestion leaves to json.Unmarshal.
func TestQuestionJSONForms(t *testing.T) {
	expires := time.Date(2026, 12, 4, 17, 0, 0, 123e6, time.UTC)
	for _, q := range []*Question{
		{ID: "q-1", Text: "Which cost centre should this expense be charged to? CC-4410 or CC-4420.", Expires: expires,
			Schema:  json.RawMessage(`{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"}`),
			Options: []Option{{Value: "CC-4410"}, {Value: "CC-4420", Label: "Platform"}}, MaxAttempts: 3, Attempt: 1},
		{ID: "q-2", Text: "Approve?", Expires: expires, Schema: json.RawMessage(`{"type":"object"}`), OptionsFor: "approve",
			Subject: map[string]any{"amount": 1200.0, "currency": "EUR"}, Attempt: 2, MaxAttempts: 3,
			Errors: []FieldError{{Pointer: "/approve", Message: "say yes or no"}}, About: map[string]string{"for": "ops"},
			Holds: []Held{{Name: "seat 14C", Until: expires}}},
	} {
		want, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeQuestion(q)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("encodeQuestion:\n got %s (%v)\nwant %s", got, err, want)
		}
		sameQuestionRead(t, want, true)
	}
	for _, raw := range []string{`{"QuestionId":"q"}`, `{"text":"a","text":"b"}`, `{"attempt":1.5e0}`, `{"options":[null]}`, `{"about":{"k":null}}`, `{"other":1}`} {
		var q Question
		if readQuestion([]byte(raw), &q) {
			t.Errorf("readQuestion read %s, which is json.Unmarshal's to read", raw)
		}
		var want Question
		werr := json.Unmarshal([]byte(raw), &want)
		var d Question
		if err := decodeQuestion([]byte(raw), &d); (err == nil) != (werr == nil) || !reflect.DeepEqual(d, want) {
			t.Errorf("decodeQuestion(%s) = %#v, %v; json.Unmarshal %#v, %v", raw, d, err, want, werr)
		}
	}
}
