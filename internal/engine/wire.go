package engine

import (
	"encoding/json"
	"errors"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// Encoding the log entries the engine stores (a status, a message, an
// artifact) with the standard encoder, in one pass.
//
// The SDK's types encode their parts through MarshalJSON methods that call
// json.Marshal again (a2a.ContentParts, a2a.Part), so every part is encoded
// into a buffer of its own, copied out, then checked and copied again by the
// level above. The mirror types below have the same fields in the same order
// with the same tags as the SDK's, and no MarshalJSON of their own, so
// json.Marshal of a mirror writes the same bytes as json.Marshal of the SDK
// value in one pass (wire_test.go holds them to that). A message with a part
// the mirror does not carry exactly (an empty text, a data part with a nil
// value, raw bytes, a nil part) is encoded as the SDK value instead.

// partWire mirrors the encoding of a2a.Part (its MarshalJSON's wrapper)
// for text parts with text, data parts with a value, and URL parts.
type partWire struct {
	Text      string         `json:"text,omitempty"`
	Data      any            `json:"data,omitempty"`
	URL       a2a.URL        `json:"url,omitempty"`
	Filename  string         `json:"filename,omitempty"`
	MediaType string         `json:"mediaType,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// messageWire mirrors a2a.Message.
type messageWire struct {
	ID             string         `json:"messageId"`
	ContextID      string         `json:"contextId,omitempty"`
	Extensions     []string       `json:"extensions,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	Parts          []partWire     `json:"parts"`
	ReferenceTasks []a2a.TaskID   `json:"referenceTaskIds,omitempty"`
	Role           string         `json:"role"` // a2a.MessageRole's String, which its MarshalJSON encodes
	TaskID         a2a.TaskID     `json:"taskId,omitempty"`
}

// statusWire mirrors a2a.TaskStatus.
type statusWire struct {
	Message   *messageWire `json:"message,omitempty"`
	State     string       `json:"state"` // a2a.TaskState's String, which its MarshalJSON encodes
	Timestamp *time.Time   `json:"timestamp,omitempty"`
}

// artifactWire mirrors a2a.Artifact.
type artifactWire struct {
	ID          a2a.ArtifactID `json:"artifactId"`
	Description string         `json:"description,omitempty"`
	Extensions  []string       `json:"extensions,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
	Name        string         `json:"name,omitempty"`
	Parts       []partWire     `json:"parts"`
}

// partsWire is parts as mirrors, ok false when one of them has no exact
// mirror. A nil list stays nil (encoded null, as the SDK's is).
func partsWire(parts a2a.ContentParts) ([]partWire, bool) {
	return partsWireData(parts, nil)
}

// partsWireData is partsWire with data, when not nil, what the one data
// part of parts encodes as instead of its value; with more than one data
// part, data is not used.
func partsWireData(parts a2a.ContentParts, data any) ([]partWire, bool) {
	if parts == nil {
		return nil, true
	}
	if data != nil {
		n := 0
		for _, p := range parts {
			if p != nil {
				if _, ok := p.Content.(a2a.Data); ok {
					n++
				}
			}
		}
		if n != 1 {
			data = nil
		}
	}
	out := make([]partWire, len(parts))
	for i, p := range parts {
		if p == nil {
			return nil, false
		}
		w := partWire{Filename: p.Filename, MediaType: p.MediaType, Metadata: p.Metadata}
		switch c := p.Content.(type) {
		case a2a.Text:
			if c == "" {
				return nil, false // the SDK writes "text":""
			}
			w.Text = string(c)
		case a2a.Data:
			if c.Value == nil {
				return nil, false // the SDK writes "data":null
			}
			w.Data = c.Value
			if data != nil {
				w.Data = data
			}
		case a2a.URL:
			w.URL = c // the SDK leaves an empty URL out too
		default:
			return nil, false
		}
		out[i] = w
	}
	return out, true
}

func messageWireOf(m *a2a.Message, data any) (*messageWire, bool) {
	parts, ok := partsWireData(m.Parts, data)
	if !ok {
		return nil, false
	}
	return &messageWire{
		ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata, Parts: parts,
		ReferenceTasks: m.ReferenceTasks, Role: m.Role.String(), TaskID: m.TaskID,
	}, true
}

// statusValue is what encodes as status: its mirror, or status itself.
func statusValue(status *a2a.TaskStatus) any {
	return statusValueData(status, nil)
}

// statusValueData is statusValue with data, when not nil, what the one
// data part of the status message encodes as (partsWireData).
func statusValueData(status *a2a.TaskStatus, data any) any {
	w := &statusWire{State: status.State.String(), Timestamp: status.Timestamp}
	if status.Message != nil {
		m, ok := messageWireOf(status.Message, data)
		if !ok {
			return status
		}
		w.Message = m
	}
	return w
}

// messageValue is what encodes as m: its mirror, or m itself.
func messageValue(m *a2a.Message) any {
	if w, ok := messageWireOf(m, nil); ok {
		return w
	}
	return m
}

// artifactValue is what encodes as a: its mirror, or a itself.
func artifactValue(a *a2a.Artifact) any {
	parts, ok := partsWire(a.Parts)
	if !ok {
		return a
	}
	return &artifactWire{ID: a.ID, Description: a.Description, Extensions: a.Extensions, Metadata: a.Metadata, Name: a.Name, Parts: parts}
}

// piece is text around an encoded value: s as it is, or quoted as a JSON
// string.
type piece struct {
	s     string
	quote bool
}

func lit(s string) piece { return piece{s: s} }
func str(s string) piece { return piece{s: s, quote: true} }

// wrapped encodes v between the pieces before and after it (at most
// maxPieces each), in one buffer of the size needed, and returns the whole
// and where v's JSON starts and ends in it. With the names of an event's
// fields in encoding/json's order, the whole is the bytes json.Marshal
// writes for the event (task_encoding_test.go), with v encoded once.
func wrapped(v any, before, after []piece) (b []byte, start, end int, err error) {
	return encodeBetween(nil, v, before, after)
}

// encodeBetween encodes v between the pieces before and after it (at
// most maxPieces each): to to, in the encoder's one write, when to is not
// nil, else into a buffer it returns (see wrapped).
func encodeBetween(to io.Writer, v any, before, after []piece) (b []byte, start, end int, err error) {
	if len(before) > maxPieces || len(after) > maxPieces {
		return nil, 0, 0, errors.New("too many pieces around a value")
	}
	// An encoder and its writer are taken from wrapEncoders for this one
	// value and put back empty: a buffer made is the caller's, and nothing
	// else keeps the pair. One that failed is not put back (an Encoder
	// keeps its writer's error).
	e := wrapEncoders.Get().(*wrapEncoder)
	w := &e.w
	w.to = to
	w.nb, w.na = copy(w.before[:], before), copy(w.after[:], after)
	err = e.enc.Encode(v)
	b, start, end = w.out, w.start, w.end
	wrote := w.wrote
	*w = wrapWriter{}
	if err == nil {
		wrapEncoders.Put(e)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	if !wrote {
		return nil, 0, 0, errors.New("the encoder wrote nothing")
	}
	return b, start, end, nil
}

// maxPieces is how many pieces encodeBetween takes on either side of a
// value.
const maxPieces = 5

// wrapEncoder is an encoder that writes to its own wrapWriter.
type wrapEncoder struct {
	w   wrapWriter
	enc *json.Encoder
}

var wrapEncoders = sync.Pool{New: func() any {
	e := &wrapEncoder{}
	e.enc = json.NewEncoder(&e.w)
	return e
}}

// wrapWriter takes the encoder's one write (the value and a newline) and
// writes it to to between the pieces, or assembles them in out.
type wrapWriter struct {
	before, after [maxPieces]piece
	nb, na        int
	to            io.Writer
	wrote         bool
	out           []byte
	start, end    int
}

func (w *wrapWriter) Write(p []byte) (int, error) {
	if w.wrote {
		return 0, errors.New("the encoder wrote twice")
	}
	w.wrote = true
	v := p
	if n := len(v); n > 0 && v[n-1] == '\n' {
		v = v[:n-1]
	}
	before, after := w.before[:w.nb], w.after[:w.na]
	if w.to != nil {
		for _, pc := range before {
			if err := pc.writeTo(w.to); err != nil {
				return 0, err
			}
		}
		if _, err := w.to.Write(v); err != nil {
			return 0, err
		}
		for _, pc := range after {
			if err := pc.writeTo(w.to); err != nil {
				return 0, err
			}
		}
		return len(p), nil
	}
	size := len(v)
	for _, pc := range before {
		size += pc.size()
	}
	for _, pc := range after {
		size += pc.size()
	}
	b := make([]byte, 0, size)
	for _, pc := range before {
		b = pc.append(b)
	}
	w.start = len(b)
	b = append(b, v...)
	w.end = len(b)
	for _, pc := range after {
		b = pc.append(b)
	}
	w.out = b
	return len(p), nil
}

// writeTo writes pc to w (a literal piece; a quoted one as it appends).
func (pc piece) writeTo(w io.Writer) error {
	var err error
	if pc.quote {
		_, err = w.Write(pc.append(nil))
	} else {
		_, err = io.WriteString(w, pc.s)
	}
	return err
}

func (pc piece) size() int {
	if pc.quote {
		return quotedLen(pc.s)
	}
	return len(pc.s)
}

func (pc piece) append(b []byte) []byte {
	if pc.quote {
		return appendQuoted(b, pc.s)
	}
	return append(b, pc.s...)
}

// plainJSONString reports whether s encodes as a JSON string by quoting
// alone: printable ASCII without the characters encoding/json escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// quotedLen is the length of s as encoding/json quotes it.
func quotedLen(s string) int {
	if plainJSONString(s) {
		return len(s) + 2
	}
	q, _ := json.Marshal(s)
	return len(q)
}

// appendQuoted appends s as encoding/json quotes it.
func appendQuoted(b []byte, s string) []byte {
	if plainJSONString(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// MessageIn mirrors a2a.Message for decoding, its parts as the SDK's
// flattened part (a2a.Part's JSON), without the UnmarshalJSON of
// a2a.ContentParts and a2a.Part, which decode each part with a
// json.Unmarshal of their own. Message chooses a part's content as
// a2a.Part.UnmarshalJSON does. The front decodes SendMessage params through
// it (front.decodeSendMessage, whose fuzz test holds it to the SDK's
// decoding), and the engine a stored request.
type MessageIn struct {
	ID             string         `json:"messageId"`
	ContextID      string         `json:"contextId"`
	Extensions     []string       `json:"extensions"`
	Metadata       map[string]any `json:"metadata"`
	Parts          []*PartIn      `json:"parts"`
	ReferenceTasks []a2a.TaskID   `json:"referenceTaskIds"`
	Role           roleIn         `json:"role"`
	TaskID         a2a.TaskID     `json:"taskId"`
}

// roleIn decodes as a2a.MessageRole.UnmarshalJSON decodes, reading a
// string that needs no unescaping in place instead of through a
// json.Unmarshal of its own.
type roleIn a2a.MessageRole

func (r *roleIn) UnmarshalJSON(b []byte) error {
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' && plainJSONString(string(b[1:n-1])) {
		switch string(b[1 : n-1]) {
		case string(a2a.MessageRoleUser):
			*r = roleIn(a2a.MessageRoleUser)
		case string(a2a.MessageRoleAgent):
			*r = roleIn(a2a.MessageRoleAgent)
		case "ROLE_UNSPECIFIED":
			*r = roleIn(a2a.MessageRoleUnspecified)
		default:
			*r = roleIn(b[1 : n-1])
		}
		return nil
	}
	mr := a2a.MessageRole(*r)
	err := mr.UnmarshalJSON(b)
	*r = roleIn(mr)
	return err
}

// PartIn mirrors a2a.Part's JSON for decoding.
type PartIn struct {
	Text      *a2a.Text      `json:"text"`
	Raw       *a2a.Raw       `json:"raw"`
	Data      *any           `json:"data"`
	URL       *a2a.URL       `json:"url"`
	Filename  string         `json:"filename"`
	MediaType string         `json:"mediaType"`
	Metadata  map[string]any `json:"metadata"`
}

// Message is the message m mirrors; false when a part is one
// a2a.Part.UnmarshalJSON refuses (no content, or more than one), which
// the SDK's decoding is then to refuse in its words.
func (m *MessageIn) Message() (*a2a.Message, bool) {
	msg := &a2a.Message{ID: m.ID, ContextID: m.ContextID, Extensions: m.Extensions, Metadata: m.Metadata,
		ReferenceTasks: m.ReferenceTasks, Role: a2a.MessageRole(m.Role), TaskID: m.TaskID}
	if m.Parts == nil {
		return msg, true
	}
	msg.Parts = make(a2a.ContentParts, len(m.Parts))
	parts := make([]a2a.Part, len(m.Parts))
	for i, pw := range m.Parts {
		if pw == nil {
			continue // null: a nil part, as the SDK reads it
		}
		p := &parts[i]
		p.Filename, p.MediaType, p.Metadata = pw.Filename, pw.MediaType, pw.Metadata
		n := 0
		if pw.Text != nil {
			p.Content = *pw.Text
			n++
		}
		if pw.Raw != nil {
			p.Content = *pw.Raw
			n++
		}
		if pw.Data != nil {
			p.Content = a2a.Data{Value: *pw.Data}
			n++
		}
		if pw.URL != nil && *pw.URL != "" {
			p.Content = *pw.URL
			n++
		}
		if n != 1 {
			return nil, false
		}
		msg.Parts[i] = p
	}
	return msg, true
}

// decodeMessage decodes a message this node or another stored (a task's
// request) through MessageIn, and through the SDK's types when MessageIn
// cannot read it as they would.
func decodeMessage(raw []byte) (*a2a.Message, error) {
	var in MessageIn
	if json.Unmarshal(raw, &in) == nil {
		if m, ok := in.Message(); ok {
			return m, nil
		}
	}
	m := &a2a.Message{}
	if err := json.Unmarshal(raw, m); err != nil {
		return nil, err
	}
	return m, nil
}
