package mcpbridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/question"
)

// textField is the one field of the form that asks a question the agent
// put in words only (no question extension data part).
const textField = "answer"

// ErrNotAForm is returned (wrapped, naming the field and why) for a
// question that MCP's flat form subset cannot express: a field of
// objects, of arrays, of several types, or of no type.
var ErrNotAForm = errors.New("mcpbridge: the question cannot be asked as an MCP form")

// form is a question as an MCP form elicitation: the requestedSchema, and
// how to read an accepted form's content back into an answer. It is built
// from question.Question.Fields, the one model every face that asks a
// person is built from.
type form struct {
	q      *question.Question // nil: a question in words only
	fields []question.Field
	schema map[string]any
	// consts maps, per choice field, the const a form sends to the
	// option's value (an option may be any JSON value; a form's choice is
	// a string).
	consts map[string]map[string]any
	// multi marks the choice fields that take several options (an array).
	multi map[string]bool
}

// formats are the string formats an MCP form knows.
var formats = map[string]bool{"email": true, "uri": true, "date": true, "date-time": true}

// formOf builds the form for q; q is nil for a question in words only,
// which is asked as one required text field, "answer".
func formOf(q *question.Question) (*form, error) {
	f := &form{q: q, consts: map[string]map[string]any{}, multi: map[string]bool{}}
	props := map[string]any{}
	required := []string{}
	if q == nil {
		props[textField] = map[string]any{"type": "string", "title": "Answer"}
		f.schema = map[string]any{"type": "object", "properties": props, "required": []string{textField}}
		return f, nil
	}
	f.fields = q.Fields()
	if len(f.fields) == 0 {
		return nil, fmt.Errorf("%w: its answer schema names no fields", ErrNotAForm)
	}
	for _, fd := range f.fields {
		p, err := f.property(fd)
		if err != nil {
			return nil, err
		}
		props[fd.Name] = p
		if fd.Required {
			required = append(required, fd.Name)
		}
	}
	f.schema = map[string]any{"type": "object", "properties": props, "required": required}
	return f, nil
}

// property is fd as a property of a form's requestedSchema.
func (f *form) property(fd question.Field) (map[string]any, error) {
	// The title and the words are the ones every face shows: the field's
	// caption, its description and, when the form cannot hold a rule (a
	// pattern, a number's exclusive bound), its rules in words (never a
	// regular expression).
	p := map[string]any{"title": fd.Caption()}
	var notes []string
	if fd.Description != "" {
		notes = append(notes, fd.Description)
	}
	lossy := fd.Pattern != "" || (fd.Kind == question.KindNumber && (fd.ExclMinimum != nil || fd.ExclMaximum != nil))
	if r := fd.Rules(); lossy && r != "" {
		notes = append(notes, r)
	}
	switch fd.Kind {
	case question.KindChoice:
		consts, alts, err := choiceSet(fd.Name, fd.Options)
		if err != nil {
			return nil, err
		}
		f.consts[fd.Name] = consts
		p["type"] = "string"
		setAlternatives(p, "oneOf", alts)
		if c, ok := constOf(consts, fd.Default); ok && fd.HasDefault {
			p["default"] = c
		}
	case question.KindJSON:
		if len(fd.Items) == 0 || !fd.Is("array") {
			return nil, notFlat(fd)
		}
		// A multi-choice: an array of some of the options, as MCP's
		// multi-select (items of enum, or of anyOf const/title).
		consts, alts, err := choiceSet(fd.Name, fd.Items)
		if err != nil {
			return nil, err
		}
		f.consts[fd.Name] = consts
		f.multi[fd.Name] = true
		items := map[string]any{}
		setAlternatives(items, "anyOf", alts)
		if _, untitled := items["enum"]; untitled {
			items["type"] = "string"
		}
		p["type"], p["items"] = "array", items
		if fd.MinItems != nil {
			p["minItems"] = *fd.MinItems
		}
		if fd.MaxItems != nil {
			p["maxItems"] = *fd.MaxItems
		}
		if vals, ok := fd.Default.([]any); ok && fd.HasDefault {
			def := []string{}
			for _, v := range vals {
				if c, ok := constOf(consts, v); ok {
					def = append(def, c)
				}
			}
			if len(def) == len(vals) {
				p["default"] = def
			}
		}
	case question.KindText, question.KindDate:
		p["type"] = "string"
		if fd.MinLength != nil {
			p["minLength"] = *fd.MinLength
		}
		if fd.MaxLength != nil {
			p["maxLength"] = *fd.MaxLength
		}
		// A form has no pattern and few formats: the rules say them, and
		// the answer is checked against them before it reaches the agent.
		if formats[fd.Format] {
			p["format"] = fd.Format
		}
		if s, ok := fd.Default.(string); ok && fd.HasDefault {
			p["default"] = s
		}
	case question.KindNumber, question.KindInteger:
		p["type"] = string(fd.Kind)
		if fd.Minimum != nil {
			p["minimum"] = *fd.Minimum
		}
		if fd.Maximum != nil {
			p["maximum"] = *fd.Maximum
		}
		// A form has inclusive bounds only: an integer's exclusive bound is
		// the next integer; a number's is the bound itself, the rules say
		// it is exclusive, and the answer is checked before it is sent.
		if b := fd.ExclMinimum; b != nil {
			if fd.Kind == question.KindInteger {
				p["minimum"] = math.Floor(*b) + 1
			} else {
				p["minimum"] = *b
			}
		}
		if b := fd.ExclMaximum; b != nil {
			if fd.Kind == question.KindInteger {
				p["maximum"] = math.Ceil(*b) - 1
			} else {
				p["maximum"] = *b
			}
		}
		if n, ok := fd.Default.(float64); ok && fd.HasDefault {
			p["default"] = n
		}
	case question.KindBoolean:
		p["type"] = "boolean"
		if b, ok := fd.Default.(bool); ok && fd.HasDefault {
			p["default"] = b
		}
	default:
		return nil, notFlat(fd)
	}
	if len(notes) > 0 {
		p["description"] = strings.Join(notes, "; ")
	}
	return p, nil
}

