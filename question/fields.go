package question

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Kind says how a person enters a field's value. Every face (the terminal
// prompts, the web inbox's form) picks its input from it.
type Kind string

// The kinds of field.
const (
	KindChoice  Kind = "choice"  // one of a closed set (Field.Options)
	KindText    Kind = "text"    // a string, maybe with a pattern and lengths
	KindDate    Kind = "date"    // a string with format date (YYYY-MM-DD)
	KindNumber  Kind = "number"  // a number, maybe with bounds
	KindInteger Kind = "integer" // an integer, maybe with bounds
	KindBoolean Kind = "boolean" // yes or no
	KindJSON    Kind = "json"    // anything else, typed as JSON
)

// FieldOption is one value a choice field may take: any JSON value, and a
// label for people ("" shows the value itself).
type FieldOption struct {
	Value any    `json:"value"`
	Label string `json:"label,omitempty"`
}

// Text is how the option is shown: its label, else its value.
func (o FieldOption) Text() string {
	if o.Label != "" {
		return o.Label
	}
	return DisplayValue(o.Value)
}

// Field is one top-level property of a question's answer schema, with what a
// person needs to see to answer it and what the schema forbids. It is the one
// model every face is built from: the terminal and the web form show the same
// fields with the same constraints, and read a person's input with the same
// Parse.
type Field struct {
	Name        string
	Title       string // the schema's "title" ("" when none)
	Description string
	Required    bool
	Kind        Kind
	Types       []string // the schema's "type"
	Pattern     string
	Format      string
	// Options is the closed set of a choice field: the question's options
	// for its option field, else the schema's enum (labelled by enumNames,
	// MCP's legacy titles, when there is one per value), const, or oneOf/anyOf of
	// consts (with their titles as labels).
	Options []FieldOption
	// Enum is the schema's "enum" as written.
	Enum        []any
	Default     any // the schema's "default": a value the agent proposes
	HasDefault  bool
	Examples    []any // the schema's "examples"
	Minimum     *float64
	Maximum     *float64
	ExclMinimum *float64
	ExclMaximum *float64
	MinLength   *int
	MaxLength   *int
	// Items is the closed set of an array field's items (the schema's
	// "items" with an enum, a const, or a oneOf/anyOf of consts, labelled
	// as Options are): a multi-choice, answered with an array of some of
	// these values, at least MinItems and at most MaxItems of them. Its
	// Kind stays KindJSON: the terminal and the web form take it as
	// JSON, an MCP form as a multi-select.
	Items    []FieldOption
	MinItems *int
	MaxItems *int
}

// Pointer is the field's JSON pointer in the answer ("/costCentre").
func (f Field) Pointer() string { return pointerOf([]string{f.Name}) }

// Label is the field's name for people: its title, else its name.
func (f Field) Label() string {
	if f.Title != "" {
		return f.Title
	}
	return f.Name
}

// Is says whether the field's type list includes t.
func (f Field) Is(t string) bool { return slices.Contains(f.Types, t) }

// Constraints describes the field's constraints in a few words, e.g.
// "string, pattern ^CC-[0-9]{4}$, required".
func (f Field) Constraints() string {
	var parts []string
	if len(f.Types) > 0 {
		parts = append(parts, strings.Join(f.Types, " or "))
	}
	if len(f.Options) > 0 {
		vals := make([]string, len(f.Options))
		for i, o := range f.Options {
			vals[i] = DisplayValue(o.Value)
		}
		parts = append(parts, "one of "+strings.Join(vals, ", "))
	}
	if f.Pattern != "" {
		parts = append(parts, "pattern "+f.Pattern)
	}
	if f.Format != "" {
		parts = append(parts, "format "+f.Format)
	}
	if f.Minimum != nil {
		parts = append(parts, ">= "+num(*f.Minimum))
	}
	if f.ExclMinimum != nil {
		parts = append(parts, "> "+num(*f.ExclMinimum))
	}
	if f.Maximum != nil {
		parts = append(parts, "<= "+num(*f.Maximum))
	}
	if f.ExclMaximum != nil {
		parts = append(parts, "< "+num(*f.ExclMaximum))
	}
	if f.MinLength != nil {
		parts = append(parts, fmt.Sprintf("at least %d characters", *f.MinLength))
	}
	if f.MaxLength != nil {
		parts = append(parts, fmt.Sprintf("at most %d characters", *f.MaxLength))
	}
	if f.Required {
		parts = append(parts, "required")
	} else {
		parts = append(parts, "optional")
	}
	return strings.Join(parts, ", ")
}

