package front

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// A JSON object that names one member twice is read by Go's decoder (and
// the SDK's) as its last: {"method":"GetTask","method":"CancelTask"} ran
// CancelTask, while a check that read the first let it through. The
// decoder also matches member names in any letter case, so "taskId" and
// "TaskId" in one protocol object are the same member twice. The front
// refuses both before anything reads the request: a name twice anywhere,
// and two names that differ only in letter case outside the caller's own
// JSON (metadata and data, which are kept as they are sent, so that
// {"a":1,"A":2} there means two members).

// The members that hold the caller's own JSON (in any letter case, as a
// decoder reads them).
var metadataName, dataName = []byte("metadata"), []byte("data")

// maxListedKeys is how many member names of one object are compared one
// by one; an object with more is checked with a map.
const maxListedKeys = 16

// memberFrame is an object or array being scanned.
type memberFrame struct {
	name    []byte // the member name this value sits under (nil in an array or at the top)
	array   bool
	index   int               // arrays: the element being read
	caller  bool              // inside the caller's own JSON (metadata, data)
	wantKey bool              // objects: the next string is a member name
	last    []byte            // objects: the last member name read
	keys    int               // objects: where the names read start in the scan's list
	seen    map[string][]byte // objects with many names: the names read, by fold
}

// checkMembers refuses a JSON value (valid JSON) in which an object names
// a member twice, as kind (a2a.ErrInvalidParams; a2a.ErrInvalidRequest for
// a JSON-RPC envelope), naming the object: where names the whole value
// ("body"; "" for a JSON-RPC request, whose members are named on their
// own: "params.message"). envelope is the kind for a member of the whole
// value itself.
func checkMembers(raw []byte, where string, kind, envelope error) error {
	// The open containers, and the member names read in each open object
	// with few (one list for all), on the stack for a usual request.
	var stackArr [16]memberFrame
	var namesArr [32][]byte
	stack, names := stackArr[:0], namesArr[:0]
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			f := memberFrame{array: c == '[', wantKey: c == '{', keys: len(names)}
			if n := len(stack); n > 0 {
				p := &stack[n-1]
				f.caller = p.caller
				if !p.array {
					f.name = p.last
					f.caller = f.caller || bytes.EqualFold(p.last, metadataName) || bytes.EqualFold(p.last, dataName)
				}
			}
			stack = append(stack, f)
		case '}', ']':
			names = names[:stack[len(stack)-1].keys]
			stack = stack[:len(stack)-1]
		case ',':
			if f := &stack[len(stack)-1]; f.array {
				f.index++
			} else {
				f.wantKey = true
			}
		case '"':
			end := stringEnd(raw, i)
			if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].wantKey {
				f := &stack[n-1]
				key := raw[i+1 : end-1]
				if bytes.IndexByte(key, '\\') >= 0 {
					key = []byte(unquote(raw[i:end]))
				}
				var prev []byte
				var dup bool
				if names, prev, dup = f.add(names, key); dup {
					if len(stack) == 1 {
						kind = envelope
					}
					return a2a.NewError(kind, duplicateMessage(stack, where, prev, key))
				}
				f.wantKey, f.last = false, key
			}
			i = end - 1
		}
	}
	return nil
}

// add records member name key of f, the innermost object, whose names
// are names[f.keys:] while it has few; it reports the name read before
// that is the same member, if one is.
func (f *memberFrame) add(names [][]byte, key []byte) ([][]byte, []byte, bool) {
	if f.seen == nil {
		same := bytes.EqualFold
		if f.caller {
			same = bytes.Equal
		}
		for _, k := range names[f.keys:] {
			if same(k, key) {
				return names, k, true
			}
		}
		if len(names)-f.keys < maxListedKeys {
			return append(names, key), nil, false
		}
		f.seen = make(map[string][]byte, 2*maxListedKeys)
		for _, k := range names[f.keys:] {
			f.seen[f.fold(k)] = k
		}
		names = names[:f.keys]
	}
	k := f.fold(key)
	if prev, ok := f.seen[k]; ok {
		return names, prev, true
	}
	f.seen[k] = key
	return names, nil, false
}

// fold is the map key of member name k: as it is in caller JSON, in
// lower case elsewhere.
func (f *memberFrame) fold(k []byte) string {
	if f.caller {
		return string(k)
	}
	return string(bytes.ToLower(bytes.ToUpper(k))) // as EqualFold: K (Kelvin) is k, ſ is s
}

func duplicateMessage(stack []memberFrame, where string, prev, key []byte) string {
	var b strings.Builder
	b.WriteString(where)
	for i, f := range stack[1:] {
		if p := stack[i]; p.array {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
		} else {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.Write(f.name)
		}
	}
	obj := b.String()
	if obj == "" {
		obj = "the request"
	}
	q := func(s []byte) string { out, _ := json.Marshal(string(s)); return string(out) }
	if bytes.Equal(prev, key) {
		return fmt.Sprintf("%s has the member %s twice: send each member once (a JSON reader takes only one of them)", obj, q(key))
	}
	return fmt.Sprintf("%s has the members %s and %s, which name one field (member names are read in any letter case): send it once", obj, q(prev), q(key))
}

// checkRESTBody refuses an HTTP+JSON request body that is not JSON, or
// that names a member twice.
func checkRESTBody(body []byte) error {
	if !utf8.Valid(body) {
		return errNotUTF8(body)
	}
	if !json.Valid(body) {
		var v any
		err := json.Unmarshal(body, &v)
		return a2a.NewError(a2a.ErrParseError, fmt.Sprintf("request body is not valid JSON: %v", err))
	}
	return checkMembers(body, "body", a2a.ErrInvalidParams, a2a.ErrInvalidParams)
}