// notFlat is why fd cannot be a form's field.
func notFlat(fd question.Field) error {
	what := "of no single type"
	if len(fd.Types) > 0 {
		what = "of type " + strings.Join(fd.Types, " or ")
	}
	return fmt.Errorf("%w: field %q is %s, and an MCP form has only single strings, numbers, booleans, choices and arrays of choices", ErrNotAForm, fd.Name, what)
}

// alternative is one option of a choice as a form has it: its const (the
// value as text) and its title ("" when it has no label of its own).
type alternative struct{ c, title string }

// choiceSet is a closed set of options as a form's consts: the map from
// const back to the option's value, and the alternatives in order. Two
// options that read alike cannot be told apart on a form.
func choiceSet(name string, opts []question.FieldOption) (map[string]any, []alternative, error) {
	consts := map[string]any{}
	var alts []alternative
	for _, o := range opts {
		c := question.DisplayValue(o.Value)
		if _, dup := consts[c]; dup {
			return nil, nil, fmt.Errorf("%w: field %q has two options that read %q", ErrNotAForm, name, c)
		}
		consts[c] = o.Value
		title := o.Label
		if title == c {
			title = ""
		}
		alts = append(alts, alternative{c, title})
	}
	return consts, alts, nil
}

// setAlternatives writes alts into p as MCP's enum schemas have it: when
// no option has a label of its own, a plain "enum" of the consts (the
// untitled enum); otherwise key ("oneOf" for a single choice, "anyOf" for
// a multi-select's items) of {const, title}, a title for every option
// (its value where it has no label).
func setAlternatives(p map[string]any, key string, alts []alternative) {
	titled := false
	for _, a := range alts {
		titled = titled || a.title != ""
	}
	if !titled {
		enum := make([]string, len(alts))
		for i, a := range alts {
			enum[i] = a.c
		}
		p["enum"] = enum
		return
	}
	list := make([]any, len(alts))
	for i, a := range alts {
		title := a.title
		if title == "" {
			title = a.c
		}
		list[i] = map[string]any{"const": a.c, "title": title}
	}
	p[key] = list
}

// titledEnumsRevision is the MCP revision whose forms say a titled choice
// as oneOf const/title (SEP-1330). A client of an earlier revision reads an
// option's title from enumNames, and is asked so.
const titledEnumsRevision = "2025-11-25"

// forRevision is p as a client of revision v reads it: before 2025-11-25,
// each titled single choice is an enum with its enumNames. p is not
// changed.
func forRevision(p *mcp.ElicitParams, v string) *mcp.ElicitParams {
	schema, ok := p.RequestedSchema.(map[string]any)
	if v >= titledEnumsRevision || !ok {
		return p
	}
	props, _ := schema["properties"].(map[string]any)
	legacy := make(map[string]any, len(props))
	for name, raw := range props {
		legacy[name] = raw
		prop, _ := raw.(map[string]any)
		alts, _ := prop["oneOf"].([]any)
		if len(alts) == 0 {
			continue
		}
		enum, names := make([]string, len(alts)), make([]string, len(alts))
		for i, a := range alts {
			alt, _ := a.(map[string]any)
			enum[i], _ = alt["const"].(string)
			names[i], _ = alt["title"].(string)
		}
		lp := maps.Clone(prop)
		delete(lp, "oneOf")
		lp["enum"], lp["enumNames"] = enum, names
		legacy[name] = lp
	}
	out := *p
	ls := maps.Clone(schema)
	ls["properties"] = legacy
	out.RequestedSchema = ls
	return &out
}

// constOf is the const of the option whose value is v.
func constOf(consts map[string]any, v any) (string, bool) {
	for c, val := range consts {
		if question.SameValue(val, v) {
			return c, true
		}
	}
	return "", false
}

// explain rewords errors about the form's fields for people, as every
// face does (question.Field.Explain: no regular expression, options by
// their labels).
func (f *form) explain(errs []question.FieldError) []question.FieldError {
	out := make([]question.FieldError, len(errs))
	for i, e := range errs {
		out[i] = e
		for _, fd := range f.fields {
			if e.Pointer == fd.Pointer() {
				out[i].Message = fd.Explain(e.Message)
			}
		}
	}
	return out
}

