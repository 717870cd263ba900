package front

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/askpoint/askpoint/internal/jsonscan"
)

// A walk over JSON that is known to be valid (json.Valid), reading each
// member's value as a slice of the input: the front's checks look at a few
// members of a request and leave the rest, and decoding the whole request
// into maps copied every level of it once per level.

// eachMember calls fn with each member of obj (a valid JSON object, with
// nothing but space around it), in order: its key, unescaped, and its
// value, a slice of obj. It stops at fn's first error.
func eachMember(obj []byte, fn func(key string, val []byte) error) error {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		end := stringEnd(obj, i)
		key := unquote(obj[i:end])
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // the colon
		vend := valueEnd(obj, i)
		if err := fn(key, obj[i:vend]); err != nil {
			return err
		}
		i = skipSpace(obj, vend)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return nil
}

// eachElement calls fn with each element of arr (a valid JSON array).
func eachElement(arr []byte, fn func(i int, val []byte) error) error {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	i = skipSpace(arr, i+1)
	for n := 0; i < len(arr) && arr[i] != ']'; n++ {
		vend := valueEnd(arr, i)
		if err := fn(n, arr[i:vend]); err != nil {
			return err
		}
		i = skipSpace(arr, vend)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i] ('"'),
// or len(b) for one not terminated (b is valid JSON: never).
func stringEnd(b []byte, i int) int {
	if end := jsonscan.StringEnd(b, i); end >= 0 {
		return end
	}
	return len(b)
}

// valueEnd is the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for i < len(b) && bytes.IndexByte([]byte(",}] \t\r\n"), b[i]) < 0 {
		i++
	}
	return i
}

// unquote is the string a JSON string literal holds.
func unquote(lit []byte) string {
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(lit, &s)
	return s
}

// kind is the first byte of a JSON value: '{', '[', '"', 'n' (null), or
// another literal's.
func kind(val []byte) byte {
	if i := skipSpace(val, 0); i < len(val) {
		return val[i]
	}
	return 0
}

// memberOf is the value of obj's last member named name (nil when it has
// none); ok is false when obj is not a JSON object. obj is valid JSON (a
// body checkEnvelope or checkRESTBody took, or a member of one).
func memberOf(obj []byte, name string) (val []byte, ok bool) {
	if kind(obj) != '{' {
		return nil, false
	}
	_ = eachMember(obj, func(k string, v []byte) error {
		if k == name {
			val = v
		}
		return nil
	})
	return val, true
}
