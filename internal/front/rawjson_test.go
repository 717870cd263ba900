package front

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzEachMember: for any valid JSON object, the in-place walk finds the
// members a decoder finds, the last of each key with its value's bytes;
// and for any valid array, its elements.
func FuzzEachMember(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { "a" : 1 , "b":[1,{"c":"]}"}], "d":"x\"y" } `,
		`{"a\u0062":true,"ab":null,"e":{"f":{"g":[[]]}},"h":-1.5e3}`,
		`{"k":"v","k":"w"}`, `{"s":"\\","t":"\\\"","u":[]}`,
		`[1,"a",{"b":2},[3],null]`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		switch kind(raw) {
		case '{':
			var want map[string]json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			got := map[string][]byte{}
			_ = eachMember(raw, func(k string, v []byte) error { got[k] = v; return nil })
			if len(got) != len(want) {
				t.Fatalf("%s: %d members walked, %d decoded", raw, len(got), len(want))
			}
			for k, w := range want {
				if g, ok := got[k]; !ok || !bytes.Equal(bytes.TrimSpace(g), bytes.TrimSpace(w)) {
					t.Fatalf("%s: member %q walked as %q, decoded as %q", raw, k, g, w)
				}
			}
		case '[':
			var want []json.RawMessage
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			var got [][]byte
			_ = eachElement(raw, func(_ int, v []byte) error { got = append(got, v); return nil })
			if len(got) != len(want) {
				t.Fatalf("%s: %d elements walked, %d decoded", raw, len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(bytes.TrimSpace(got[i]), bytes.TrimSpace(want[i])) {
					t.Fatalf("%s: element %d walked as %q, decoded as %q", raw, i, got[i], want[i])
				}
			}
		}
	})
}
