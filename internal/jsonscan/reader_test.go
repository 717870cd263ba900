package jsonscan

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzReaderValue: whatever Value reads (the whole input, nothing left) is
// what json.Unmarshal reads into an any; String likewise into a string.
func FuzzReaderValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,-0.5e-7,true,false,null,{"b":"c"}],"a":2}`, `"\u003c\ud800\n é"`, "\"\xff\"", `[01]`, `-`, `1.`,
		`1e400`, ` [ 1 , 2 ] `, `{"k" : {}}`, `{"k":1,}`, `[1 2]`, `tru`, `nulll`, `"a\"b"`, `"\x01"`, `{"\u00e9":1}`, `123456789012345678901234567890`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(in)
		if v, ok := r.Value(); ok && r.End() {
			var want any
			if err := json.Unmarshal(in, &want); err != nil || !reflect.DeepEqual(v, want) {
				t.Fatalf("%q: read %#v, json.Unmarshal %#v (error %v)", in, v, want, err)
			}
		}
		r = NewReader(in)
		raw, ok := r.Raw()
		if ok && r.End() != json.Valid(in) || ok && json.Valid(in) && string(raw) != string(bytes.TrimSpace(in)) {
			t.Fatalf("%q: Raw %q, %v; json.Valid %v", in, raw, ok, json.Valid(in))
		}
		if !ok && json.Valid(in) && bytes.Count(in, []byte("["))+bytes.Count(in, []byte("{")) < maxDepth {
			t.Fatalf("%q: Raw refuses what json.Valid takes", in)
		}
		r = NewReader(in)
		if q, ok := r.Quoted(); ok && r.End() {
			var want string
			if err := json.Unmarshal(in, &want); err != nil || string(q) != `"`+want+`"` {
				t.Fatalf("%q: quoted %q, json.Unmarshal %q (error %v)", in, q, want, err)
			}
		}
		r = NewReader(in)
		if s, ok := r.String(); ok && r.End() {
			var want string
			if err := json.Unmarshal(in, &want); err != nil || s != want {
				t.Fatalf("%q: read %q, json.Unmarshal %q (error %v)", in, s, want, err)
			}
		}
	})
}

// TestReaderReadsTheUsualForms: the seeds json.Unmarshal reads are read
// here too (a reader that gives up on everything fails this).
func TestReaderReadsTheUsualForms(t *testing.T) {
	for _, s := range []string{`{"a":[1,-0.5e-7,true,false,null,{"b":"c"}],"a":2}`, `"\u003c\ud800\n é"`, ` [ 1 , 2 ] `, `{"\u00e9":1}`, `123456789012345678901234567890`} {
		r := NewReader([]byte(s))
		if _, ok := r.Value(); !ok || !r.End() {
			t.Errorf("%s: not read", s)
		}
	}
}

// TestQuotedReadsOnlyPlainStrings: Quoted gives a plain string with its
// quotes and refuses one with an escape, a control byte or a byte beyond
// ASCII, and anything that is not a string.
func TestQuotedReadsOnlyPlainStrings(t *testing.T) {
	r := NewReader([]byte(` "2026-12-03T17:00:00Z" ,`))
	if q, ok := r.Quoted(); !ok || string(q) != `"2026-12-03T17:00:00Z"` || r.Peek() != ',' {
		t.Errorf("Quoted() = %q, %v, then %q", q, ok, r.Peek())
	}
	for _, s := range []string{`"a\"b"`, "\"a\x01\"", `"é"`, `"open`, `12`, `null`} {
		r := NewReader([]byte(s))
		if q, ok := r.Quoted(); ok {
			t.Errorf("Quoted() read %q from %s", q, s)
		}
	}
}
