// Package jsonwrite appends JSON in the very bytes encoding/json's Marshal
// writes (HTML-safe, maps in key order, its number forms), for the values
// askpoint writes on every request: strings, generic JSON values and types
// that append themselves (Appender). Anything else goes through
// encoding/json, so that every value comes out as json.Marshal writes it,
// errors included. jsonwrite_test.go holds each function to json.Marshal.
package jsonwrite

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// Appender is a value that appends its own JSON: the bytes json.Marshal
// writes for it, or the error json.Marshal gives. Only the types that
// embed Own (or have its method) are Appenders, so that a value of
// another type that happens to have an AppendJSON method goes through
// json.Marshal, as every such value did before.
type Appender interface {
	AppendJSON(b []byte) ([]byte, error)
	jsonwriteAppender()
}

// Own marks a type, by being embedded in it, as an Appender of askpoint's.
type Own struct{}

func (Own) jsonwriteAppender() {}

const hexDigits = "0123456789abcdef"

// String appends s as encoding/json writes a string: quoted, with '"' and
// '\' escaped, control characters as \b \f \n \r \t or \u00XX, '<', '>' and
// '&' as \u003c \u003e \u0026, U+2028 and U+2029 as \u2028 and \u2029, and
// each byte of invalid UTF-8 as \ufffd.
func String(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Strings appends a list of strings, null when it is nil.
func Strings[S ~string](b []byte, list []S) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = String(b, string(s))
	}
	return append(b, ']')
}

// Bytes appends p as encoding/json writes a []byte: base64 (standard, with
// padding) in a string, null when p is nil.
func Bytes(b []byte, p []byte) []byte {
	if p == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, p)
	return append(b, '"')
}

// Float appends f as encoding/json writes a float64: the shortest decimal
// that reads back as f, in exponent form below 1e-6 and from 1e21 on (its
// exponent without a leading zero). NaN and the infinities are refused, as
// json.Marshal refuses them.
func Float(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return marshal(b, f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// Value appends v as json.Marshal writes it. Generic JSON values (nil,
// bool, float64, string, map[string]any, []any, as json.Unmarshal makes
// them), lists of strings and Appenders are written here; any other value,
// a json.RawMessage among them (encoding/json checks and compacts it),
// through json.Marshal.
func Value(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case string:
		return String(b, x), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case float64:
		return Float(b, x)
	case map[string]any:
		return Object(b, x)
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = Value(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []string:
		return Strings(b, x), nil
	case map[string]string:
		return object(b, x, func(b []byte, s string) ([]byte, error) { return String(b, s), nil })
	case Appender:
		return x.AppendJSON(b)
	}
	return marshal(b, v)
}

// Object appends m as json.Marshal writes a map[string]any: its members
// in the order of their keys, null when m is nil.
func Object(b []byte, m map[string]any) ([]byte, error) {
	return object(b, m, Value)
}

// object appends m, its values written by value, as json.Marshal writes a
// map with string keys.
func object[V any](b []byte, m map[string]V, value func([]byte, V) ([]byte, error)) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var keysArr [16]string
	keys := sortedKeys(keysArr[:0], m)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = String(b, k)
		b = append(b, ':')
		var err error
		if b, err = value(b, m[k]); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func sortedKeys[V any](keys []string, m map[string]V) []string {
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// marshal appends json.Marshal of v.
func marshal(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, out...), nil
}

// Encoded is JSON in the form json.Marshal writes (bytes it wrote for
// some value): Value appends it as it is, and encoding/json, which checks
// and compacts what a MarshalJSON returns, leaves it as it is too. Nil is
// null, as for a json.RawMessage.
type Encoded []byte

func (Encoded) jsonwriteAppender() {}

func (e Encoded) AppendJSON(b []byte) ([]byte, error) {
	if e == nil {
		return append(b, "null"...), nil
	}
	return append(b, e...), nil
}

func (e Encoded) MarshalJSON() ([]byte, error) {
	if e == nil {
		return []byte("null"), nil
	}
	return e, nil
}

// Time appends t as time.Time.MarshalJSON writes it: RFC 3339 with
// nanoseconds as needed, quoted; an error for a year it cannot write.
func Time(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, err
	}
	return append(b, '"'), nil
}

// RawAsIs reports whether json.Marshal writes raw (a json.RawMessage,
// not empty) as it is: valid JSON with nothing it would compact or escape
// (space, '<', '>', '&', and any byte beyond ASCII, for U+2028 and
// U+2029). A caller writes raw itself only then.
func RawAsIs(raw []byte) bool {
	for _, c := range raw {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf:
			return false
		}
	}
	return len(raw) > 0 && json.Valid(raw)
}
