package question

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Option is one entry of a small closed set of answers for one field of
// the answer (the option field: [Question.OptionsFor], or the schema's only
// required property). Value is any JSON value valid for that field (a
// string, a number, true or false, an object); Label is what a person sees
// and may type instead.
type Option struct {
	Value any    `json:"value"`
	Label string `json:"label,omitempty"`
}

// SameValue reports whether two JSON values are equal as JSON: 1200 and
// 1200.0 are the same, so are two objects with the same members in another
// order.
func SameValue(a, b any) bool {
	ca, errA := canonical(a)
	cb, errB := canonical(b)
	return errA == nil && errB == nil && ca == cb
}

// canonical is v's JSON encoding after a trip through generic values, so
// that numbers and key order compare equal.
func canonical(v any) (string, error) {
	if scalar(v) {
		raw, err := json.Marshal(v) // decoding and encoding again changes nothing
		return string(raw), err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var g any
	if err := json.Unmarshal(raw, &g); err != nil {
		return "", err
	}
	out, err := json.Marshal(g)
	return string(out), err
}

// generic turns v into the values JSON decodes to (map[string]any, []any,
// string, float64, bool, nil), so that it looks the same in process as it
// does after a trip over the wire.
func generic(v any) any {
	if scalar(v) {
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var g any
	if err := json.Unmarshal(raw, &g); err != nil {
		return v
	}
	return g
}

// scalar reports whether v is a value JSON decodes to as it is: nil, a
// bool, a finite float64 or a valid UTF-8 string (the usual option value).
func scalar(v any) bool {
	switch x := v.(type) {
	case nil, bool:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case string:
		return utf8.ValidString(x)
	}
	return false
}

// ValueText renders an option's value for a person and for a text answer:
// a string as it is, anything else as JSON (true, 1200, {"a":1}).
func ValueText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	c, err := canonical(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return c
}

// Words a person types for yes and no.
var (
	yesWords = []string{"yes", "y", "true", "ok", "okay", "approve", "approved", "sure"}
	noWords  = []string{"no", "n", "false", "deny", "denied", "reject"}
)

// boolWord reads a yes or no word.
func boolWord(text string) (value, ok bool) {
	t := strings.ToLower(strings.TrimRight(strings.TrimSpace(text), ".!"))
	for _, w := range yesWords {
		if t == w {
			return true, true
		}
	}
	for _, w := range noWords {
		if t == w {
			return false, true
		}
	}
	return false, false
}

// matchOption finds the option a text answer names, when exactly one fits.
// In order, the first rule that any option meets decides: the text is an
// option's value (a string ignoring case, any other value as its JSON); it
// is an option's label (ignoring case); it is a yes or no word and one
// option's value is true or false; it is how a label begins, up to a word
// boundary ("yes" for "Yes, pay"). Ambiguous is true when a rule fits more
// than one option.
func matchOption(opts []Option, text string) (value any, ok, ambiguous bool) {
	text = strings.TrimSpace(text)
	rules := []func(o Option) bool{
		func(o Option) bool {
			if s, isStr := o.Value.(string); isStr {
				return strings.EqualFold(text, s)
			}
			return SameValue(o.Value, jsonOrString(text))
		},
		func(o Option) bool { return o.Label != "" && strings.EqualFold(text, o.Label) },
		func(o Option) bool {
			b, isWord := boolWord(text)
			ov, isBool := o.Value.(bool)
			return isWord && isBool && ov == b
		},
		func(o Option) bool { return o.Label != "" && labelBegins(o.Label, text) },
	}
	for _, rule := range rules {
		var found []any
		for _, o := range opts {
			if rule(o) {
				found = append(found, o.Value)
			}
		}
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], true, false
		default:
			return nil, false, true
		}
	}
	return nil, false, false
}

// jsonOrString decodes text as JSON, or keeps it as a string.
func jsonOrString(text string) any {
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return text
	}
	return v
}

// labelBegins reports whether label begins with text (ignoring case) and
// the next character of the label, if any, is not a letter or digit.
func labelBegins(label, text string) bool {
	if text == "" || len(text) >= len(label) {
		return false
	}
	if !strings.EqualFold(label[:len(text)], text) {
		return false
	}
	next := []rune(label[len(text):])[0]
	return !unicode.IsLetter(next) && !unicode.IsDigit(next)
}

// textValue reads a text answer as a value of a field whose schema types
// are types: a string as it is, a yes or no word for a boolean, a number
// for a number or an integer. ok is false when the text is none of these.
func textValue(types []string, text string) (any, bool) {
	for _, t := range types {
		if t == "string" {
			return text, true
		}
	}
	for _, t := range types {
		switch t {
		case "boolean":
			if b, ok := boolWord(text); ok {
				return b, true
			}
		case "number", "integer":
			if f, err := strconv.ParseFloat(strings.TrimSpace(text), 64); err == nil {
				return f, true
			}
		}
	}
	return nil, false
}

// optionValues lists the options' values for a message: "CC-4410, CC-4420",
// or with labels where a value is not a string, "true (Yes, pay), false (No)".
func optionValues(opts []Option) string {
	vals := make([]string, len(opts))
	for i, o := range opts {
		vals[i] = ValueText(o.Value)
		if _, isStr := o.Value.(string); !isStr && o.Label != "" {
			vals[i] += " (" + o.Label + ")"
		}
	}
	return strings.Join(vals, ", ")
}

// MatchOption finds the option a person's text names, by the rules a text
// answer follows (see [Parse]); ok is false when none or several fit.
func MatchOption(opts []Option, text string) (value any, ok bool) {
	v, ok, _ := matchOption(opts, text)
	return v, ok
}

// OptionText renders an option for a person: its label, with its value
// when that says something the label does not ("CC-4410 — Engineering").
func OptionText(o Option) string {
	v := ValueText(o.Value)
	switch {
	case o.Label == "" || o.Label == v:
		return v
	case isString(o.Value):
		return v + " — " + o.Label
	}
	return o.Label
}

func isString(v any) bool {
	_, ok := v.(string)
	return ok
}
