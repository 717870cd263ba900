// Package question implements askpoint's question convention for the A2A
// TASK_STATE_INPUT_REQUIRED state: an agent asks one machine-answerable
// question (a text part for a person and a JSON data part for a machine), the
// caller answers with a data part or plain text, and the answer is validated
// against the question's JSON Schema (draft 2020-12). An invalid answer is
// re-asked with a new question ID and the errors, up to a cap.
//
// The convention is published as an A2A extension; see ExtensionURI and
// docs/extensions/question-v1.md.
package question

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/jsonwrite"
	"github.com/askpoint/askpoint/internal/questionwire"
	"github.com/askpoint/askpoint/internal/text"
)

// ExtensionURI identifies version 1 of the convention.
const ExtensionURI = "https://askpoint.dev/ext/question/v1"

const (
	// DefaultMaxAttempts is how many answers a question accepts before the
	// task fails, unless the agent says otherwise.
	DefaultMaxAttempts = 3
	// DefaultMaxAnswerBytes bounds the JSON encoding of an answer.
	DefaultMaxAnswerBytes = 64 << 10
	// MaxAnswerDepth bounds how deep an answer's JSON nests: the answer
	// object is one level, an object or array in one of its fields two.
	MaxAnswerDepth = 32
)

// MediaTypeJSON is the media type of the question's data part.
const MediaTypeJSON = "application/json"

// FieldError is one reason an answer was not accepted.
type FieldError struct {
	Pointer string `json:"pointer"` // JSON pointer into the answer, "" for the whole answer
	Message string `json:"message"`
}

// Error makes a FieldError an error, so that a check of an answer can
// return one and name the field it is about: "/end: the end is before the
// start".
func (e FieldError) Error() string {
	if e.Pointer == "" {
		return e.Message
	}
	return e.Pointer + ": " + e.Message
}

// Question is what an agent asks. Stored as JSON (all fields, including Text)
// by the engine.
type Question struct {
	ID      string          `json:"questionId"`
	Text    string          `json:"text"`
	Expires time.Time       `json:"expires"`
	Schema  json.RawMessage `json:"answerSchema"`
	Options []Option        `json:"options,omitempty"`
	// OptionsFor names the field the options are for, in a question with
	// several fields ("approve" of {approve, reason}). Empty: the schema's
	// only required property or, failing that, its only property.
	OptionsFor string `json:"optionsFor,omitempty"`
	// Subject is what the question is about, for machines: for instance
	// {"amount": 1200, "currency": "EUR"} for a payment approval, so that
	// a caller's policy can answer small amounts and send large ones to a
	// person. Optional; any JSON object.
	Subject     map[string]any `json:"subject,omitempty"`
	Attempt     int            `json:"attempt,omitempty"` // 1 for the first ask
	MaxAttempts int            `json:"maxAttempts,omitempty"`
	Errors      []FieldError   `json:"errors,omitempty"`
	// About says, when the question is asked for someone else, who: for a
	// workflow, the participant that asks and its task. Optional; string
	// values only.
	About map[string]string `json:"about,omitempty"`
	// Holds are what the task holds while the question is open (a seat, a
	// budget reservation) and until when, for the person who answers: a
	// hold released before an answer comes is gone. The runtime fills them
	// from the agent's holds; an agent does not set them.
	Holds []Held `json:"holds,omitempty"`
}

// Held is one thing a paused task holds, as a person sees it.
type Held struct {
	Name  string    `json:"name"`  // what is held, for people ("seat 14C")
	Until time.Time `json:"until"` // when it is released if no answer came
}

// Wire keys of the question's data part.
const (
	keyQuestionID  = "questionId"
	keyExpires     = "expires"
	keySchema      = "answerSchema"
	keyOptions     = "options"
	keyOptionsFor  = "optionsFor"
	keySubject     = "subject"
	keyAttempt     = "attempt"
	keyMaxAttempts = "maxAttempts"
	keyErrors      = "errors"
	keyAbout       = "about"
	keyHolds       = "holds"
	keyAction      = "action"
	keyReason      = "reason"
)

// attempt returns the attempt number, counting an unset Attempt as the first.
func (q *Question) attempt() int {
	if q.Attempt < 1 {
		return 1
	}
	return q.Attempt
}

// Message builds the status message: role agent, a new messageId, a text part
// a person can read on its own and a data part (media type application/json)
// for a machine, and Extensions [ExtensionURI].
//
// The data part holds questionId, expires (RFC 3339, UTC), answerSchema,
// options (when there are any), subject, about and holds when set and, on a
// re-ask (Attempt > 1), attempt, maxAttempts and errors. On a re-ask the text part ends with a line that says
// why the previous answer was not accepted (see Notice).
func (q *Question) Message() *a2a.Message {
	m, _ := q.messageAndWire()
	return m
}

