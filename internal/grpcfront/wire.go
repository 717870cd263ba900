package grpcfront

import (
	"bytes"
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
// What comes out decodes to pbconv's conversion of the task that
// json.Unmarshal reads from the same JSON, field for field (wire_test.go
// holds every field, task state and part kind to that, and to the SDK's
// bytes once both are marshalled deterministically). The JSON is read once,
// front to back, and each field written as it comes: in the JSON's order,
// not in the order of the field numbers that proto.Marshal keeps (a reader
// of the wire form takes fields in any order), zero scalars left out,
// oneof members and map entries' keys and values always written. Anything
// this reading would not decode as json.Unmarshal does, or that pbconv
// refuses or would read in a way of its own, is errFallback, and the reply
// is made the SDK's way instead: unknown or repeated member names, a value
// of the wrong JSON type, null where a list holds parts, a part without
// exactly one content, a data part that is not an object, escapes in raw
// bytes, text that is not UTF-8. See
// docs/decisions/0170-grpc-replies-from-stored-bytes.md.

// errFallback says the JSON holds something only the SDK's conversion should
// answer.
var errFallback = errors.New("grpcfront: reply not written from its JSON")

// wireBuf is protobuf wire bytes being written, with the reader of the
// JSON they are written from (in the same allocation: the writer's
// recursive calls leave both to the heap).
type wireBuf struct {
	b []byte
	r reader
}

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
	return w.whole(b, (*wireBuf).task)
}

// Message writes the lf.a2a.v1.Message of the message JSON b.
func (w *wireBuf) Message(b []byte) error {
	return w.whole(b, (*wireBuf).message)
}

// whole writes the JSON b with write, which must read all of it.
func (w *wireBuf) whole(b []byte, write func(*wireBuf, *reader) error) error {
	w.r = reader{b: b}
	err := write(w, &w.r)
	if w.r.space(); err == nil && w.r.i != len(w.r.b) {
		err = errFallback
	}
	w.r = reader{} // b is the caller's
	return err
}

var (
	taskNames     = []string{"id", "contextId", "status", "artifacts", "history", "metadata"}
	statusNames   = []string{"state", "message", "timestamp"}
	messageNames  = []string{"messageId", "contextId", "taskId", "role", "parts", "metadata", "extensions", "referenceTaskIds"}
	partNames     = []string{"text", "raw", "url", "data", "metadata", "filename", "mediaType"}
	artifactNames = []string{"artifactId", "name", "description", "parts", "metadata", "extensions"}
)

// task writes the fields of a Task.
func (w *wireBuf) task(r *reader) error {
	status := false
	err := w.members(r, taskNames, func(i int) error {
		switch i {
		case 0, 1: // id, contextId
			return w.stringField(protowire.Number(i+1), r)
		case 2: // pbconv always writes the status, empty or not (null is a zero status)
			status = true
			m := w.open(3)
			if !r.null() {
				if err := w.status(r); err != nil {
					return err
				}
			}
			w.close(m)
			return nil
		case 3:
			return w.messages(4, r, (*wireBuf).artifact, true)
		case 4:
			return w.messages(5, r, (*wireBuf).message, true)
		default:
			return w.structField(6, r)
		}
	})
	if err == nil && !status {
		w.close(w.open(3))
	}
	return err
}

// status writes the fields of a TaskStatus.
func (w *wireBuf) status(r *reader) error {
	return w.members(r, statusNames, func(i int) error {
		switch i {
		case 0:
			return w.enumField(1, r, a2apb.TaskState_value)
		case 1:
			if r.null() {
				return nil
			}
			m := w.open(2)
			if err := w.message(r); err != nil {
				return err
			}
			w.close(m)
			return nil
		}
		if r.null() {
			return nil
		}
		s, esc, err := r.str()
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
	})
}

// message writes the fields of a Message.
func (w *wireBuf) message(r *reader) error {
	return w.members(r, messageNames, func(i int) error {
		switch i {
		case 0, 1, 2: // messageId, contextId, taskId
			return w.stringField(protowire.Number(i+1), r)
		case 3:
			return w.enumField(4, r, roleValue)
		case 4:
			return w.messages(5, r, (*wireBuf).part, false)
		case 5:
			return w.structField(6, r)
		default: // extensions, referenceTaskIds
			return w.strings(protowire.Number(i+1), r)
		}
	})
}

// roleValue are the roles pbconv maps (toProtoRole); any other is
// ROLE_UNSPECIFIED.
var roleValue = map[string]int32{"ROLE_USER": int32(a2apb.Role_ROLE_USER), "ROLE_AGENT": int32(a2apb.Role_ROLE_AGENT)}

// artifact writes the fields of an Artifact.
func (w *wireBuf) artifact(r *reader) error {
	return w.members(r, artifactNames, func(i int) error {
		switch i {
		case 0, 1, 2: // artifactId, name, description
			return w.stringField(protowire.Number(i+1), r)
		case 3:
			return w.messages(4, r, (*wireBuf).part, false)
		case 4:
			return w.structField(5, r)
		default:
			return w.strings(6, r)
		}
	})
}

