package jsonscan

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Reader reads JSON in one pass into the values json.Unmarshal makes, for
// the readers that decode askpoint's own structs by hand (the engine's
// message mirror). Each method reports false for anything it does not
// read exactly as json.Unmarshal would, invalid JSON among it: the caller
// then decodes the whole with json.Unmarshal instead, so a false costs a
// second decode, never a different value or error.
type Reader struct {
	b     []byte
	i     int
	depth int
}

// NewReader reads b.
func NewReader(b []byte) Reader { return Reader{b: b} }

// maxDepth is how deeply Value nests before it gives up (json.Unmarshal's
// own limit is far deeper: such a value is left to it).
const maxDepth = 200

func (r *Reader) space() {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// Peek is the first byte of the next value ('{', '[', '"', 'n' for null,
// ...), 0 at the end.
func (r *Reader) Peek() byte {
	r.space()
	if r.i < len(r.b) {
		return r.b[r.i]
	}
	return 0
}

// Null reads a null when one is next.
func (r *Reader) Null() bool {
	if r.Peek() == 'n' && r.i+4 <= len(r.b) && string(r.b[r.i:r.i+4]) == "null" {
		r.i += 4
		return true
	}
	return false
}

// End reports whether nothing but space is left.
func (r *Reader) End() bool {
	r.space()
	return r.i == len(r.b)
}

// Object reads an object, calling member with each member's name (as it
// is in the JSON, which member must read as a name without escapes: a
// name with one is reported false here) with the reader at its value,
// which member reads.
func (r *Reader) Object(member func(name []byte) bool) bool {
	return r.objectOf(false, member)
}

// objectOf reads an object as Object does; anyName takes any name in
// JSON's grammar (member gets it as it is in the JSON, escapes and all).
func (r *Reader) objectOf(anyName bool, member func(name []byte) bool) bool {
	if r.Peek() != '{' {
		return false
	}
	r.i++
	if r.Peek() == '}' {
		r.i++
		return true
	}
	for {
		if r.Peek() != '"' {
			return false
		}
		start := r.i + 1
		end := start
		if anyName {
			if !r.skipString() {
				return false
			}
			end = r.i - 1
		} else {
			for end < len(r.b) && r.b[end] != '"' && r.b[end] != '\\' && r.b[end] >= 0x20 && r.b[end] < utf8.RuneSelf {
				end++
			}
			if end >= len(r.b) || r.b[end] != '"' {
				return false
			}
		}
		r.i = end + 1
		if r.Peek() != ':' {
			return false
		}
		r.i++
		if !member(r.b[start:end]) {
			return false
		}
		switch r.Peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// Members reads an object whose members are named exactly as names
// names them (at most 64), each at most once, calling member with the
// index of each member's name and the reader at its value, which member
// reads. Any other name, or a name twice, is reported false: json.Unmarshal
// matches names in any letter case and lets a later member change an
// earlier one, which is left to it.
func (r *Reader) Members(names []string, member func(i int) bool) bool {
	var seen uint64
	return r.Object(func(name []byte) bool {
		for i, n := range names {
			if string(name) == n {
				if seen&(1<<i) != 0 {
					return false
				}
				seen |= 1 << i
				return member(i)
			}
		}
		return false
	})
}

// Array reads an array, calling elem with the reader at each element,
// which elem reads.
func (r *Reader) Array(elem func() bool) bool {
	if r.Peek() != '[' {
		return false
	}
	r.i++
	if r.Peek() == ']' {
		r.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch r.Peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return true
		default:
			return false
		}
	}
}

// String reads a string as json.Unmarshal reads it into a string: one
// with an escape or a byte of invalid UTF-8 through json.Unmarshal itself.
func (r *Reader) String() (string, bool) {
	if r.Peek() != '"' {
		return "", false
	}
	start := r.i + 1
	plain := true
	end := start
	for ; end < len(r.b); end++ {
		c := r.b[end]
		if c == '"' {
			break
		}
		if c < 0x20 {
			return "", false
		}
		if c == '\\' {
			plain = false
			end++
		} else if c >= utf8.RuneSelf {
			plain = false
		}
	}
	if end >= len(r.b) {
		return "", false
	}
	r.i = end + 1
	if plain || utf8.Valid(r.b[start:end]) && !hasBackslash(r.b[start:end]) {
		return string(r.b[start:end]), true
	}
	var s string
	if json.Unmarshal(r.b[start-1:end+1], &s) != nil {
		return "", false
	}
	return s, true
}

// Quoted reads a string that has no escape and only printable ASCII,
// and returns it with its quotes, a slice of the input (for a reader
// such as time.Time.UnmarshalJSON); any other string is reported false.
func (r *Reader) Quoted() ([]byte, bool) {
	if r.Peek() != '"' {
		return nil, false
	}
	for end := r.i + 1; end < len(r.b); end++ {
		switch c := r.b[end]; {
		case c == '"':
			q := r.b[r.i : end+1]
			r.i = end + 1
			return q, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
	}
	return nil, false
}

func hasBackslash(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// Strings reads an array of strings, or null (nil), as json.Unmarshal
// reads them into a []S; an element that is null is reported false.
func Strings[S ~string](r *Reader) ([]S, bool) {
	if r.Null() {
		return nil, true
	}
	out := []S{}
	ok := r.Array(func() bool {
		s, ok := r.String()
		out = append(out, S(s))
		return ok
	})
	return out, ok
}

// Objects reads an array of objects, or null (nil), as json.Unmarshal
// reads them into a []T of structs ([] an empty slice), each element by
// elem; an element that is not an object is reported false.
func Objects[T any](r *Reader, list *[]T, elem func(*T) bool) bool {
	if r.Null() {
		*list = nil
		return true
	}
	out := []T{}
	ok := r.Array(func() bool {
		if r.Peek() != '{' {
			return false
		}
		out = append(out, *new(T))
		return elem(&out[len(out)-1])
	})
	*list = out
	return ok
}

// Raw reads a value and returns its bytes, checked as JSON (its
// grammar, as json.Valid checks it) without building it.
func (r *Reader) Raw() ([]byte, bool) {
	r.space()
	start := r.i
	if !r.skip() {
		return nil, false
	}
	return r.b[start:r.i], true
}

// skip reads a value in JSON's grammar without building it.
func (r *Reader) skip() bool {
	switch r.Peek() {
	case '{':
		if r.depth++; r.depth > maxDepth {
			return false
		}
		ok := r.objectOf(true, func([]byte) bool { return r.skip() })
		r.depth--
		return ok
	case '[':
		if r.depth++; r.depth > maxDepth {
			return false
		}
		ok := r.Array(r.skip)
		r.depth--
		return ok
	case '"':
		return r.skipString()
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.literal("null")
	}
	end, ok := r.numberEnd()
	r.i = end
	return ok
}

// skipString reads a string in JSON's grammar (its escapes checked, its
// bytes beyond ASCII taken as they are, as json.Valid takes them).
func (r *Reader) skipString() bool {
	if r.Peek() != '"' {
		return false
	}
	for i := r.i + 1; i < len(r.b); i++ {
		switch c := r.b[i]; {
		case c == '"':
			r.i = i + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			i++
			if i >= len(r.b) {
				return false
			}
			switch r.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(r.b) {
					return false
				}
				for _, h := range r.b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return false
}

// Value reads a value as json.Unmarshal reads it into an any: objects as
// map[string]any (a name twice: its last value), arrays as []any, numbers
// as float64, strings, booleans, nil.
func (r *Reader) Value() (any, bool) {
	switch r.Peek() {
	case '{':
		return r.object()
	case '[':
		if r.depth++; r.depth > maxDepth {
			return nil, false
		}
		out := []any{}
		ok := r.Array(func() bool {
			v, ok := r.Value()
			out = append(out, v)
			return ok
		})
		r.depth--
		return out, ok
	case '"':
		return r.String()
	case 't':
		return true, r.literal("true")
	case 'f':
		return false, r.literal("false")
	case 'n':
		return nil, r.literal("null")
	}
	return r.number()
}

// Map reads an object, or null (nil), as json.Unmarshal reads it into a
// map[string]any.
func (r *Reader) Map() (map[string]any, bool) {
	if r.Null() {
		return nil, true
	}
	if r.Peek() != '{' {
		return nil, false
	}
	return r.object()
}

func (r *Reader) object() (map[string]any, bool) {
	if r.depth++; r.depth > maxDepth {
		return nil, false
	}
	defer func() { r.depth-- }()
	r.i++ // '{'
	out := map[string]any{}
	if r.Peek() == '}' {
		r.i++
		return out, true
	}
	for {
		k, ok := r.String()
		if !ok || r.Peek() != ':' {
			return nil, false
		}
		r.i++
		v, ok := r.Value()
		if !ok {
			return nil, false
		}
		out[k] = v
		switch r.Peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return out, true
		default:
			return nil, false
		}
	}
}

func (r *Reader) literal(lit string) bool {
	if r.i+len(lit) <= len(r.b) && string(r.b[r.i:r.i+len(lit)]) == lit {
		r.i += len(lit)
		return true
	}
	return false
}

// number reads a number in JSON's grammar as a float64 (strconv.ParseFloat,
// as json.Unmarshal reads it; one out of float64's range is reported false).
func (r *Reader) number() (any, bool) {
	start := r.i
	i, ok := r.numberEnd()
	if !ok {
		return nil, false
	}
	f, err := strconv.ParseFloat(string(r.b[start:i]), 64)
	if err != nil {
		return nil, false
	}
	r.i = i
	return f, true
}

// numberEnd is where the number at the reader ends, in JSON's grammar.
func (r *Reader) numberEnd() (int, bool) {
	i := r.i
	digits := func() bool {
		n := i
		for i < len(r.b) && r.b[i] >= '0' && r.b[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(r.b) && r.b[i] == '-' {
		i++
	}
	switch {
	case i < len(r.b) && r.b[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(r.b) && r.b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(r.b) && (r.b[i] == 'e' || r.b[i] == 'E') {
		i++
		if i < len(r.b) && (r.b[i] == '+' || r.b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

// StringOrNull reads a string into *s as json.Unmarshal does, or a null,
// which leaves *s as it is.
func (r *Reader) StringOrNull(s *string) bool {
	if r.Null() {
		return true
	}
	v, ok := r.String()
	*s = v
	return ok
}

// Time reads a time as json.Unmarshal reads it into a time.Time (through
// time.Time.UnmarshalJSON), a null leaving *t as it is; a string with an
// escape or beyond ASCII is reported false.
func (r *Reader) Time(t *time.Time) bool {
	if r.Null() {
		return true
	}
	q, ok := r.Quoted()
	return ok && t.UnmarshalJSON(q) == nil
}

// RawMessage reads a value into *m as json.Unmarshal reads it into a
// json.RawMessage: a copy of its bytes, null among them.
func (r *Reader) RawMessage(m *json.RawMessage) bool {
	raw, ok := r.Raw()
	if !ok {
		return false
	}
	*m = append((*m)[:0], raw...)
	return true
}

// Int reads an integer as json.Unmarshal reads it into an int, a null
// leaving *n as it is; anything json.Unmarshal refuses into an int (a
// fraction, an exponent, an overflow) is reported false.
func (r *Reader) Int(n *int) bool {
	if r.Null() {
		return true
	}
	raw, ok := r.Raw()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(string(raw), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*n = int(v)
	return true
}

// Bool reads a boolean as json.Unmarshal does, a null leaving *v as it is.
func (r *Reader) Bool(v *bool) bool {
	if r.Null() {
		return true
	}
	switch {
	case r.literal("true"):
		*v = true
	case r.literal("false"):
		*v = false
	default:
		return false
	}
	return true
}