// messageAndWire is Message, and a value that encoding/json encodes as
// exactly the bytes it writes for the data part's value (see
// internal/questionwire, through which the engine calls it).
func (q *Question) messageAndWire() (*a2a.Message, any) {
	text := q.Text
	if q.attempt() > 1 {
		text = joinNotice(q.Text, q.Notice())
	}
	data := q.wireObject()
	dp := a2a.NewDataPart(data)
	dp.MediaType = MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(text), dp)
	m.Extensions = []string{ExtensionURI}
	return m, q.wireData(data)
}

func init() {
	questionwire.Register((*Question).messageAndWire)
}

// wireObject is the data part's value, built from generic JSON values
// (map[string]any, []any, string, float64, bool, nil) so that it looks the same
// in process as it does after a trip over the wire.
func (q *Question) wireObject() map[string]any {
	obj := map[string]any{
		keyQuestionID: q.ID,
		keyExpires:    q.Expires.UTC().Format(time.RFC3339Nano),
		keySchema:     wireSchema(q.Schema),
	}
	if len(q.Options) > 0 {
		opts := make([]any, 0, len(q.Options))
		for _, o := range q.Options {
			e := map[string]any{"value": generic(o.Value)}
			if o.Label != "" {
				e["label"] = o.Label
			}
			opts = append(opts, e)
		}
		obj[keyOptions] = opts
		if q.OptionsFor != "" {
			obj[keyOptionsFor] = q.OptionsFor
		}
	}
	if len(q.Subject) > 0 {
		obj[keySubject] = generic(q.Subject)
	}
	if len(q.About) > 0 {
		about := make(map[string]any, len(q.About))
		for k, v := range q.About {
			about[k] = v
		}
		obj[keyAbout] = about
	}
	if len(q.Holds) > 0 {
		holds := make([]any, 0, len(q.Holds))
		for _, h := range q.Holds {
			holds = append(holds, map[string]any{"name": h.Name, "until": h.Until.UTC().Format(time.RFC3339Nano)})
		}
		obj[keyHolds] = holds
	}
	if a := q.attempt(); a > 1 {
		obj[keyAttempt] = float64(a)
		if q.MaxAttempts > 0 {
			obj[keyMaxAttempts] = float64(q.MaxAttempts)
		}
		errs := make([]any, 0, len(q.Errors))
		for _, e := range q.Errors {
			errs = append(errs, map[string]any{"pointer": e.Pointer, "message": e.Message})
		}
		obj[keyErrors] = errs
	}
	return obj
}

// wireData is what obj (wireObject's) encodes as, as a struct, with obj's
// generic values and the schema's cached encoding.
func (q *Question) wireData(obj map[string]any) *wireData {
	w := &wireData{QuestionID: q.ID, Expires: obj[keyExpires].(string), Schema: wireSchemaJSON(q.Schema)}
	if len(q.Options) > 0 {
		w.Options = make([]wireOption, len(q.Options))
		for i, o := range obj[keyOptions].([]any) {
			w.Options[i] = wireOption{Label: q.Options[i].Label, Value: o.(map[string]any)["value"]}
		}
		w.OptionsFor = q.OptionsFor
	}
	if len(q.Subject) > 0 {
		w.Subject = obj[keySubject]
	}
	if len(q.About) > 0 {
		w.About = q.About
	}
	if len(q.Holds) > 0 {
		w.Holds = make([]wireHold, len(q.Holds))
		for i, h := range obj[keyHolds].([]any) {
			w.Holds[i] = wireHold{Name: q.Holds[i].Name, Until: h.(map[string]any)["until"].(string)}
		}
	}
	if a := q.attempt(); a > 1 {
		w.Attempt = float64(a)
		if q.MaxAttempts > 0 {
			w.MaxAttempts = float64(q.MaxAttempts)
		}
		errs := make([]wireError, len(q.Errors))
		for i, e := range q.Errors {
			errs[i] = wireError{Message: e.Message, Pointer: e.Pointer}
		}
		w.Errors = &errs
	}
	return w
}

// wireData is wireObject's map as a struct: its members in the order of
// the map's sorted keys, each left out exactly when wireObject leaves it
// out (question_test.go holds the two to the same bytes).
type wireData struct {
	jsonwrite.Own                   // AppendJSON
	About         map[string]string `json:"about,omitempty"`
	Schema        any               `json:"answerSchema"`
	Attempt       float64           `json:"attempt,omitempty"`
	Errors        *[]wireError      `json:"errors,omitempty"` // set on a re-ask, written even when empty
	Expires       string            `json:"expires"`
	Holds         []wireHold        `json:"holds,omitempty"`
	MaxAttempts   float64           `json:"maxAttempts,omitempty"`
	Options       []wireOption      `json:"options,omitempty"`
	OptionsFor    string            `json:"optionsFor,omitempty"`
	QuestionID    string            `json:"questionId"`
	Subject       any               `json:"subject,omitempty"`
}

