package grpcfront

import (
	"encoding/base64"
	"errors"
	"math"
	"strconv"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The gRPC replies of SendMessage, GetTask and CancelTask are written from
// the JSON the JSON-RPC front writes for the same task (engine.WriteTaskJSON:
// the stored entries this node encoded, as they are), turned into the
// protobuf wire form of lf.a2a.v1 by the functions below, without building
// the SDK's values in between (a2a.Task -> pbconv -> a2apb.Task, whose data
// parts and metadata are google.protobuf.Struct trees of their own).
//
// What comes out is what proto.Marshal writes, with Deterministic set, for
// pbconv's conversion of the task that json.Unmarshal reads from the same
// JSON (wire_test.go holds every field, task state and part kind to that, byte
// for byte): the fields in the order of their numbers (a oneof after the
// other fields), zero scalars left out, oneof members and map entries' keys
// and values always written, the
// members of a JSON object in the order the JSON has them (the encoder
// writes a map's keys sorted, as Deterministic does). Anything this reading
// would not decode as json.Unmarshal does, or that pbconv refuses or would
// read in a way of its own, is errFallback, and the reply is made the SDK's
// way instead: unknown or repeated member names, a value of the wrong JSON
// type, null where a list holds messages, a part without exactly one
// content, a data part that is not an object, escapes in raw bytes, text
// that is not UTF-8. See docs/decisions/0170-grpc-replies-from-stored-bytes.md.

// errFallback says the JSON holds something only the SDK's conversion should
// answer.
var errFallback = errors.New("grpcfront: reply not written from its JSON")

// wireBuf is protobuf wire bytes being written.
type wireBuf struct{ b []byte }

// open starts a length-delimited field num; close(mark) ends it.
func (w *wireBuf) open(num protowire.Number) int {
	w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
	w.b = append(w.b, 0)
	return len(w.b)
}

// close writes the length of the field open returned mark for, moving its
// content up when the length takes more than the one byte kept for it.
func (w *wireBuf) close(mark int) {
	n := len(w.b) - mark
	if n < 0x80 {
		w.b[mark-1] = byte(n)
		return
	}
	k := protowire.SizeVarint(uint64(n))
	w.b = append(w.b, make([]byte, k-1)...)
	copy(w.b[mark-1+k:], w.b[mark:mark+n])
	protowire.AppendVarint(w.b[:mark-1], uint64(n))
}

func (w *wireBuf) varint(num protowire.Number, v uint64) {
	w.b = protowire.AppendTag(w.b, num, protowire.VarintType)
	w.b = protowire.AppendVarint(w.b, v)
}

// Task writes the lf.a2a.v1.Task of the task JSON b.
func (w *wireBuf) Task(b []byte) error {
	var sp [6][]byte
	if err := members(b, taskNames, sp[:]); err != nil {
		return err
	}
	if err := w.stringField(1, sp[0]); err != nil {
		return err
	}
	if err := w.stringField(2, sp[1]); err != nil {
		return err
	}
	// pbconv always writes the status, empty or not.
	m := w.open(3)
	if err := w.status(sp[2]); err != nil {
		return err
	}
	w.close(m)
	if err := w.messages(4, sp[3], (*wireBuf).artifact, true); err != nil {
		return err
	}
	if err := w.messages(5, sp[4], (*wireBuf).message, true); err != nil {
		return err
	}
	return w.structField(6, sp[5])
}

var (
	taskNames     = []string{"id", "contextId", "status", "artifacts", "history", "metadata"}
	statusNames   = []string{"state", "message", "timestamp"}
	messageNames  = []string{"messageId", "contextId", "taskId", "role", "parts", "metadata", "extensions", "referenceTaskIds"}
	partNames     = []string{"text", "raw", "url", "data", "metadata", "filename", "mediaType"}
	artifactNames = []string{"artifactId", "name", "description", "parts", "metadata", "extensions"}
)

// status writes the fields of a TaskStatus (absent or null: none).
func (w *wireBuf) status(b []byte) error {
	if isNull(b) {
		return nil
	}
	var sp [3][]byte
	if err := members(b, statusNames, sp[:]); err != nil {
		return err
	}
	if err := w.enumField(1, sp[0], a2apb.TaskState_value); err != nil {
		return err
	}
	if !isNull(sp[1]) {
		m := w.open(2)
		if err := w.message(sp[1]); err != nil {
			return err
		}
		w.close(m)
	}
	if isNull(sp[2]) {
		return nil
	}
	s, esc, err := str(sp[2])
	if err != nil || esc {
		return errFallback
	}
	t, err := time.Parse(time.RFC3339Nano, unsafe.String(unsafe.SliceData(s), len(s)))
	if err != nil {
		return errFallback
	}
	m := w.open(3)
	if sec := t.Unix(); sec != 0 {
		w.varint(1, uint64(sec))
	}
	if ns := t.Nanosecond(); ns != 0 {
		w.varint(2, uint64(ns))
	}
	w.close(m)
	return nil
}

// message writes the fields of a Message.
func (w *wireBuf) message(b []byte) error {
	var sp [8][]byte
	if err := members(b, messageNames, sp[:]); err != nil {
		return err
	}
	for i := range 3 { // messageId, contextId, taskId
		if err := w.stringField(protowire.Number(i+1), sp[i]); err != nil {
			return err
		}
	}
	if err := w.enumField(4, sp[3], roleValue); err != nil {
		return err
	}
	if err := w.messages(5, sp[4], (*wireBuf).part, false); err != nil {
		return err
	}
	if err := w.structField(6, sp[5]); err != nil {
		return err
	}
	if err := w.strings(7, sp[6]); err != nil {
		return err
	}
	return w.strings(8, sp[7])
}

// roleValue are the roles pbconv maps (toProtoRole); any other is
// ROLE_UNSPECIFIED.
var roleValue = map[string]int32{"ROLE_USER": int32(a2apb.Role_ROLE_USER), "ROLE_AGENT": int32(a2apb.Role_ROLE_AGENT)}

// artifact writes the fields of an Artifact.
func (w *wireBuf) artifact(b []byte) error {
	var sp [6][]byte
	if err := members(b, artifactNames, sp[:]); err != nil {
		return err
	}
	for i := range 3 { // artifactId, name, description
		if err := w.stringField(protowire.Number(i+1), sp[i]); err != nil {
			return err
		}
	}
	if err := w.messages(4, sp[3], (*wireBuf).part, false); err != nil {
		return err
	}
	if err := w.structField(5, sp[4]); err != nil {
		return err
	}
	return w.strings(6, sp[5])
}

// part writes the fields of a Part: exactly one content, as a2a.Part's
// UnmarshalJSON requires (an empty url is none), a data part an object, as
// pbconv requires.
func (w *wireBuf) part(b []byte) error {
	var sp [7][]byte
	if err := members(b, partNames, sp[:]); err != nil {
		return err
	}
	content := -1
	for i := range 4 {
		if isNull(sp[i]) || (i == 2 && string(sp[i]) == `""`) {
			continue
		}
		if content >= 0 {
			return errFallback
		}
		content = i
	}
	if content < 0 || (content == 3 && firstByte(sp[3]) != '{') {
		return errFallback
	}
	// proto writes a message's oneof after its other fields.
	if err := w.structField(5, sp[4]); err != nil {
		return err
	}
	if err := w.stringField(6, sp[5]); err != nil {
		return err
	}
	if err := w.stringField(7, sp[6]); err != nil {
		return err
	}
	switch content {
	case 0, 2: // text, url: written even when empty (a oneof member)
		return w.stringAlways(protowire.Number(content+1), sp[content])
	case 1: // raw, base64 as encoding/json reads []byte
		s, esc, err := str(sp[1])
		if err != nil || esc {
			return errFallback
		}
		m := w.open(2)
		if w.b, err = base64.StdEncoding.AppendDecode(w.b, s); err != nil {
			return errFallback
		}
		w.close(m)
	default: // data: a Value holding the Struct
		m := w.open(4)
		sm := w.open(5)
		if err := w.structFields(sp[3]); err != nil {
			return err
		}
		w.close(sm)
		w.close(m)
	}
	return nil
}

// messages writes each element of the JSON array b as field num, with
// write; null (or absent) writes none. A null element is an empty message,
// as proto writes a nil one (pbconv leaves a nil artifact or message nil),
// unless nullOK is false (a null part, which pbconv cannot convert).
func (w *wireBuf) messages(num protowire.Number, b []byte, write func(*wireBuf, []byte) error, nullOK bool) error {
	if isNull(b) {
		return nil
	}
	return elements(b, func(e []byte) error {
		m := w.open(num)
		if isNull(e) {
			if !nullOK {
				return errFallback
			}
		} else if err := write(w, e); err != nil {
			return err
		}
		w.close(m)
		return nil
	})
}

// strings writes each string of the JSON array b as field num.
func (w *wireBuf) strings(num protowire.Number, b []byte) error {
	if isNull(b) {
		return nil
	}
	return elements(b, func(e []byte) error { return w.stringAlways(num, e) })
}

// stringField writes the JSON string b as field num unless it is empty,
// absent or null.
func (w *wireBuf) stringField(num protowire.Number, b []byte) error {
	if isNull(b) || string(b) == `""` {
		return nil
	}
	return w.stringAlways(num, b)
}

// stringAlways writes the JSON string b as field num, empty or not.
func (w *wireBuf) stringAlways(num protowire.Number, b []byte) error {
	s, esc, err := str(b)
	if err != nil {
		return err
	}
	return w.str(num, s, esc)
}

// str writes the content s of a JSON string (esc: holding escapes) as
// field num.
func (w *wireBuf) str(num protowire.Number, s []byte, esc bool) error {
	if !esc {
		if !utf8.Valid(s) {
			return errFallback
		}
		w.b = protowire.AppendTag(w.b, num, protowire.BytesType)
		w.b = protowire.AppendBytes(w.b, s)
		return nil
	}
	m := w.open(num)
	var err error
	if w.b, err = appendUnquoted(w.b, s); err != nil {
		return err
	}
	w.close(m)
	return nil
}

// enumField writes the enum named by the JSON string b (values) as field
// num; a name not in values is 0, which is not written.
func (w *wireBuf) enumField(num protowire.Number, b []byte, values map[string]int32) error {
	if isNull(b) {
		return nil
	}
	s, esc, err := str(b)
	if err != nil || esc {
		return errFallback
	}
	if v := values[string(s)]; v != 0 {
		w.varint(num, uint64(v))
	}
	return nil
}

// structField writes the JSON object b as the google.protobuf.Struct field
// num; absent or null writes nothing.
func (w *wireBuf) structField(num protowire.Number, b []byte) error {
	if isNull(b) {
		return nil
	}
	if firstByte(b) != '{' {
		return errFallback
	}
	m := w.open(num)
	if err := w.structFields(b); err != nil {
		return err
	}
	w.close(m)
	return nil
}

// structFields writes the entries of a Struct (map<string, Value> fields =
// 1) from the JSON object b.
func (w *wireBuf) structFields(b []byte) error {
	r := reader{b: b}
	return w.object(&r)
}

// object writes the entries of a Struct from the JSON object at r.
func (w *wireBuf) object(r *reader) error {
	return r.object(func(key []byte, esc bool) error {
		e := w.open(1)
		if err := w.str(1, key, esc); err != nil {
			return err
		}
		v := w.open(2)
		if err := w.value(r); err != nil {
			return err
		}
		w.close(v)
		w.close(e)
		return nil
	})
}

// value writes the fields of the google.protobuf.Value of the JSON value at
// r, as structpb.NewValue makes it from what json.Unmarshal reads.
func (w *wireBuf) value(r *reader) error {
	r.space()
	if r.i >= len(r.b) {
		return errFallback
	}
	switch c := r.b[r.i]; {
	case c == '{':
		m := w.open(5)
		if err := w.object(r); err != nil {
			return err
		}
		w.close(m)
	case c == '[':
		m := w.open(6)
		if err := r.array(func() error {
			v := w.open(1)
			if err := w.value(r); err != nil {
				return err
			}
			w.close(v)
			return nil
		}); err != nil {
			return err
		}
		w.close(m)
	case c == '"':
		s, esc, err := r.str()
		if err != nil {
			return err
		}
		return w.str(3, s, esc)
	case c == 't' || c == 'f':
		lit := "false"
		if c == 't' {
			lit = "true"
		}
		if !r.literal(lit) {
			return errFallback
		}
		w.b = protowire.AppendTag(w.b, 4, protowire.VarintType)
		w.b = protowire.AppendVarint(w.b, protowire.EncodeBool(c == 't'))
	case c == 'n':
		if !r.literal("null") {
			return errFallback
		}
		w.varint(1, 0)
	default:
		start := r.i
		for r.i < len(r.b) && isNumberByte(r.b[r.i]) {
			r.i++
		}
		num := r.b[start:r.i]
		if len(num) == 0 {
			return errFallback
		}
		f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(num), len(num)), 64)
		if err != nil {
			return errFallback
		}
		w.b = protowire.AppendTag(w.b, 2, protowire.Fixed64Type)
		w.b = protowire.AppendFixed64(w.b, math.Float64bits(f))
	}
	return nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// isNull says whether the JSON value b is absent (nil) or null.
