package question

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/text"
)

// Answer is a caller's reply, parsed.
type Answer struct {
	QuestionID string          // as sent by the caller ("" when none was sent)
	Action     string          // "" (an answer), ActionDecline or ActionCancel
	Reason     string          // with an action: the caller's reason, if any
	Fields     json.RawMessage // the answer object without questionId/action (and reason, with an action); a JSON object
	FromText   bool            // read from a text part
}

// Actions a caller may take instead of answering.
const (
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ErrTooDeep is returned (wrapped, with a message saying how deep) for an
// answer whose JSON nests deeper than MaxAnswerDepth: such an answer is
// refused, not re-asked, so that nothing of it is kept.
var ErrTooDeep = errors.New("answer nests too deep")

// ErrWrongQuestion is returned (wrapped, with a message naming the sent ID and
// the open question's ID) when an answer names a questionId other than the
// open question's.
var ErrWrongQuestion = errors.New("answer names a question that is not open")

// Parse reads an answer message against the open question q. maxBytes bounds
// the answer's JSON encoding (<= 0 means DefaultMaxAnswerBytes).
//
//   - A data part whose value is a JSON object is the answer. If it names a
//     questionId, that must be q.ID, else the error wraps ErrWrongQuestion.
//     An "action" of decline or cancel (with an optional string "reason")
//     makes an action answer, which is not validated against the schema; any
//     other action is a field error at /action.
//   - Otherwise the message's text, trimmed. With options, it answers
//     {optionField: value} when it names exactly one option: by its value
//     (a string ignoring case, any other value as JSON), by its label
//     (ignoring case), by a yes or no word for an option whose value is
//     true or false, or by how the option's label begins up to a word
//     boundary ("yes" for "Yes, pay"). Without options and with a schema of
//     exactly one required property, it answers {field: value} when the
//     text reads as that property's type (a string; yes or no for a
//     boolean; a number). Anything else is a field error.
//   - A message with neither is a field error saying what is expected.
//
// It returns (answer, nil, nil) for a valid answer, (answer or nil, errors,
// nil) for an invalid one and (nil, nil, err) for a wrong question ID
// (ErrWrongQuestion) or a data part that nests deeper than MaxAnswerDepth
// (ErrTooDeep).
func Parse(m *a2a.Message, q *Question, maxBytes int) (*Answer, []FieldError, error) {
	if q == nil {
		return nil, nil, errors.New("question: Parse needs the open question")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxAnswerBytes
	}
	c, err := compileSchema(q.Schema)
	if err != nil {
		return nil, []FieldError{{Message: "the question's answer schema is broken, so no answer can be checked: " + err.Error()}}, nil
	}

	var (
		texts        []string
		nonObjectDat bool
	)
	if m != nil {
		for _, p := range m.Parts {
			if p == nil {
				continue
			}
			switch v := p.Content.(type) {
			case a2a.Data:
				raw, err := json.Marshal(v.Value)
				if err != nil || !isJSONObject(raw) {
					nonObjectDat = true
					continue
				}
				if d := depth(raw); d > MaxAnswerDepth {
					return nil, nil, fmt.Errorf("%w: the answer to question %q nests %d levels deep; answers may nest at most %d", ErrTooDeep, q.ID, d, MaxAnswerDepth)
				}
				return parseData(raw, q, c, maxBytes)
			case a2a.Text:
				texts = append(texts, string(v))
			}
		}
	}

	text := strings.TrimSpace(strings.Join(texts, "\n"))
	if text == "" {
		msg := expectation(q, c)
		if nonObjectDat {
			msg = "the data part must hold a JSON object; " + msg
		}
		return nil, []FieldError{{Message: msg}}, nil
	}
	if enc, _ := json.Marshal(text); len(enc) > maxBytes {
		return nil, []FieldError{tooBig(len(enc), maxBytes)}, nil
	}
	return parseText(text, q, c, maxBytes)
}

func tooBig(n, max int) FieldError {
	return FieldError{Message: fmt.Sprintf("answer is %d bytes; the limit is %d bytes", n, max)}
}

// parseData reads a data part's JSON object, json.Marshal's encoding of
// the part's value: taken apart in place, the fields decoded once for the
// schema. Bytes of another form (a value whose MarshalJSON writes keys out
// of order or twice, keys that need escaping) are read as before, by
// parseDataDecoded; both give the same answer and the same errors.
func parseData(raw []byte, q *Question, c *compiled, maxBytes int) (*Answer, []FieldError, error) {
	var buf [8]member
	ms, ok := plainMembers(raw, buf[:0])
	if !ok {
		return parseDataDecoded(raw, q, c, maxBytes)
	}
	var qid, act, rsn []byte
	for _, m := range ms {
		switch string(m.key) {
		case keyQuestionID:
			qid = m.val
		case keyAction:
			act = m.val
		case keyReason:
			rsn = m.val
		}
	}
	a := &Answer{}
	if qid != nil && !isNull(qid) {
		if err := a.readQuestionID(qid, q); err != nil {
			return nil, nil, err
		}
	}
	if len(raw) > maxBytes {
		return nil, []FieldError{tooBig(len(raw), maxBytes)}, nil
	}
	var errs []FieldError
	withAction := act != nil && !isNull(act)
	if withAction {
		errs = a.readAction(act, rsn)
	}
	fields := raw
	if qid != nil || act != nil {
		// What json.Marshal writes for the object without them.
		fields, _ = membersObject(ms, len(raw), func(m member) (keep, ok bool) {
			switch k := string(m.key); {
			case k == keyQuestionID, k == keyAction, k == keyReason && withAction:
				return false, true
			}
			return true, true
		})
	}
	return a.finish(fields, errs, func() []FieldError {
		if v, ok := decodeCompact(fields); ok {
			return q.validateValue(c, v)
		}
		return q.Validate(fields)
	})
}

// readQuestionID reads the questionId an answer names into a; an error
// (wrapping ErrWrongQuestion) when it is not q's.
func (a *Answer) readQuestionID(v json.RawMessage, q *Question) error {
	var sent string
	if err := json.Unmarshal(v, &sent); err != nil {
		return fmt.Errorf("%w: the answer names question %s, but the open question is %q", ErrWrongQuestion, string(v), q.ID)
	}
	if sent != q.ID {
		return fmt.Errorf("%w: the answer names question %q, but the open question is %q", ErrWrongQuestion, sent, q.ID)
	}
	a.QuestionID = sent
	return nil
}

// readAction reads an answer's action and reason into a, returning what is
// wrong with them.
func (a *Answer) readAction(act, reason json.RawMessage) []FieldError {
	var errs []FieldError
	var s string
	if err := json.Unmarshal(act, &s); err != nil {
		errs = append(errs, FieldError{Pointer: "/" + keyAction, Message: "expected decline or cancel, got " + kindOfJSON(act)})
	} else if s != ActionDecline && s != ActionCancel {
		errs = append(errs, FieldError{Pointer: "/" + keyAction, Message: fmt.Sprintf("unknown action %s; expected decline or cancel", quote(s))})
	} else {
		a.Action = s
	}
	if reason != nil && !isNull(reason) {
		if err := json.Unmarshal(reason, &a.Reason); err != nil {
			errs = append(errs, FieldError{Pointer: "/" + keyReason, Message: "expected a string, got " + kindOfJSON(reason)})
		}
	}
	return errs
}

// parseDataDecoded reads a data part's JSON object through a map of its
// members.
func parseDataDecoded(raw []byte, q *Question, c *compiled, maxBytes int) (*Answer, []FieldError, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, []FieldError{{Message: "the data part is not a valid JSON object"}}, nil
	}
	a := &Answer{}
	if v, has := obj[keyQuestionID]; has && !isNull(v) {
		if err := a.readQuestionID(v, q); err != nil {
			return nil, nil, err
		}
	}
	if len(raw) > maxBytes {
		return nil, []FieldError{tooBig(len(raw), maxBytes)}, nil
	}
	delete(obj, keyQuestionID)

	var errs []FieldError
	if v, has := obj[keyAction]; has && !isNull(v) {
		errs = a.readAction(v, obj[keyReason])
		delete(obj, keyReason)
	}
	delete(obj, keyAction)

	fields, err := json.Marshal(obj)
	if err != nil {
		return nil, []FieldError{{Message: "the data part is not a valid JSON object"}}, nil
	}
	return a.finish(fields, errs, func() []FieldError { return q.Validate(fields) })
}