// Choose finds the option a person typed: its value or its label, ignoring
// case and surrounding space (as a text answer is matched on the wire).
func (f Field) Choose(text string) (any, bool) {
	opts := make([]Option, len(f.Options))
	for i, o := range f.Options {
		opts[i] = Option{Value: o.Value, Label: o.Label}
	}
	// The rules a text answer follows: value, label, yes or no for true
	// and false, how a label begins; never a guess between two.
	return MatchOption(opts, text)
}

// Parse reads what a person typed as a value of the field: a choice by an
// option's value or label, a number, yes/no, a date, JSON. The error says what
// was expected. Parse checks the value's type only; Question.Validate checks
// the answer against the schema and the options.
func (f Field) Parse(text string) (any, error) {
	text = strings.TrimSpace(text)
	if f.Kind == KindChoice {
		if v, ok := f.Choose(text); ok {
			return v, nil
		}
		return nil, fmt.Errorf("expected one of %s", f.optionValues())
	}
	if len(f.Types) == 0 {
		var v any
		if json.Unmarshal([]byte(text), &v) == nil {
			return v, nil
		}
		return text, nil
	}
	for _, typ := range []string{"integer", "number", "boolean", "object", "array", "null", "string"} {
		if !f.Is(typ) {
			continue
		}
		switch typ {
		case "integer":
			if n, err := strconv.ParseInt(text, 10, 64); err == nil {
				return n, nil
			}
		case "number":
			if n, err := strconv.ParseFloat(strings.ReplaceAll(text, ",", "."), 64); err == nil {
				return n, nil
			}
		case "boolean":
			switch strings.ToLower(text) {
			case "y", "yes", "true", "on":
				return true, nil
			case "n", "no", "false", "off":
				return false, nil
			}
		case "object", "array":
			var v any
			if json.Unmarshal([]byte(text), &v) == nil {
				return v, nil
			}
		case "null":
			if text == "null" {
				return nil, nil
			}
		case "string":
			if f.Kind == KindDate {
				if _, err := time.Parse(time.DateOnly, text); err != nil {
					return nil, fmt.Errorf("expected a date (YYYY-MM-DD)")
				}
			}
			return text, nil
		}
	}
	return nil, fmt.Errorf("expected %s", strings.Join(withArticles(f.Types), " or "))
}

func (f Field) optionValues() string {
	vals := make([]string, len(f.Options))
	for i, o := range f.Options {
		vals[i] = DisplayValue(o.Value)
	}
	return strings.Join(vals, ", ")
}

// ParseForm reads a form: what a person typed per field name. An empty
// optional field is left out; an empty required one, and input that does not
// parse, are errors at the field's pointer. The answer object is then
// validated against the question (Validate), so that a form refuses exactly
// what the agent would.
func (q *Question) ParseForm(inputs map[string]string) (map[string]any, []FieldError) {
	answer := map[string]any{}
	var errs []FieldError
	for _, f := range q.Fields() {
		text := strings.TrimSpace(inputs[f.Name])
		if text == "" {
			if f.Required {
				errs = append(errs, FieldError{Pointer: f.Pointer(), Message: "missing required field " + f.Name})
			}
			continue
		}
		v, err := f.Parse(text)
		if err != nil {
			errs = append(errs, FieldError{Pointer: f.Pointer(), Message: err.Error()})
			continue
		}
		answer[f.Name] = v
	}
	if len(errs) > 0 {
		return answer, errs
	}
	raw, err := json.Marshal(answer)
	if err != nil {
		return answer, []FieldError{{Message: "the answer cannot be encoded as JSON: " + err.Error()}}
	}
	return answer, q.Validate(raw)
}