// AppendJSON appends w as json.Marshal writes it (jsonwrite.Appender), so
// that the engine writes a question's data part without reflection; the
// schema's cached encoding (jsonwrite.Encoded) is written as it is.
// TestWireDataIsTheDataPartsEncoding holds it to json.Marshal of the map.
func (w *wireData) AppendJSON(b []byte) ([]byte, error) {
	if w == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '{')
	if len(w.About) > 0 {
		if b, err = jsonwrite.Value(append(b, `"about":`...), w.About); err != nil {
			return b, err
		}
		b = append(b, ',')
	}
	if b, err = jsonwrite.Value(append(b, `"answerSchema":`...), w.Schema); err != nil {
		return b, err
	}
	if w.Attempt != 0 {
		if b, err = jsonwrite.Float(append(b, `,"attempt":`...), w.Attempt); err != nil {
			return b, err
		}
	}
	if w.Errors != nil {
		b = append(b, `,"errors":`...)
		if *w.Errors == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i, e := range *w.Errors {
				if i > 0 {
					b = append(b, ',')
				}
				b = jsonwrite.String(append(b, `{"message":`...), e.Message)
				b = append(jsonwrite.String(append(b, `,"pointer":`...), e.Pointer), '}')
			}
			b = append(b, ']')
		}
	}
	b = jsonwrite.String(append(b, `,"expires":`...), w.Expires)
	if len(w.Holds) > 0 {
		b = append(b, `,"holds":[`...)
		for i, h := range w.Holds {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.String(append(b, `{"name":`...), h.Name)
			b = append(jsonwrite.String(append(b, `,"until":`...), h.Until), '}')
		}
		b = append(b, ']')
	}
	if w.MaxAttempts != 0 {
		if b, err = jsonwrite.Float(append(b, `,"maxAttempts":`...), w.MaxAttempts); err != nil {
			return b, err
		}
	}
	if len(w.Options) > 0 {
		b = append(b, `,"options":[`...)
		for i, o := range w.Options {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if o.Label != "" {
				b = append(jsonwrite.String(append(b, `"label":`...), o.Label), ',')
			}
			if b, err = jsonwrite.Value(append(b, `"value":`...), o.Value); err != nil {
				return b, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if w.OptionsFor != "" {
		b = jsonwrite.String(append(b, `,"optionsFor":`...), w.OptionsFor)
	}
	b = jsonwrite.String(append(b, `,"questionId":`...), w.QuestionID)
	if w.Subject != nil {
		if b, err = jsonwrite.Value(append(b, `,"subject":`...), w.Subject); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

type wireOption struct {
	Label string `json:"label,omitempty"`
	Value any    `json:"value"`
}

type wireHold struct {
	Name  string `json:"name"`
	Until string `json:"until"`
}

type wireError struct {
	Message string `json:"message"`
	Pointer string `json:"pointer"`
}

// genericJSON decodes raw JSON into generic values; invalid or empty JSON
// yields nil (Check reports it).
func genericJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	return v
}

// wireQuestion is the data part's shape when read back.
type wireQuestion struct {
	ID          *string         `json:"questionId"`
	Expires     string          `json:"expires"`
	Schema      json.RawMessage `json:"answerSchema"`
	Options     []Option        `json:"options"`
	OptionsFor  string          `json:"optionsFor"`
	Subject     map[string]any  `json:"subject"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"maxAttempts"`
	Errors      []FieldError    `json:"errors"`
	About       map[string]any  `json:"about"`
	Holds       []Held          `json:"holds"`
}

// FromMessage finds the question in an agent status message (the data part
// holding questionId and answerSchema) and decodes it; Text is the message's
// text parts joined by newlines, without the re-ask notice that Message adds.
// A first ask carries no attempt on the wire and decodes with Attempt 1. ok is
// false when the message holds no question; err is set when it holds one that
// cannot be decoded.
func FromMessage(m *a2a.Message) (q *Question, ok bool, err error) {
	if m == nil {
		return nil, false, nil
	}
	for _, p := range m.Parts {
		if p == nil {
			continue
		}
		d, isData := p.Content.(a2a.Data)
		if !isData {
			continue
		}
		raw, err := json.Marshal(d.Value)
		if err != nil || !isJSONObject(raw) {
			continue
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(raw, &keys); err != nil {
			continue
		}
		if _, has := keys[keyQuestionID]; !has {
			continue
		}
		if _, has := keys[keySchema]; !has {
			continue
		}
		var w wireQuestion
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, true, fmt.Errorf("question data part: %w", err)
		}
		if w.ID == nil || *w.ID == "" {
			return nil, true, errors.New("question data part: questionId must be a non-empty string")
		}
		q := &Question{
			ID:          *w.ID,
			Schema:      compactJSON(w.Schema),
			Options:     w.Options,
			OptionsFor:  w.OptionsFor,
			Subject:     w.Subject,
			Attempt:     max(w.Attempt, 1), // a first ask carries no attempt
			MaxAttempts: w.MaxAttempts,
			Errors:      w.Errors,
			Holds:       w.Holds,
		}
		for k, v := range w.About {
			if sv, ok := v.(string); ok {
				if q.About == nil {
					q.About = map[string]string{}
				}
				q.About[k] = sv
			}
		}
		if w.Expires != "" {
			t, err := time.Parse(time.RFC3339Nano, w.Expires)
			if err != nil {
				return nil, true, fmt.Errorf("question data part: expires %q is not an RFC 3339 time", w.Expires)
			}
			q.Expires = t.UTC()
		}
		q.Text = text.Of(m)
		if q.attempt() > 1 {
			if base, found := strings.CutSuffix(q.Text, "\n\n"+q.Notice()); found {
				q.Text = base
			}
		}
		return q, true, nil
	}
	return nil, false, nil
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return append(json.RawMessage(nil), raw...)
	}
	return json.RawMessage(b.Bytes())
}

// ReAsk returns the next question after an invalid answer: the same text,
// schema, options, expiry and MaxAttempts; the new ID newID; Attempt+1 (an
// unset Attempt counts as 1); Errors errs.
func (q *Question) ReAsk(newID string, errs []FieldError) *Question {
	return &Question{
		ID:          newID,
		Text:        q.Text,
		Expires:     q.Expires,
		Schema:      append(json.RawMessage(nil), q.Schema...),
		Options:     append([]Option(nil), q.Options...),
		OptionsFor:  q.OptionsFor,
		Subject:     maps.Clone(q.Subject),
		Attempt:     q.attempt() + 1,
		MaxAttempts: q.MaxAttempts,
		Errors:      append([]FieldError(nil), errs...),
		About:       maps.Clone(q.About),
		Holds:       append([]Held(nil), q.Holds...),
	}
}

// Notice is the line a re-ask's text part ends with, e.g.
// "That answer was not accepted: expected one of CC-4410, CC-4420. (attempt 2 of 3)".
// It is "" for a first ask.
func (q *Question) Notice() string {
	a := q.attempt()
	if a <= 1 {
		return ""
	}
	var b strings.Builder
	b.WriteString("That answer was not accepted")
	if s := ErrorsText(q.Errors); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	if !strings.HasSuffix(b.String(), ".") {
		b.WriteByte('.')
	}
	if q.MaxAttempts > 0 {
		fmt.Fprintf(&b, " (attempt %d of %d)", a, q.MaxAttempts)
	} else {
		fmt.Fprintf(&b, " (attempt %d)", a)
	}
	return b.String()
}

func joinNotice(text, notice string) string {
	if text == "" {
		return notice
	}
	return text + "\n\n" + notice
}

// ErrorsText renders errors for a person: the messages joined by "; ". When
// the errors concern more than one place in the answer, each message is
// prefixed with the field it is about (e.g. "trip.date: ...").
func ErrorsText(errs []FieldError) string {
	if len(errs) == 0 {
		return ""
	}
	distinct := map[string]struct{}{}
	for _, e := range errs {
		distinct[e.Pointer] = struct{}{}
	}
	prefix := len(distinct) > 1
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		msg := strings.TrimSpace(e.Message)
		if prefix && e.Pointer != "" {
			// Messages such as "missing required field to" name the field already.
			if !strings.Contains(msg, "field "+lastToken(e.Pointer)) {
				msg = fieldName(e.Pointer) + ": " + msg
			}
		}
		parts = append(parts, msg)
	}
	return strings.Join(parts, "; ")
}

// fieldName turns a JSON pointer into a dotted name for people: "/trip/date" ->
// "trip.date".
func fieldName(ptr string) string {
	toks := pointerTokens(ptr)
	return strings.Join(toks, ".")
}

func lastToken(ptr string) string {
	toks := pointerTokens(ptr)
	if len(toks) == 0 {
		return ""
	}
	return toks[len(toks)-1]
}

func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		t = strings.ReplaceAll(t, "~1", "/")
		toks[i] = strings.ReplaceAll(t, "~0", "~")
	}
	return toks
}

// escapeToken escapes one JSON pointer reference token.
func escapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	s = strings.ReplaceAll(s, "~", "~0")
	return strings.ReplaceAll(s, "/", "~1")
}

func pointerOf(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapeToken(t))
	}
	return b.String()
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}
