package front

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// repeatedMember is the reference checkMembers is held to: a walk of the
// decoder's tokens that says whether some object names one member twice
// (in any letter case outside metadata and data).
func repeatedMember(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj, caller, wantKey bool
		last                 string
		seen                 map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			panic(err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				f := &frame{obj: v == '{', wantKey: v == '{', seen: map[string]bool{}}
				if top != nil {
					f.caller = top.caller || (top.obj && (strings.EqualFold(top.last, "metadata") || strings.EqualFold(top.last, "data")))
					top.wantKey = top.obj
				}
				stack = append(stack, f)
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.obj && top.wantKey {
				k := v
				if !top.caller {
					k = strings.ToLower(strings.ToUpper(k))
				}
				if top.seen[k] {
					return true
				}
				top.seen[k], top.last, top.wantKey = true, v, false
				continue
			}
			if top != nil {
				top.wantKey = top.obj
			}
		default:
			if top != nil {
				top.wantKey = top.obj
			}
		}
	}
}

// FuzzCheckMembers: checkMembers refuses exactly the valid JSON in which
// the reference finds a member named twice.
func FuzzCheckMembers(f *testing.F) {
	for _, seed := range []string{
		`{"method":"GetTask","method":"CancelTask"}`, `{"a":1,"A":2}`, `{"metadata":{"a":1,"A":2}}`,
		`{"data":{"a":{"b":1,"B":2}}}`, `{"x":[{"a":1},{"a":2}]}`, `{"a\u0062":1,"ab":2}`, `{"s":"{\"a\":1,\"a\":2}"}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"K3":0}`,
		`[]`, `"x"`, `1`, `{"a":{"b":{}},"c":{"b":{}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		err := checkMembers(raw, "body", a2a.ErrInvalidParams, a2a.ErrInvalidParams)
		if want := repeatedMember(raw); (err != nil) != want {
			t.Fatalf("%s: checkMembers = %v, want a refusal: %v", raw, err, want)
		}
	})
}

func TestCheckMembersNamesTheObject(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"jsonrpc":"2.0","method":"a","method":"b"}`, `the request has the member "method" twice`},
		{`{"params":{"message":{"parts":[{"text":"a"},{"data":{"x":1,"x":2}}]}}}`, `params.message.parts[1].data has the member "x" twice`},
		{`{"params":{"id":"a","Id":"b"}}`, `params has the members "id" and "Id"`},
	} {
		err := checkMembers([]byte(tc.raw), "", a2a.ErrInvalidParams, a2a.ErrInvalidRequest)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.raw, err, tc.want)
		}
		if top := strings.HasPrefix(tc.want, "the request"); top != errors.Is(err, a2a.ErrInvalidRequest) {
			t.Errorf("%s: %v; want invalid request only for the envelope's own members", tc.raw, err)
		}
	}
}