// ErrorsByField sorts errors by the top-level field their pointer names;
// errors that name no field of the question (or the answer as a whole) are
// under "".
func (q *Question) ErrorsByField(errs []FieldError) map[string][]string {
	names := map[string]bool{}
	for _, f := range q.Fields() {
		names[f.Name] = true
	}
	out := map[string][]string{}
	for _, e := range errs {
		name := ""
		if toks := pointerTokens(e.Pointer); len(toks) > 0 && names[toks[0]] {
			name = toks[0]
		}
		msg := e.Message
		if toks := pointerTokens(e.Pointer); len(toks) > 1 && name != "" {
			msg = fieldName(e.Pointer) + ": " + msg
		}
		out[name] = append(out[name], msg)
	}
	return out
}

// ExplainError says an error about an answer in people's words, as every
// face that asks a person shows it: the field's caption and
// Field.Explain's wording ("Cost centre: Choose one of: CC-4410 —
// Engineering, …"). A message that names no field of the question is kept
// as it is.
func (q *Question) ExplainError(e FieldError) string {
	toks := pointerTokens(e.Pointer)
	if len(toks) == 0 {
		return e.Message
	}
	for _, f := range q.Fields() {
		if f.Name != toks[0] {
			continue
		}
		at := f.Caption()
		if len(toks) > 1 {
			at += " " + strings.Join(toks[1:], "/")
		}
		return at + ": " + f.Explain(e.Message)
	}
	return e.Message
}

// Proposed is the answer the agent proposes: the schema's defaults, nil when
// no field has one.
func (q *Question) Proposed() map[string]any {
	var out map[string]any
	for _, f := range q.Fields() {
		if f.HasDefault {
			if out == nil {
				out = map[string]any{}
			}
			out[f.Name] = f.Default
		}
	}
	return out
}

// Fields lists the answer schema's top-level properties: the required ones
// first in the order "required" lists them, then the others in the order the
// schema lists them. The option field's Options are the question's options.
func (q *Question) Fields() []Field {
	if q == nil {
		return nil
	}
	fields := SchemaFields(q.Schema)
	if len(q.Options) > 0 {
		of := q.OptionField()
		for i := range fields {
			if fields[i].Name != of {
				continue
			}
			fields[i].Options = fields[i].Options[:0:0]
			for _, o := range q.Options {
				fields[i].Options = append(fields[i].Options, FieldOption{Value: o.Value, Label: o.Label})
			}
			fields[i].Kind = KindChoice
		}
	}
	return fields
}

type propSchema struct {
	Type             json.RawMessage  `json:"type"`
	Title            string           `json:"title"`
	Description      string           `json:"description"`
	Pattern          string           `json:"pattern"`
	Format           string           `json:"format"`
	Enum             []any            `json:"enum"`
	EnumNames        []string         `json:"enumNames"`
	Const            *json.RawMessage `json:"const"`
	OneOf            []constSchema    `json:"oneOf"`
	AnyOf            []constSchema    `json:"anyOf"`
	Default          *json.RawMessage `json:"default"`
	Examples         []any            `json:"examples"`
	Minimum          *float64         `json:"minimum"`
	Maximum          *float64         `json:"maximum"`
	ExclusiveMinimum *float64         `json:"exclusiveMinimum"`
	ExclusiveMaximum *float64         `json:"exclusiveMaximum"`
	MinLength        *int             `json:"minLength"`
	MaxLength        *int             `json:"maxLength"`
	Items            json.RawMessage  `json:"items"`
	MinItems         *int             `json:"minItems"`
	MaxItems         *int             `json:"maxItems"`
}

type constSchema struct {
	Const *json.RawMessage `json:"const"`
	Title string           `json:"title"`
}