// finish is the answer a with its fields: errs when its action or reason
// is wrong, no check of an action answer, else what validate finds.
func (a *Answer) finish(fields json.RawMessage, errs []FieldError, validate func() []FieldError) (*Answer, []FieldError, error) {
	a.Fields = fields
	if len(errs) > 0 {
		a.Action, a.Reason = "", ""
		return a, errs, nil
	}
	if a.Action != "" {
		return a, nil, nil
	}
	if errs := validate(); len(errs) > 0 {
		return a, errs, nil
	}
	return a, nil, nil
}

// parseText reads a text answer.
func parseText(text string, q *Question, c *compiled, maxBytes int) (*Answer, []FieldError, error) {
	if len(q.Options) > 0 {
		field, err := optionField(c, q)
		if err != nil {
			return nil, []FieldError{{Message: "the question's options do not fit its schema: " + err.Error()}}, nil
		}
		value, ok, ambiguous := matchOption(q.Options, text)
		if !ok {
			msg := expectedOneOf(q.Options)
			if ambiguous {
				msg = fmt.Sprintf("%s fits more than one option; %s", quote(text), msg)
			}
			return nil, []FieldError{{Pointer: "/" + escapeToken(field), Message: msg}}, nil
		}
		return textAnswer(q, field, value, maxBytes)
	}
	if len(c.required) == 1 {
		if v, ok := textValue(c.propType[c.required[0]], text); ok {
			return textAnswer(q, c.required[0], v, maxBytes)
		}
	}
	return nil, []FieldError{{Message: expectation(q, c)}}, nil
}