// part writes the fields of a Part: exactly one content, as a2a.Part's
// UnmarshalJSON requires (null is none, and so is an empty url), a data
// part an object, as pbconv requires.
func (w *wireBuf) part(r *reader) error {
	contents := 0
	err := w.members(r, partNames, func(i int) error {
		switch i {
		case 0, 1, 2, 3: // text, raw, url, data
			if r.null() {
				return nil
			}
		}
		switch i {
		case 0: // text: written even when empty (a oneof member)
			contents++
			return w.stringAlways(1, r)
		case 1: // raw, base64 as encoding/json reads []byte
			contents++
			s, esc, err := r.str()
			if err != nil || esc {
				return errFallback
			}
			m := w.open(2)
			if w.b, err = base64.StdEncoding.AppendDecode(w.b, s); err != nil {
				return errFallback
			}
			w.close(m)
			return nil
		case 2: // url: an empty one is no content
			s, esc, err := r.str()
			if err != nil {
				return err
			}
			if len(s) == 0 {
				return nil
			}
			contents++
			return w.str(3, s, esc)
		case 3: // data: a Value holding the Struct
			contents++
			if !r.peek('{') {
				return errFallback
			}
			m := w.open(4)
			sm := w.open(5)
			if err := w.object(r); err != nil {
				return err
			}
			w.close(sm)
			w.close(m)
			return nil
		case 4:
			return w.structField(5, r)
		default: // filename, mediaType
			return w.stringField(protowire.Number(i+1), r)
		}
	})
	if err == nil && contents != 1 {
		return errFallback
	}
	return err
}

// members reads the JSON object at r, calling fn with the index in names
// of each member's name, with r at its value, which fn reads. A member not
// named, or named twice, is errFallback: json.Unmarshal would read it in a
// way of its own (names in other letter cases, the last of two).
func (w *wireBuf) members(r *reader, names []string, fn func(i int) error) error {
	var seen uint32
	return r.object(func(key []byte, esc bool) error {
		if esc {
			return errFallback
		}
		i := 0
		for i < len(names) && names[i] != string(key) {
			i++
		}
		if i == len(names) || seen&(1<<i) != 0 {
			return errFallback
		}
		seen |= 1 << i
		return fn(i)
	})
}

// messages writes each element of the JSON array at r as field num, with
// write; null writes none. A null element is an empty message, as proto
// writes a nil one (pbconv leaves a nil artifact or message nil), unless
// nullOK is false (a null part, which pbconv cannot convert).
func (w *wireBuf) messages(num protowire.Number, r *reader, write func(*wireBuf, *reader) error, nullOK bool) error {
	if r.null() {
		return nil
	}
	return r.array(func() error {
		m := w.open(num)
		if r.null() {
			if !nullOK {
				return errFallback
			}
		} else if err := write(w, r); err != nil {
			return err
		}
		w.close(m)
		return nil
	})
}

// strings writes each string of the JSON array at r as field num.
func (w *wireBuf) strings(num protowire.Number, r *reader) error {
	if r.null() {
		return nil
	}
	return r.array(func() error { return w.stringAlways(num, r) })
}

// stringField writes the JSON string at r as field num unless it is empty
// or null.
func (w *wireBuf) stringField(num protowire.Number, r *reader) error {
	if r.null() {
		return nil
	}
	s, esc, err := r.str()
	if err != nil || len(s) == 0 {
		return err
	}
	return w.str(num, s, esc)
}

// stringAlways writes the JSON string at r as field num, empty or not.
func (w *wireBuf) stringAlways(num protowire.Number, r *reader) error {
	s, esc, err := r.str()
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

// enumField writes the enum named by the JSON string at r (values) as
// field num; a name not in values is 0, which is not written.
func (w *wireBuf) enumField(num protowire.Number, r *reader, values map[string]int32) error {
	if r.null() {
		return nil
	}
	s, esc, err := r.str()
	if err != nil || esc {
		return errFallback
	}
	if v := values[string(s)]; v != 0 {
		w.varint(num, uint64(v))
	}
	return nil
}

// structField writes the JSON object at r as the google.protobuf.Struct
// field num; null writes nothing.
func (w *wireBuf) structField(num protowire.Number, r *reader) error {
	if r.null() {
		return nil
	}
	if !r.peek('{') {
		return errFallback
	}
	m := w.open(num)
	if err := w.object(r); err != nil {
		return err
	}
	w.close(m)
	return nil
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

// null reads a null, if that is what r is at.
func (r *reader) null() bool {
	r.space()
	return r.literal("null")
}

// peek says whether r is at c.
func (r *reader) peek(c byte) bool {
	r.space()
	return r.i < len(r.b) && r.b[r.i] == c
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
// escapes. It looks for the closing quote and the escapes a block at a
// time (bytes.IndexByte), as the encoder's strings are mostly plain.
func (r *reader) str() ([]byte, bool, error) {
	if !r.consume('"') {
		return nil, false, errFallback
	}
	start, esc := r.i, false
	for {
		j := bytes.IndexByte(r.b[r.i:], '"')
		if j < 0 {
			return nil, false, errFallback
		}
		k := bytes.IndexByte(r.b[r.i:r.i+j], '\\')
		if k < 0 {
			end := r.i + j
			r.i = end + 1
			return r.b[start:end], esc, nil
		}
		esc = true
		r.i += k + 2 // the backslash and the character it escapes
		if r.i > len(r.b) {
			return nil, false, errFallback
		}
	}
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
