package question

import (
	"bytes"
	"encoding/json"

	"github.com/askpoint/askpoint/internal/jsonscan"
)

// An answer's data part is json.Marshal's encoding of the decoded value:
// compact, its object keys sorted. The readers here take such bytes apart
// in place instead of decoding them into maps of raw values, so that the
// answer is decoded once (for the schema) however many of its members
// Parse, Validate and Asked look at. Each reports false for anything that
// is not of that form, and its caller then does what it did before.

// member is one member of an object: its key as written between the
// quotes, and its value's bytes.
type member struct{ key, val []byte }

// plainMembers splits raw, a compact JSON object, into its members,
// appended to buf. It reports false unless every key is printable ASCII
// that JSON writes as it is (no '"', '\\', '<', '>' or '&', which
// json.Marshal would escape), the keys strictly ascend (json.Marshal's order
// for a map, and no key twice) and nothing stands outside a string that a
// compact encoding does not hold. Values are delimited, not validated.
func plainMembers(raw []byte, buf []member) ([]member, bool) {
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return nil, false
	}
	if len(raw) == 2 {
		return buf, true
	}
	var prev []byte
	for i := 1; ; {
		if raw[i] != '"' {
			return nil, false
		}
		k := i + 1
		for ; k < len(raw) && raw[k] != '"'; k++ {
			if c := raw[k]; c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&' {
				return nil, false
			}
		}
		if k+1 >= len(raw) || raw[k+1] != ':' {
			return nil, false
		}
		key := raw[i+1 : k]
		if prev != nil && bytes.Compare(prev, key) >= 0 {
			return nil, false
		}
		prev = key
		end := skipCompact(raw, k+2)
		if end < 0 || end >= len(raw) {
			return nil, false
		}
		buf = append(buf, member{key: key, val: raw[k+2 : end]})
		switch {
		case raw[end] == ',':
			i = end + 1
		case end == len(raw)-1:
			return buf, true
		default:
			return nil, false
		}
	}
}

// membersObject is what json.Marshal writes for the object of the members
// of ms that keep keeps (size: about how long it is), ms as plainMembers
// split them; false when keep says a kept member is not as json.Marshal
// would write it.
func membersObject(ms []member, size int, keep func(member) (keep, ok bool)) ([]byte, bool) {
	out := make([]byte, 0, size)
	out = append(out, '{')
	for _, m := range ms {
		k, ok := keep(m)
		if !ok {
			return nil, false
		}
		if !k {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, '"')
		out = append(out, m.key...)
		out = append(out, '"', ':')
		out = append(out, m.val...)
	}
	return append(out, '}'), true
}

// skipCompact returns where the compact JSON value starting at raw[i] ends,
// or -1 when there is none or whitespace stands outside its strings.
func skipCompact(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return jsonscan.StringEnd(raw, i)
	case '{', '[':
		depth := 0
		for ; i < len(raw); i++ {
			switch raw[i] {
			case '"':
				if i = jsonscan.StringEnd(raw, i); i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case ' ', '\t', '\r', '\n':
				return -1
			}
		}
		return -1
	}
	j := i
	for ; j < len(raw) && raw[j] != ',' && raw[j] != '}' && raw[j] != ']'; j++ {
		if c := raw[j]; c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"' {
			return -1
		}
	}
	if j == i {
		return -1
	}
	return j
}

// decodeCompact decodes valid, compact JSON as a json.Decoder with
// UseNumber decodes it (map[string]any, []any, string, json.Number, bool,
// nil), reporting false for anything else.
func decodeCompact(raw []byte) (any, bool) {
	v, n, ok := decodeValue(raw)
	if !ok || n != len(raw) {
		return nil, false
	}
	return v, true
}

func decodeValue(raw []byte) (any, int, bool) {
	if len(raw) == 0 {
		return nil, 0, false
	}
	switch c := raw[0]; {
	case c == '{':
		obj := make(map[string]any)
		if len(raw) > 1 && raw[1] == '}' {
			return obj, 2, true
		}
		for i := 1; ; {
			if i >= len(raw) || raw[i] != '"' {
				return nil, 0, false
			}
			key, n, ok := decodeString(raw[i:])
			if !ok {
				return nil, 0, false
			}
			i += n
			if i >= len(raw) || raw[i] != ':' {
				return nil, 0, false
			}
			i++
			v, n, ok := decodeValue(raw[i:])
			if !ok {
				return nil, 0, false
			}
			obj[key] = v
			var more bool
			if i, more, ok = afterElement(raw, i+n, '}'); !ok {
				return nil, 0, false
			} else if !more {
				return obj, i, true
			}
		}
	case c == '[':
		arr := make([]any, 0)
		if len(raw) > 1 && raw[1] == ']' {
			return arr, 2, true
		}
		for i := 1; ; {
			v, n, ok := decodeValue(raw[i:])
			if !ok {
				return nil, 0, false
			}
			arr = append(arr, v)
			var more bool
			if i, more, ok = afterElement(raw, i+n, ']'); !ok {
				return nil, 0, false
			} else if !more {
				return arr, i, true
			}
		}
	case c == '"':
		s, n, ok := decodeString(raw)
		return s, n, ok
	case bytes.HasPrefix(raw, []byte("true")):
		return true, 4, true
	case bytes.HasPrefix(raw, []byte("false")):
		return false, 5, true
	case bytes.HasPrefix(raw, []byte("null")):
		return nil, 4, true
	case c == '-' || (c >= '0' && c <= '9'):
		n := 1
		for n < len(raw) && isNumberByte(raw[n]) {
			n++
		}
		if !json.Valid(raw[:n]) {
			return nil, 0, false
		}
		return json.Number(raw[:n]), n, true
	}
	return nil, 0, false
}

// afterElement reads what follows an object's member or an array's
// element at raw[i]: a comma (more, next past it) or close (next past it).
func afterElement(raw []byte, i int, close byte) (next int, more, ok bool) {
	switch {
	case i >= len(raw):
		return 0, false, false
	case raw[i] == ',':
		return i + 1, true, true
	case raw[i] == close:
		return i + 1, false, true
	}
	return 0, false, false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// decodeString decodes the JSON string at the start of raw: in place when
// it holds no escape and nothing a decoder would replace, else through
// encoding/json.
func decodeString(raw []byte) (string, int, bool) {
	plain := true
	i := 1
	for ; i < len(raw) && raw[i] != '"'; i++ {
		if c := raw[i]; c == '\\' {
			plain = false
			i++
		} else if c < 0x20 || c >= 0x80 {
			plain = false
		}
	}
	if i >= len(raw) {
		return "", 0, false
	}
	if plain {
		return string(raw[1:i]), i + 1, true
	}
	var s string
	if json.Unmarshal(raw[:i+1], &s) != nil {
		return "", 0, false
	}
	return s, i + 1, true
}