// SchemaFields reads the top-level properties of an answer schema (see
// Question.Fields, which also applies the question's options).
func SchemaFields(raw json.RawMessage) []Field {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var names []string
	for _, r := range s.Required {
		if !slices.Contains(names, r) {
			names = append(names, r)
		}
	}
	for _, p := range propertyOrder(raw) {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	var rest []string
	for p := range s.Properties { // anything the order scan missed
		if !slices.Contains(names, p) {
			rest = append(rest, p)
		}
	}
	slices.Sort(rest)
	names = append(names, rest...)
	out := make([]Field, 0, len(names))
	for _, name := range names {
		f := Field{Name: name, Required: slices.Contains(s.Required, name)}
		if sub, ok := s.Properties[name]; ok {
			var ps propSchema
			if json.Unmarshal(sub, &ps) == nil {
				f.Types = typeNames(genericJSON(json.RawMessage(ps.Type)))
				f.Title, f.Description, f.Pattern, f.Format, f.Enum = ps.Title, ps.Description, ps.Pattern, ps.Format, ps.Enum
				f.Minimum, f.Maximum, f.Examples = ps.Minimum, ps.Maximum, ps.Examples
				f.ExclMinimum, f.ExclMaximum = ps.ExclusiveMinimum, ps.ExclusiveMaximum
				f.MinLength, f.MaxLength = ps.MinLength, ps.MaxLength
				if ps.Default != nil {
					f.Default, f.HasDefault = genericJSON(json.RawMessage(*ps.Default)), true
				}
				f.Options = closedSet(ps)
				if slices.Equal(f.Types, []string{"array"}) && len(ps.Items) > 0 {
					var is propSchema
					if json.Unmarshal(ps.Items, &is) == nil {
						f.Items = closedSet(is)
						f.MinItems, f.MaxItems = ps.MinItems, ps.MaxItems
					}
				}
			}
		}
		f.Kind = kindOf(f)
		out = append(out, f)
	}
	return out
}

// closedSet is a property's closed set of values, if it declares one.
func closedSet(ps propSchema) []FieldOption {
	var out []FieldOption
	switch {
	case len(ps.Enum) > 0:
		// enumNames, one per value, are their labels (MCP's legacy
		// titled enum); a list of another length labels nothing.
		names := ps.EnumNames
		if len(names) != len(ps.Enum) {
			names = nil
		}
		for i, v := range ps.Enum {
			o := FieldOption{Value: v}
			if names != nil {
				o.Label = names[i]
			}
			out = append(out, o)
		}
	case ps.Const != nil:
		out = append(out, FieldOption{Value: genericJSON(json.RawMessage(*ps.Const))})
	default:
		alts := ps.OneOf
		if len(alts) == 0 {
			alts = ps.AnyOf
		}
		for _, a := range alts {
			if a.Const == nil {
				return nil // not a plain list of values
			}
			out = append(out, FieldOption{Value: genericJSON(json.RawMessage(*a.Const)), Label: a.Title})
		}
	}
	return out
}

func kindOf(f Field) Kind {
	if len(f.Options) > 0 {
		return KindChoice
	}
	var types []string
	for _, t := range f.Types {
		if t != "null" {
			types = append(types, t)
		}
	}
	if len(types) != 1 {
		if len(f.Types) == 0 && (f.Pattern != "" || f.MinLength != nil || f.MaxLength != nil) {
			return KindText
		}
		return KindJSON
	}
	switch types[0] {
	case "string":
		if f.Format == "date" {
			return KindDate
		}
		return KindText
	case "number":
		return KindNumber
	case "integer":
		return KindInteger
	case "boolean":
		return KindBoolean
	}
	return KindJSON
}

// DisplayValue shows a JSON value for people: a string as it is, anything
// else as JSON.
func DisplayValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// propertyOrder returns the keys of the schema's top-level "properties"
// object in document order (a Go map forgets it).
func propertyOrder(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil
		}
		if key, _ := tok.(string); key != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return nil
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil
		}
		var keys []string
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return keys
			}
			if k, ok := tok.(string); ok {
				keys = append(keys, k)
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return keys
			}
		}
		return keys
	}
	return nil
}

// Caption is the field's name for people in a form: its title, else its
// name in words ("costCentre" is "Cost centre", "invoice_id" "Invoice
// id", "payeeIBAN" "Payee IBAN").
func (f Field) Caption() string {
	if f.Title != "" {
		return f.Title
	}
	return Humanize(f.Name)
}