// elicit is the form's elicitation, with message as its text.
func (f *form) elicit(message string) *mcp.ElicitParams {
	return &mcp.ElicitParams{Mode: "form", Message: message, RequestedSchema: f.schema}
}

// read turns an accepted form's content into the answer's fields (or, for
// a question in words only, its text). A key the form does not have, and
// a choice that is none of the form's, are errors at the field's pointer;
// an empty string in an optional field is left out, as a web form leaves
// an empty input out. The answer is checked against the question by
// client.Continue, before it is sent.
func (f *form) read(content map[string]any) (fields map[string]any, text string, errs []question.FieldError) {
	if f.q == nil {
		s, ok := content[textField].(string)
		if !ok || strings.TrimSpace(s) == "" {
			return nil, "", []question.FieldError{{Pointer: "/" + textField, Message: "expected a text answer"}}
		}
		for k := range content {
			if k != textField {
				errs = append(errs, question.FieldError{Pointer: "/" + k, Message: "the form has no field " + k})
			}
		}
		return nil, s, errs
	}
	known := map[string]question.Field{}
	for _, fd := range f.fields {
		known[fd.Name] = fd
	}
	fields = map[string]any{}
	for k, v := range content {
		fd, ok := known[k]
		if !ok {
			errs = append(errs, question.FieldError{Pointer: "/" + k, Message: "the form has no field " + k})
			continue
		}
		if s, isStr := v.(string); isStr && s == "" && !fd.Required {
			continue
		}
		if consts, choice := f.consts[k]; choice && f.multi[k] {
			picked, ok := v.([]any)
			vals := make([]any, 0, len(picked))
			for _, c := range picked {
				s, _ := c.(string)
				val, known := consts[s]
				ok = ok && known
				vals = append(vals, val)
			}
			if !ok {
				errs = append(errs, question.FieldError{Pointer: fd.Pointer(), Message: "expected a list of some of " + choices(fd.Items)})
				continue
			}
			v = vals
		} else if choice {
			s, _ := v.(string)
			val, ok := consts[s]
			if !ok {
				errs = append(errs, question.FieldError{Pointer: fd.Pointer(), Message: "expected one of " + choices(fd.Options)})
				continue
			}
			v = val
		}
		fields[k] = v
	}
	return fields, "", errs
}

func choices(opts []question.FieldOption) string {
	var out []string
	for _, o := range opts {
		out = append(out, question.DisplayValue(o.Value))
	}
	return strings.Join(out, ", ")
}

// ErrNotForm is returned (wrapped, saying what it is) for an elicitation
// that is not a form: URL mode, which QuestionOf leaves to the caller
// (ToolAgent makes it an auth-required pause).
var ErrNotForm = errors.New("mcpbridge: the elicitation is not a form")

// QuestionOf is the askpoint question for an MCP form elicitation, the
// other direction of the form a question becomes: its message as the
// text, its requestedSchema as the answer schema (read by
// question.Question.Fields, the one model: oneOf const/title, or enum with
// enumNames, are options with their titles as labels), and, when one
// field is a choice, its options as the question's. The ID and the expiry
// are left to the asker. A schema that is not MCP's flat subset (not an
// object of single strings, numbers, booleans and choices) is refused
// with ErrNotAForm, naming the field and why: it is the same check a
// question passes before it is asked as a form.
func QuestionOf(p *mcp.ElicitParams) (*question.Question, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: there is none", ErrNotAForm)
	}
	if p.Mode == "url" || (p.Mode == "" && p.URL != "") {
		return nil, fmt.Errorf("%w: it is in URL mode (%s)", ErrNotForm, p.URL)
	}
	if p.Mode != "" && p.Mode != "form" {
		return nil, fmt.Errorf("%w: its mode is %q", ErrNotForm, p.Mode)
	}
	raw, err := json.Marshal(p.RequestedSchema)
	if err != nil {
		return nil, fmt.Errorf("%w: its requestedSchema does not encode as JSON: %v", ErrNotAForm, err)
	}
	var top struct {
		Type       any            `json:"type"`
		Properties map[string]any `json:"properties"`
	}
	if json.Unmarshal(raw, &top) != nil || top.Type != "object" {
		return nil, fmt.Errorf("%w: its requestedSchema is not an object schema (type \"object\" with properties)", ErrNotAForm)
	}
	q := &question.Question{Text: strings.TrimSpace(p.Message), Schema: raw}
	if q.Text == "" {
		return nil, fmt.Errorf("%w: it has no message for a person to read", ErrNotAForm)
	}
	if _, err := formOf(q); err != nil {
		return nil, err
	}
	var choices []question.Field
	for _, fd := range q.Fields() {
		if fd.Kind == question.KindChoice {
			choices = append(choices, fd)
		}
	}
	if len(choices) == 1 {
		q.OptionsFor = choices[0].Name
		for _, o := range choices[0].Options {
			q.Options = append(q.Options, question.Option{Value: o.Value, Label: o.Label})
		}
	}
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotAForm, err)
	}
	return q, nil
}
