package front

import (
	"bytes"
	"encoding/json"
	"strings"
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

// TestCheckFieldsNamesTheRefusedField: a refused identifier or role is
// named by its place in the request (the walk that finds it names no
// field; the second, for the error, does), and what is fine passes.
func TestCheckFieldsNamesTheRefusedField(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"message":{"messageId":"m-1","role":"ROLE_USER","referenceTaskIds":["t-1","t\u0007"]}}`,
			`params.message.referenceTaskIds[1] holds the control character U+0007`},
		{`{"message":{"messageId":"` + strings.Repeat("x", 65) + `"}}`, `params.message.messageId is 65 bytes long`},
		{`{"message":{"messageId":"m-1","role":"ROLE_ROBOT"}}`, `params.message.role "ROLE_ROBOT" is not a message role`},
		{`{"message":{"messageId":"m-1","role":"ROLE_AGENT","referenceTaskIds":["t-1"]},"configuration":{"id":"c"}}`, ``},
	} {
		err := checkFields([]byte(tc.raw), "params", 64)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("checkFields(%s) = %v, want nil", tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("checkFields(%s) = %v, want an error with %q", tc.raw, err, tc.want)
		}
	}
}
