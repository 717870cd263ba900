package engine

import (
	"encoding/json"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/jsonscan"
	"github.com/askpoint/askpoint/internal/jsonwrite"
)

// Encoding the log entries the engine stores (a status, a message, an
// artifact) and the replies that carry them, in one pass, without
// reflection.
//
// The SDK's types encode their parts through MarshalJSON methods that call
// json.Marshal again (a2a.ContentParts, a2a.Part), so every part is encoded
// into a buffer of its own, copied out, then checked and copied again by the
// level above. The appenders below write the SDK's values field by field
// in the SDK's order with the SDK's names, as json.Marshal writes them,
// each part as a2a.Part.MarshalJSON flattens it; the caller's own values
// (metadata, a data part's value) go through jsonwrite.Value, which writes
// generic JSON values itself and anything else through json.Marshal.
// wire_test.go holds every appender to json.Marshal of the SDK's value
// (FuzzAppendersWriteWhatJSONMarshalWrites over built values of every kind).

// appendParts appends parts as json.Marshal writes a2a.ContentParts (null
// when nil), with data, when not nil, what the one data part of parts
// encodes as instead of its value; with more than one data part, data is
// not used.
func appendParts(b []byte, parts a2a.ContentParts, data any) ([]byte, error) {
	if parts == nil {
		return append(b, "null"...), nil
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
	b = append(b, '[')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendPart(b, p, data); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// appendPart appends p as a2a.Part.MarshalJSON writes it: its content
// flattened into the part (text even when empty, raw as base64, data even
// when null, a url only when not empty), then filename, mediaType and
// metadata when set.
func appendPart(b []byte, p *a2a.Part, data any) ([]byte, error) {
	if p == nil {
		return append(b, "null"...), nil
	}
	n := len(b)
	b = append(b, '{')
	var err error
	switch c := p.Content.(type) {
	case a2a.Text:
		b = jsonwrite.String(append(b, `"text":`...), string(c))
	case a2a.Raw:
		b = jsonwrite.Bytes(append(b, `"raw":`...), c)
	case a2a.Data:
		b = append(b, `"data":`...)
		if data != nil && c.Value != nil {
			b, err = jsonwrite.Value(b, data)
		} else {
			b, err = jsonwrite.Value(b, c.Value)
		}
		if err != nil {
			return b, err
		}
	case a2a.URL:
		if c != "" {
			b = jsonwrite.String(append(b, `"url":`...), string(c))
		}
	}
	first := len(b) == n+1
	member := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, name...)
	}
	if p.Filename != "" {
		member(`"filename":`)
		b = jsonwrite.String(b, p.Filename)
	}
	if p.MediaType != "" {
		member(`"mediaType":`)
		b = jsonwrite.String(b, p.MediaType)
	}
	if len(p.Metadata) > 0 {
		member(`"metadata":`)
		if b, err = jsonwrite.Object(b, p.Metadata); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendMessage appends m as json.Marshal writes it (null when nil), with
// data as appendParts takes it.
func appendMessage(b []byte, m *a2a.Message, data any) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	b = jsonwrite.String(append(b, `{"messageId":`...), m.ID)
	if m.ContextID != "" {
		b = jsonwrite.String(append(b, `,"contextId":`...), m.ContextID)
	}
	b, err := appendExtensionsAndMetadata(b, m.Extensions, m.Metadata)
	if err != nil {
		return b, err
	}
	if b, err = appendParts(append(b, `,"parts":`...), m.Parts, data); err != nil {
		return b, err
	}
	if len(m.ReferenceTasks) > 0 {
		b = jsonwrite.Strings(append(b, `,"referenceTaskIds":`...), m.ReferenceTasks)
	}
	// a2a.MessageRole's MarshalJSON writes its String.
	b = jsonwrite.String(append(b, `,"role":`...), m.Role.String())
	if m.TaskID != "" {
		b = jsonwrite.String(append(b, `,"taskId":`...), string(m.TaskID))
	}
	return append(b, '}'), nil
}

// appendExtensionsAndMetadata appends the extensions and metadata members
// of a message or an artifact, each when not empty.
func appendExtensionsAndMetadata(b []byte, extensions []string, metadata map[string]any) ([]byte, error) {
	if len(extensions) > 0 {
		b = jsonwrite.Strings(append(b, `,"extensions":`...), extensions)
	}
	if len(metadata) > 0 {
		return jsonwrite.Object(append(b, `,"metadata":`...), metadata)
	}
	return b, nil
}

// appendStatus appends status as json.Marshal writes it, with data as
// appendParts takes it for its message.
func appendStatus(b []byte, status *a2a.TaskStatus, data any) ([]byte, error) {
	b = append(b, '{')
	if status.Message != nil {
		var err error
		if b, err = appendMessage(append(b, `"message":`...), status.Message, data); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	// a2a.TaskState's MarshalJSON writes its String.
	b = jsonwrite.String(append(b, `"state":`...), status.State.String())
	if status.Timestamp != nil {
		// time.Time's MarshalJSON: its AppendText quoted, and its error.
		b = append(b, `,"timestamp":"`...)
		var err error
		if b, err = status.Timestamp.AppendText(b); err != nil {
			return b, err
		}
		b = append(b, '"')
	}
	return append(b, '}'), nil
}

// appendArtifact appends a as json.Marshal writes it (null when nil).
func appendArtifact(b []byte, a *a2a.Artifact) ([]byte, error) {
	if a == nil {
		return append(b, "null"...), nil
	}
	b = jsonwrite.String(append(b, `{"artifactId":`...), string(a.ID))
	if a.Description != "" {
		b = jsonwrite.String(append(b, `,"description":`...), a.Description)
	}
	b, err := appendExtensionsAndMetadata(b, a.Extensions, a.Metadata)
	if err != nil {
		return b, err
	}
	if a.Name != "" {
		b = jsonwrite.String(append(b, `,"name":`...), a.Name)
	}
	if b, err = appendParts(append(b, `,"parts":`...), a.Parts, nil); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// The values the engine encodes, as jsonwrite.Appenders.
type (
	statusJSON struct {
		jsonwrite.Own
		status *a2a.TaskStatus
		data   any // what the one data part of the message encodes as, nil: its value
	}
	messageJSON struct {
		jsonwrite.Own
		m *a2a.Message
	}
	artifactJSON struct {
		jsonwrite.Own
		a *a2a.Artifact
	}
)

func (v statusJSON) AppendJSON(b []byte) ([]byte, error)   { return appendStatus(b, v.status, v.data) }
func (v messageJSON) AppendJSON(b []byte) ([]byte, error)  { return appendMessage(b, v.m, nil) }
func (v artifactJSON) AppendJSON(b []byte) ([]byte, error) { return appendArtifact(b, v.a) }

// statusValue is what encodes as status.
func statusValue(status *a2a.TaskStatus) statusJSON { return statusJSON{status: status} }

// statusValueData is statusValue with data, when not nil, what the one
// data part of the status message encodes as (appendParts).
func statusValueData(status *a2a.TaskStatus, data any) statusJSON {
	return statusJSON{status: status, data: data}
}

// messageValue is what encodes as m.
func messageValue(m *a2a.Message) messageJSON { return messageJSON{m: m} }

// artifactValue is what encodes as a.
func artifactValue(a *a2a.Artifact) artifactJSON { return artifactJSON{a: a} }

// wrapped encodes v between the pieces before and after it, in one buffer
// of the size needed, and returns the whole and where v's JSON starts and
// ends in it. With the names of an event's fields in encoding/json's
// order, the whole is the bytes json.Marshal writes for the event
// (task_encoding_test.go), with v encoded once.
func wrapped(v jsonwrite.Appender, before, after []piece) (b []byte, start, end int, err error) {
	return encodeBetween(nil, v, before, after)
}

// encodeBetween encodes v between the pieces before and after it: to to,
// in one write, when to is not nil, else into a buffer it returns (see
// wrapped). Nothing is written when v cannot be encoded.
func encodeBetween(to io.Writer, v jsonwrite.Appender, before, after []piece) (b []byte, start, end int, err error) {
	// The whole is assembled in a scratch buffer from scratchBuffers, which
	// is put back: a buffer returned is a copy of the size needed.
	sp := scratchBuffers.Get().(*[]byte)
	buf := (*sp)[:0]
	for _, pc := range before {
		buf = pc.append(buf)
	}
	start = len(buf)
	buf, err = v.AppendJSON(buf)
	if err == nil {
		end = len(buf)
		for _, pc := range after {
			buf = pc.append(buf)
		}
		if to != nil {
			_, err = to.Write(buf)
		} else {
			b = append(make([]byte, 0, len(buf)), buf...)
		}
	}
	if cap(buf) <= maxScratch {
		*sp = buf[:0]
		scratchBuffers.Put(sp)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	return b, start, end, nil
}

// scratchBuffers are the buffers encodeBetween assembles in; one grown
// beyond maxScratch (a large task) is dropped instead of kept.
var scratchBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 4096)
	return &b
}}

const maxScratch = 64 << 10

// piece is text around an encoded value: s as it is, or quoted as a JSON
// string.
type piece struct {
	s     string
	quote bool
}

func lit(s string) piece { return piece{s: s} }
func str(s string) piece { return piece{s: s, quote: true} }

func (pc piece) append(b []byte) []byte {
	if pc.quote {
		return jsonwrite.String(b, pc.s)
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
	return len(jsonwrite.String(nil, s))
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

// ReadJSON reads a message into m (a MessageIn as json.Unmarshal leaves
// it, freshly made) in one pass without reflection, for the usual form:
// each member named as the SDK's JSON names it, once. It reports false for
// anything else (a name in another letter case, one it does not know, a
// member twice, a value of another kind, invalid JSON): json.Unmarshal
// then decodes m instead (FuzzDecodeSendMessage holds the two to the same
// values).
func (m *MessageIn) ReadJSON(r *jsonscan.Reader) bool {
	return r.Members(messageNames, func(i int) bool {
		switch i {
		case 0:
			return r.StringOrNull(&m.ID)
		case 1:
			return r.StringOrNull(&m.ContextID)
		case 2:
			var ok bool
			m.Extensions, ok = jsonscan.Strings[string](r)
			return ok
		case 3:
			var ok bool
			m.Metadata, ok = r.Map()
			return ok
		case 4:
			return m.readParts(r)
		case 5:
			var ok bool
			m.ReferenceTasks, ok = jsonscan.Strings[a2a.TaskID](r)
			return ok
		case 6:
			raw, ok := r.Raw()
			return ok && m.Role.UnmarshalJSON(raw) == nil
		default:
			var id string
			ok := r.StringOrNull(&id)
			m.TaskID = a2a.TaskID(id)
			return ok
		}
	})
}

// messageNames and partNames are the members of MessageIn and PartIn, in
// the order of their readers' cases.
var (
	messageNames = []string{"messageId", "contextId", "extensions", "metadata", "parts", "referenceTaskIds", "role", "taskId"}
	partNames    = []string{"text", "data", "url", "filename", "mediaType", "metadata"}
)

// readStringPtr reads a string into a new *p, or leaves *p nil for null.
func readStringPtr[T ~string](r *jsonscan.Reader, p **T) bool {
	if r.Null() {
		return true
	}
	v, ok := r.String()
	t := T(v)
	*p = &t
	return ok
}

func (m *MessageIn) readParts(r *jsonscan.Reader) bool {
	if r.Null() {
		m.Parts = nil
		return true
	}
	m.Parts = []*PartIn{}
	return r.Array(func() bool {
		if r.Null() {
			m.Parts = append(m.Parts, nil)
			return true
		}
		p := &PartIn{}
		m.Parts = append(m.Parts, p)
		return p.readJSON(r)
	})
}

// readJSON reads a part as ReadJSON reads a message.
func (p *PartIn) readJSON(r *jsonscan.Reader) bool {
	// raw (base64 bytes) is not among the names: it is left to json.Unmarshal.
	return r.Members(partNames, func(i int) bool {
		switch i {
		case 0:
			return readStringPtr(r, &p.Text)
		case 1:
			if r.Null() {
				return true
			}
			v, ok := r.Value()
			p.Data = &v
			return ok
		case 2:
			return readStringPtr(r, &p.URL)
		case 3:
			return r.StringOrNull(&p.Filename)
		case 4:
			return r.StringOrNull(&p.MediaType)
		default:
			var ok bool
			p.Metadata, ok = r.Map()
			return ok
		}
	})
}

// decodeMessage decodes a message this node or another stored (a task's
// request) through MessageIn (read by ReadJSON, else by json.Unmarshal),
// and through the SDK's types when MessageIn cannot read it as they would.
func decodeMessage(raw []byte) (*a2a.Message, error) {
	var in MessageIn
	r := jsonscan.NewReader(raw)
	if in.ReadJSON(&r) && r.End() {
		if m, ok := in.Message(); ok {
			return m, nil
		}
	}
	in = MessageIn{}
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
