package question

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// SchemaFor derives the JSON Schema (draft 2020-12) of an answer of type T,
// so that the question's schema and the Go type the agent decodes the
// answer into cannot disagree. T is a struct (or a pointer to one), or a
// single value: a string, bool, number, time.Time, slice or array is the
// answer of one required field named [ScalarField] ({"answer": true} for
// a bool), which [Decode] reads back into T. Options of such a question
// are for that field.
//
// Each exported field is a property named as encoding/json names it (the
// json tag's name; "-" leaves it out). Go types map to JSON Schema types:
// string, bool (boolean), integers (integer; unsigned ones at least 0),
// floats (number), slices and arrays (array), maps with string keys and
// structs (object), time.Time (a date-time string); any and
// json.RawMessage accept any value. A pointer is its element type. Structs
// refuse fields they do not declare (additionalProperties false), so an
// answer cannot carry what the type would silently drop.
//
// The jsonschema tag adds what the type cannot say, comma-separated (a
// literal comma in a value is written \,):
//
//	required                the answer must have the field
//	description=TEXT        what the field means, for people
//	title=TEXT              a short name
//	enum=A|B|C              the allowed values (parsed as the field's type)
//	pattern=REGEXP          a string's pattern
//	format=NAME             a string's format (date, email, ...), asserted
//	minLength=N maxLength=N a string's length, in characters
//	minimum=N maximum=N     a number's bounds, inclusive
//	exclusiveMinimum=N exclusiveMaximum=N
//	minItems=N maxItems=N   an array's length
//
// For example:
//
//	type Approval struct {
//		Approve bool   `json:"approve" jsonschema:"required,description=Pay the invoice?"`
//		Reason  string `json:"reason,omitempty" jsonschema:"maxLength=200"`
//	}
//	schema, err := question.SchemaFor[Approval]()
//
// The error names the field and the tag that cannot be used.
func SchemaFor[T any]() (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	d := &deriver{seen: map[reflect.Type]bool{}}
	if scalarAnswer(t) {
		return d.scalar(t)
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("question: SchemaFor needs a struct type or a single value (a string, bool, number, time or slice), not %s", t)
	}
	s, err := d.schema(t, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

// MustSchemaFor is SchemaFor for package-level variables: it panics when
// the type cannot be described.
func MustSchemaFor[T any]() json.RawMessage {
	s, err := SchemaFor[T]()
	if err != nil {
		panic(err)
	}
	return s
}

type deriver struct {
	seen map[reflect.Type]bool // struct types on the current path
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schema describes t; at names the field for errors.
func (d *deriver) schema(t reflect.Type, at string) (map[string]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == rawType:
		return map[string]any{}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Slice, reflect.Array:
		items, err := d.schema(t.Elem(), at+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("question: SchemaFor: %s: a map key must be a string, not %s", name(at), t.Key())
		}
		vals, err := d.schema(t.Elem(), at+"{}")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		return d.object(t, at)
	}
	return nil, fmt.Errorf("question: SchemaFor: %s: %s has no JSON form", name(at), t)
}

func name(at string) string {
	if at == "" {
		return "the answer"
	}
	return "field " + at
}

// object describes a struct.
func (d *deriver) object(t reflect.Type, at string) (map[string]any, error) {
	if d.seen[t] {
		return nil, fmt.Errorf("question: SchemaFor: %s: %s contains itself, which a question's answer cannot", name(at), t)
	}
	d.seen[t] = true
	defer delete(d.seen, t)
	props := map[string]any{}
	var required []string
	if err := d.fields(t, at, props, &required); err != nil {
		return nil, err
	}
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out, nil
}

// fields adds t's fields (embedded structs' fields too, as encoding/json
// promotes them) to props.
func (d *deriver) fields(t reflect.Type, at string, props map[string]any, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jname, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && jname == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if err := d.fields(et, at, props, required); err != nil {
					return err
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jname == "" {
			jname = f.Name
		}
		path := jname
		if at != "" {
			path = at + "." + jname
		}
		s, err := d.schema(f.Type, path)
		if err != nil {
			return err
		}
		req, err := applyTag(s, f.Type, f.Tag.Get("jsonschema"), path)
		if err != nil {
			return err
		}
		props[jname] = s
		if req {
			*required = append(*required, jname)
		}
	}
	return nil
}

// applyTag adds a field's jsonschema tag to its schema s; it reports
// whether the field is required.
func applyTag(s map[string]any, t reflect.Type, tag, path string) (required bool, err error) {
	if tag == "" {
		return false, nil
	}
	for _, item := range splitTag(tag) {
		key, val, hasVal := strings.Cut(item, "=")
		key = strings.TrimSpace(key)
		bad := func(why string) error {
			return fmt.Errorf("question: SchemaFor: field %s: jsonschema tag %q: %s", path, item, why)
		}
		switch key {
		case "required":
			required = true
		case "description", "title", "pattern", "format":
			if !hasVal || val == "" {
				return false, bad("needs a value")
			}
			if key == "pattern" || key == "format" {
				if s["type"] != "string" {
					return false, bad("applies to strings only")
				}
			}
			s[key] = val
		case "minLength", "maxLength", "minItems", "maxItems":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return false, bad("needs a whole number of 0 or more")
			}
			want := "string"
			if strings.HasSuffix(key, "Items") {
				want = "array"
			}
			if s["type"] != want {
				return false, bad("applies to " + want + "s only")
			}
			s[key] = n
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return false, bad("needs a number")
			}
			if s["type"] != "integer" && s["type"] != "number" {
				return false, bad("applies to numbers only")
			}
			s[key] = n
		case "enum":
			var vals []any
			for _, v := range strings.Split(val, "|") {
				ev, err := enumValue(t, v)
				if err != nil {
					return false, bad(err.Error())
				}
				vals = append(vals, ev)
			}
			s["enum"] = vals
		case "":
			continue
		default:
			return false, bad("unknown key " + strconv.Quote(key))
		}
	}
	return required, nil
}

// splitTag splits a tag at commas not written \,.
func splitTag(tag string) []string {
	var out []string
	var b strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && tag[i+1] == ',':
			b.WriteByte(',')
			i++
		case tag[i] == ',':
			out = append(out, b.String())
			b.Reset()
		default:
			b.WriteByte(tag[i])
		}
	}
	return append(out, b.String())
}

// enumValue parses one enum value as a value of t.
func enumValue(t reflect.Type, v string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return v, nil
	case reflect.Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, errors.New("enum value " + strconv.Quote(v) + " is not true or false")
		}
		return b, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, errors.New("enum value " + strconv.Quote(v) + " is not a whole number")
		}
		return n, nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, errors.New("enum value " + strconv.Quote(v) + " is not a number")
		}
		return f, nil
	}
	return nil, errors.New("enum applies to strings, numbers and booleans only")
}