func typeAllowsString(types []string) bool {
	for _, t := range types {
		if t == "string" {
			return true
		}
	}
	return false
}

func textAnswer(q *Question, field string, value any, maxBytes int) (*Answer, []FieldError, error) {
	fields, err := json.Marshal(map[string]any{field: value})
	if err != nil {
		return nil, []FieldError{{Message: "the answer could not be encoded"}}, nil
	}
	if len(fields) > maxBytes {
		return nil, []FieldError{tooBig(len(fields), maxBytes)}, nil
	}
	a := &Answer{Fields: fields, FromText: true}
	if errs := q.Validate(fields); len(errs) > 0 {
		return a, errs, nil
	}
	return a, nil, nil
}

// expectation says what kind of answer the question needs.
func expectation(q *Question, c *compiled) string {
	names := c.required
	if len(names) == 0 {
		names = c.props
	}
	var b strings.Builder
	b.WriteString("expected a data part (application/json) with questionId")
	if len(names) > 0 {
		b.WriteString(" and the field")
		if len(names) > 1 {
			b.WriteByte('s')
		}
		b.WriteByte(' ')
		b.WriteString(strings.Join(names, ", "))
	}
	if len(q.Options) > 0 {
		b.WriteString(", or text naming one of ")
		b.WriteString(optionValues(q.Options))
	} else if len(c.required) == 1 && typeAllowsString(c.propType[c.required[0]]) {
		b.WriteString(", or text")
	} else if len(c.required) == 1 && len(c.propType[c.required[0]]) > 0 {
		b.WriteString(", or text giving ")
		b.WriteString(joinOr(withArticles(c.propType[c.required[0]])))
	}
	return b.String()
}

func isNull(raw json.RawMessage) bool {
	return strings.TrimSpace(string(raw)) == "null"
}

func kindOfJSON(raw json.RawMessage) string {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "invalid JSON"
	}
	return text.JSONKind(v)
}

// Decode decodes a valid answer's fields into T: the whole answer object,
// or for a single-value T (see [SchemaFor]) its [ScalarField].
func Decode[T any](a *Answer) (T, error) {
	var v T
	if a == nil {
		return v, errors.New("question: no answer to decode")
	}
	if scalarAnswer(reflect.TypeFor[T]()) {
		return decodeScalar[T](a.Fields)
	}
	if err := json.Unmarshal(a.Fields, &v); err != nil {
		return v, fmt.Errorf("question: decoding answer: %w", err)
	}
	return v, nil
}

// depth is how deep valid JSON nests: 0 for a scalar, 1 for {} or [].
func depth(raw []byte) int {
	d, deepest := 0, 0
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '"':
			for i++; i < len(raw) && raw[i] != '"'; i++ {
				if raw[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			d++
			deepest = max(deepest, d)
		case '}', ']':
			d--
		}
	}
	return deepest
}
