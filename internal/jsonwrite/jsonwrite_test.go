package jsonwrite

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// Every function here must write what json.Marshal writes for the same
// value, and fail where it fails.

func same(t *testing.T, what string, v any, got []byte, err error) {
	t.Helper()
	want, werr := json.Marshal(v)
	if (err == nil) != (werr == nil) {
		t.Fatalf("%s %#v: error %v, json.Marshal's %v", what, v, err, werr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("%s %#v:\n got %s\nwant %s", what, v, got, want)
	}
}

var stringSeeds = []string{"", "plain", `q"uote`, `back\slash`, "<script>&</script>", "\u2028\u2029", "é ü 漢字 🎉",
	"\x00\x01\b\f\n\r\t\x1f\x7f", "bad \xff utf8 \xc3", "\xe2\x80", "\xed\xa0\x80 surrogate", "tail\xe2\x80\xa8"}

func TestStringIsJSONMarshals(t *testing.T) {
	for _, s := range stringSeeds {
		same(t, "string", s, String(nil, s), nil)
	}
}

func TestFloatIsJSONMarshals(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 1e-6, 9.99999e-7, 1e-7, 1e20, 1e21, 123456789e13, 1.5e300,
		math.MaxFloat64, math.SmallestNonzeroFloat64, 0.1, 1.0 / 3, math.NaN(), math.Inf(1), math.Inf(-1), 5e-324, 1e-10} {
		got, err := Float(nil, f)
		same(t, "float", f, got, err)
	}
}

func TestValueIsJSONMarshals(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "s<", 2.5, map[string]any(nil), []any(nil), []string(nil), map[string]string(nil),
		map[string]any{}, []any{}, []string{}, map[string]string{},
		map[string]any{"b": 1.0, "a": []any{"x", nil, true, map[string]any{"k": "<v>", "\u2028": "&"}}, "A": "é", "": 0.0},
		[]string{"a", "<b>"}, map[string]string{"z": "1", "a": "\xff"},
		map[string]any{"many": map[string]any{"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0, "e": 5.0, "f": 6.0, "g": 7.0, "h": 8.0,
			"i": 9.0, "j": 10.0, "k": 11.0, "l": 12.0, "m": 13.0, "n": 14.0, "o": 15.0, "p": 16.0, "q": 17.0, "r": 18.0}},
		json.RawMessage(`{ "b" : 1 }`), json.Number("12.50"), 7, struct{ B, A int }{2, 1},
		map[string]any{"f": func() {}}, []any{math.NaN()}, map[string]any{"bad": json.RawMessage(`{`)},
	} {
		got, err := Value(nil, v)
		same(t, "value", v, got, err)
	}
}

type selfWriting struct {
	Own
	s string
}

func (s *selfWriting) AppendJSON(b []byte) ([]byte, error) {
	return String(append(b, `{"s":`...), s.s), nil
}
func (s *selfWriting) MarshalJSON() ([]byte, error) { return s.AppendJSON(nil) }

func TestValueWritesAnAppenderItself(t *testing.T) {
	v := map[string]any{"x": &selfWriting{s: "<a>"}}
	got, err := Value(nil, v)
	if err != nil || string(got) != `{"x":{"s":"\u003ca\u003e"}` {
		// the Appender's bytes as they are: no closing brace was added
		t.Fatalf("Value = %s, %v", got, err)
	}
}

// FuzzValue: any JSON text decoded into generic values, and any string,
// is written as json.Marshal writes it.
func FuzzValue(f *testing.F) {
	for _, s := range stringSeeds {
		f.Add([]byte(`{"k":` + string(must(json.Marshal(s))) + `}`))
		f.Add([]byte(s))
	}
	for _, s := range []string{`[1e-7,1e21,-0,0.000001,123456789012345678901234567890,1.7976931348623157e308]`,
		`{"b":{"z":null,"a":[true,false,{}]},"a":"\u2028\u003c\ud800"}`, `"\\u00e9\\n"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		same(t, "string", string(in), String(nil, string(in)), nil)
		var v any
		if json.Unmarshal(in, &v) != nil {
			return
		}
		got, err := Value(nil, v)
		same(t, "value", v, got, err)
		if s, ok := v.(string); ok {
			same(t, "string", s, String(nil, s), nil)
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestBytesIsJSONMarshals(t *testing.T) {
	for _, p := range [][]byte{nil, {}, {0}, {0xff, 0xfe}, []byte("abc"), []byte("<&>\u2028")} {
		same(t, "bytes", p, Bytes(nil, p), nil)
	}
}

func TestEncodedIsWrittenAsItIs(t *testing.T) {
	for _, e := range []Encoded{nil, Encoded(`{"a":"\u003c"}`), Encoded(`[1,2]`)} {
		got, err := Value(nil, e)
		same(t, "encoded", e, got, err)
	}
}

// otherAppendJSON has an AppendJSON method of its own, not Own's mark: it
// is written by json.Marshal, as it was before this package.
type otherAppendJSON struct{ A string }

func (otherAppendJSON) AppendJSON(b []byte) ([]byte, error) { return append(b, "not this"...), nil }

func TestValueWritesAnotherAppendJSONThroughJSONMarshal(t *testing.T) {
	v := otherAppendJSON{A: "<"}
	got, err := Value(nil, v)
	same(t, "value with an AppendJSON of its own", v, got, err)
}

func TestTimeIsJSONMarshals(t *testing.T) {
	base := time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC)
	for _, tm := range []time.Time{{}, base, base.Add(123456789), base.In(time.FixedZone("", -9000)), base.Add(time.Millisecond).Local(),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Now()} {
		got, err := Time(nil, tm)
		same(t, "time", tm, got, err)
	}
}

// TestRawAsIsOnlyWhatJSONMarshalLeaves: whatever RawAsIs says is written
// as it is, json.Marshal writes as it is (what it would change or refuse
// RawAsIs refuses), and the compact ASCII forms json.Marshal itself
// writes are taken as they are.
func TestRawAsIsOnlyWhatJSONMarshalLeaves(t *testing.T) {
	for _, s := range []string{`null`, `{"a":[1,2.5,"x"],"b":true}`, `"x"`, `{ "a" : 1 }`, "[1,\n2]", `"<b>"`, `"&"`, `"é"`, `"\u2028"`, `{"a":`, ``, `nul`, `1 2`} {
		raw := json.RawMessage(s)
		want, err := json.Marshal(raw)
		asIs := err == nil && bytes.Equal(want, raw)
		if got := RawAsIs(raw); got && !asIs {
			t.Errorf("RawAsIs(%s) = true, json.Marshal writes %s (%v)", s, want, err)
		}
	}
	for _, s := range []string{`null`, `{"a":[1,2.5,"x"],"b":true}`, `"x"`, `42`} {
		if !RawAsIs(json.RawMessage(s)) {
			t.Errorf("RawAsIs(%s) = false", s)
		}
	}
}