// Humanize turns a JSON name into words: camelCase, snake_case and
// kebab-case are split, words are lower case but for runs of capitals
// (IBAN), and the first letter is a capital.
func Humanize(name string) string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = nil
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case r == '_' || r == '-' || r == '.' || unicode.IsSpace(r):
			flush()
			continue
		case unicode.IsUpper(r) && len(cur) > 0:
			prevUpper := unicode.IsUpper(cur[len(cur)-1])
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if !prevUpper || nextLower {
				flush()
			}
		case unicode.IsDigit(r) != (len(cur) > 0 && unicode.IsDigit(cur[len(cur)-1])) && len(cur) > 0:
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	for i, w := range words {
		if strings.ToUpper(w) != w || len([]rune(w)) == 1 { // not an acronym
			words[i] = strings.ToLower(w)
		}
	}
	out := strings.Join(words, " ")
	if out == "" {
		return name
	}
	r := []rune(out)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// Rules says the field's constraints in words for people, "" when the
// input itself shows them (a choice, yes or no). A pattern is never shown
// as a regular expression: a field with a description or title has it
// said there; otherwise it is "in the expected format", with the schema's
// example when it has one.
func (f Field) Rules() string {
	var parts []string
	switch f.Kind {
	case KindChoice, KindBoolean:
		return ""
	case KindDate:
		parts = append(parts, "a date")
	case KindInteger, KindNumber:
		what := "a number"
		if f.Kind == KindInteger {
			what = "a whole number"
		}
		if f.Minimum != nil && f.Maximum != nil {
			what += " from " + num(*f.Minimum) + " to " + num(*f.Maximum)
		} else {
			if f.Minimum != nil {
				what += ", at least " + num(*f.Minimum)
			}
			if f.Maximum != nil {
				what += ", at most " + num(*f.Maximum)
			}
		}
		if f.ExclMinimum != nil {
			what += ", more than " + num(*f.ExclMinimum)
		}
		if f.ExclMaximum != nil {
			what += ", less than " + num(*f.ExclMaximum)
		}
		parts = append(parts, what)
	case KindJSON:
		parts = append(parts, "as JSON")
	}
	switch {
	case f.MinLength != nil && f.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("%d to %d characters", *f.MinLength, *f.MaxLength))
	case f.MinLength != nil:
		parts = append(parts, fmt.Sprintf("at least %s", plural(*f.MinLength, "character")))
	case f.MaxLength != nil:
		parts = append(parts, fmt.Sprintf("at most %s", plural(*f.MaxLength, "character")))
	}
	if f.Pattern != "" && f.Description == "" && f.Title == "" {
		parts = append(parts, "in the expected format"+f.example())
	}
	return strings.Join(parts, ", ")
}

// example is ", for example X" from the schema's examples or default.
func (f Field) example() string {
	switch {
	case len(f.Examples) > 0:
		return ", for example " + DisplayValue(f.Examples[0])
	case f.HasDefault:
		return ", for example " + DisplayValue(f.Default)
	}
	return ""
}

// Explain rewords an error about the field (from Parse, ParseForm,
// Validate, or an agent's re-ask) for people: a value that does not match
// the pattern is "not in the expected format" (with the field's
// description, else its example), a missing value is required, options
// are named by their labels. Other messages are already words and are
// kept.
func (f Field) Explain(msg string) string {
	switch {
	case msg == "missing required field "+f.Name:
		return "This is required."
	case f.Pattern != "" && strings.HasSuffix(msg, " does not match "+f.Pattern):
		got := strings.TrimSuffix(msg, " does not match "+f.Pattern)
		if hint := cmp.Or(f.Description, f.Title); hint != "" {
			return got + " is not in the expected format (" + hint + ")"
		}
		return got + " is not in the expected format" + f.example()
	case strings.HasPrefix(msg, "expected one of ") && len(f.Options) > 0:
		texts := make([]string, len(f.Options))
		for i, o := range f.Options {
			texts[i] = o.Text()
		}
		return "Choose one of: " + strings.Join(texts, ", ")
	case msg == "expected an integer":
		return "expected a whole number"
	case msg == "expected a boolean":
		return "choose yes or no"
	}
	return msg
}

// ReasonField is the name of the question's own field for a person's
// reason (a text field named reason, justification, why, rationale or
// comment), "" when it has none: a face then asks for the reason once,
// in that field, and records it as the decision's justification.
func (q *Question) ReasonField() string {
	for _, f := range q.Fields() {
		if f.Kind != KindText {
			continue
		}
		switch strings.ToLower(f.Name) {
		case "reason", "justification", "why", "rationale", "comment":
			return f.Name
		}
	}
	return ""
}