func isNull(b []byte) bool { return b == nil || string(b) == "null" }

// firstByte is the first byte of the JSON value b (0 when empty).
func firstByte(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// members reads the JSON object b into spans: spans[i] is the value of the
// member names[i] (nil when absent). A member not named, or named twice, is
// errFallback: json.Unmarshal would read it in a way of its own (names in
// other letter cases, the last of two).
func members(b []byte, names []string, spans [][]byte) error {
	if firstByte(b) != '{' {
		return errFallback
	}
	r := reader{b: b}
	return r.object(func(key []byte, esc bool) error {
		if esc {
			return errFallback
		}
		i := 0
		for i < len(names) && names[i] != string(key) {
			i++
		}
		if i == len(names) || spans[i] != nil {
			return errFallback
		}
		r.space()
		start := r.i
		if err := r.skip(); err != nil {
			return err
		}
		spans[i] = r.b[start:r.i]
		return nil
	})
}

// elements calls fn with each value of the JSON array b.
func elements(b []byte, fn func([]byte) error) error {
	r := reader{b: b}
	return r.array(func() error {
		start := r.i
		if err := r.skip(); err != nil {
			return err
		}
		return fn(r.b[start:r.i])
	})
}

// str is the content of the JSON string b (between its quotes) and whether
// it holds escapes.
func str(b []byte) (s []byte, esc bool, err error) {
	r := reader{b: b}
	s, esc, err = r.str()
	if err == nil && r.i != len(b) {
		err = errFallback
	}
	return s, esc, err
}

// reader reads JSON the encoder wrote: values are checked as far as the
// wire form needs (a malformed one is errFallback), not validated in full.
type reader struct {
	b []byte
	i int
}

func (r *reader) space() {
	for r.i < len(r.b) && (r.b[r.i] == ' ' || r.b[r.i] == '\n' || r.b[r.i] == '\t' || r.b[r.i] == '\r') {
		r.i++
	}
}

func (r *reader) consume(c byte) bool {
	if r.i < len(r.b) && r.b[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *reader) literal(lit string) bool {
	if len(r.b)-r.i < len(lit) || string(r.b[r.i:r.i+len(lit)]) != lit {
		return false
	}
	r.i += len(lit)
	return true
}

// object reads an object, calling fn with each member's key (its content,
// and whether it holds escapes) with r at the member's value, which fn
// reads.
func (r *reader) object(fn func(key []byte, esc bool) error) error {
	r.space()
	if !r.consume('{') {
		return errFallback
	}
	r.space()
	if r.consume('}') {
		return nil
	}
	for {
		r.space()
		key, esc, err := r.str()
		if err != nil {
			return err
		}
		r.space()
		if !r.consume(':') {
			return errFallback
		}
		if err := fn(key, esc); err != nil {
			return err
		}
		r.space()
		if r.consume('}') {
			return nil
		}
		if !r.consume(',') {
			return errFallback
		}
	}
}

// array reads an array, calling fn with r at each element, which fn
// reads.
func (r *reader) array(fn func() error) error {
	r.space()
	if !r.consume('[') {
		return errFallback
	}
	r.space()
	if r.consume(']') {
		return nil
	}
	for {
		r.space()
		if err := fn(); err != nil {
			return err
		}
		r.space()
		if r.consume(']') {
			return nil
		}
		if !r.consume(',') {
			return errFallback
		}
	}
}

// str reads a string: its content between the quotes, and whether it holds
// escapes. A control character in it is errFallback, as JSON refuses it.
func (r *reader) str() ([]byte, bool, error) {
	if !r.consume('"') {
		return nil, false, errFallback
	}
	start, esc := r.i, false
	for r.i < len(r.b) {
		switch c := r.b[r.i]; {
		case c == '"':
			s := r.b[start:r.i]
			r.i++
			return s, esc, nil
		case c == '\\':
			esc = true
			r.i += 2
		case c < 0x20:
			return nil, false, errFallback
		default:
			r.i++
		}
	}
	return nil, false, errFallback
}

// skip reads past one value.
func (r *reader) skip() error {
	r.space()
	if r.i >= len(r.b) {
		return errFallback
	}
	switch c := r.b[r.i]; c {
	case '"':
		_, _, err := r.str()
		return err
	case '{', '[':
		depth := 0
		for r.i < len(r.b) {
			switch r.b[r.i] {
			case '"':
				if _, _, err := r.str(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					r.i++
					return nil
				}
			}
			r.i++
		}
		return errFallback
	case 't':
		if r.literal("true") {
			return nil
		}
	case 'f':
		if r.literal("false") {
			return nil
		}
	case 'n':
		if r.literal("null") {
			return nil
		}
	default:
		start := r.i
		for r.i < len(r.b) && isNumberByte(r.b[r.i]) {
			r.i++
		}
		if r.i > start {
			return nil
		}
	}
	return errFallback
}

// appendUnquoted appends the JSON string content s with its escapes read
// as encoding/json reads them (a lone surrogate is U+FFFD).
func appendUnquoted(dst, s []byte) ([]byte, error) {
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			j := i
			for j < len(s) && s[j] != '\\' {
				j++
			}
			if !utf8.Valid(s[i:j]) {
				return dst, errFallback
			}
			dst = append(dst, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return dst, errFallback
		}
		switch s[i+1] {
		case '"', '\\', '/':
			dst = append(dst, s[i+1])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok {
				return dst, errFallback
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' {
					if r2, ok := hex4(s[i+2:]); ok {
						if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
				}
				r = unicode.ReplacementChar
			}
			dst = utf8.AppendRune(dst, r)
			continue
		default:
			return dst, errFallback
		}
		i += 2
	}
	return dst, nil
}

// hex4 reads the four hex digits at the start of s.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
