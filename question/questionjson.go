package question

import (
	"encoding/json"
	"strconv"

	"github.com/askpoint/askpoint/internal/jsonscan"
	"github.com/askpoint/askpoint/internal/jsonwrite"
	"github.com/askpoint/askpoint/internal/questionwire"
)

// The engine stores the open question on every ask and reads it back on
// every answer. It does both through questionwire, by hand, without
// reflection: encodeQuestion writes the bytes json.Marshal writes for a
// Question, decodeQuestion reads them into the value json.Unmarshal gives
// (FuzzQuestionJSON holds them together). What the hand-written code does
// not handle as encoding/json would goes to encoding/json.

func init() {
	questionwire.RegisterCodec(encodeQuestion, decodeQuestion)
}

// encodeQuestion is json.Marshal(q).
func encodeQuestion(q *Question) ([]byte, error) {
	if len(q.Schema) > 0 && !jsonwrite.RawAsIs(q.Schema) || q.Schema != nil && len(q.Schema) == 0 {
		return json.Marshal(q)
	}
	n := 128 + len(q.ID) + len(q.Text) + len(q.Schema) + len(q.OptionsFor) + 48*len(q.Options) + 64*len(q.Errors) + 64*len(q.Holds)
	b, err := appendQuestion(make([]byte, 0, n), q)
	if err != nil {
		return json.Marshal(q) // and its error
	}
	return b, nil
}

// appendQuestion appends q as json.Marshal writes it, its schema taken as
// jsonwrite.RawAsIs says it is (or nil).
func appendQuestion(b []byte, q *Question) ([]byte, error) {
	b = jsonwrite.String(append(b, `{"questionId":`...), q.ID)
	b = jsonwrite.String(append(b, `,"text":`...), q.Text)
	b, err := jsonwrite.Time(append(b, `,"expires":`...), q.Expires)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"answerSchema":`...)
	if q.Schema == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, q.Schema...)
	}
	if len(q.Options) > 0 {
		b = append(b, `,"options":[`...)
		for i, o := range q.Options {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = jsonwrite.Value(append(b, `{"value":`...), o.Value); err != nil {
				return nil, err
			}
			if o.Label != "" {
				b = jsonwrite.String(append(b, `,"label":`...), o.Label)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if q.OptionsFor != "" {
		b = jsonwrite.String(append(b, `,"optionsFor":`...), q.OptionsFor)
	}
	if len(q.Subject) > 0 {
		if b, err = jsonwrite.Object(append(b, `,"subject":`...), q.Subject); err != nil {
			return nil, err
		}
	}
	if q.Attempt != 0 {
		b = strconv.AppendInt(append(b, `,"attempt":`...), int64(q.Attempt), 10)
	}
	if q.MaxAttempts != 0 {
		b = strconv.AppendInt(append(b, `,"maxAttempts":`...), int64(q.MaxAttempts), 10)
	}
	if len(q.Errors) > 0 {
		b = append(b, `,"errors":[`...)
		for i, e := range q.Errors {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.String(append(b, `{"pointer":`...), e.Pointer)
			b = append(jsonwrite.String(append(b, `,"message":`...), e.Message), '}')
		}
		b = append(b, ']')
	}
	if len(q.About) > 0 {
		if b, err = jsonwrite.Value(append(b, `,"about":`...), q.About); err != nil {
			return nil, err
		}
	}
	if len(q.Holds) > 0 {
		b = append(b, `,"holds":[`...)
		for i, h := range q.Holds {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.String(append(b, `{"name":`...), h.Name)
			if b, err = jsonwrite.Time(append(b, `,"until":`...), h.Until); err != nil {
				return nil, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// decodeQuestion is json.Unmarshal(raw, q) for a zero q.
func decodeQuestion(raw []byte, q *Question) error {
	if readQuestion(raw, q) {
		return nil
	}
	*q = Question{}
	return json.Unmarshal(raw, q)
}

// questionNames, optionNames, fieldErrorNames and heldNames are the
// members of Question, Option, FieldError and Held, in the order of their
// readers' cases.
var (
	questionNames = []string{"questionId", "text", "expires", "answerSchema", "options", "optionsFor", "subject",
		"attempt", "maxAttempts", "errors", "about", "holds"}
	optionNames     = []string{"value", "label"}
	fieldErrorNames = []string{"pointer", "message"}
	heldNames       = []string{"name", "until"}
)

// readQuestion reads raw into q (a zero Question) as json.Unmarshal does,
// for the form appendQuestion writes: each member named as written, once.
// It reports false for anything else, which json.Unmarshal then decodes.
func readQuestion(raw []byte, q *Question) bool {
	r := jsonscan.NewReader(raw)
	ok := r.Members(questionNames, func(i int) bool {
		switch i {
		case 0:
			return r.StringOrNull(&q.ID)
		case 1:
			return r.StringOrNull(&q.Text)
		case 2:
			return r.Time(&q.Expires)
		case 3:
			return r.RawMessage(&q.Schema)
		case 4:
			return jsonscan.Objects(&r, &q.Options, func(o *Option) bool {
				return r.Members(optionNames, func(i int) bool {
					if i == 0 {
						v, ok := r.Value()
						o.Value = v
						return ok
					}
					return r.StringOrNull(&o.Label)
				})
			})
		case 5:
			return r.StringOrNull(&q.OptionsFor)
		case 6:
			var ok bool
			q.Subject, ok = r.Map()
			return ok
		case 7:
			return r.Int(&q.Attempt)
		case 8:
			return r.Int(&q.MaxAttempts)
		case 9:
			return jsonscan.Objects(&r, &q.Errors, func(e *FieldError) bool {
				return r.Members(fieldErrorNames, func(i int) bool {
					if i == 0 {
						return r.StringOrNull(&e.Pointer)
					}
					return r.StringOrNull(&e.Message)
				})
			})
		case 10:
			if r.Null() {
				q.About = nil
				return true
			}
			about := map[string]string{}
			q.About = about
			return r.Object(func(name []byte) bool {
				s, ok := r.String() // a null is json.Unmarshal's
				about[string(name)] = s
				return ok
			})
		default:
			return jsonscan.Objects(&r, &q.Holds, func(h *Held) bool {
				return r.Members(heldNames, func(i int) bool {
					if i == 0 {
						return r.StringOrNull(&h.Name)
					}
					return r.Time(&h.Until)
				})
			})
		}
	})
	return ok && r.End()
}
