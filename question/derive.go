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
// The jsonschema tag adds what the type cannot say, comma-separated:
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
// A comma inside a value is written \\, in the struct tag: a tag's value
// is a Go string literal, so the backslash that keeps the comma is itself
// escaped (a single \, is not valid tag syntax). Other backslashes are
// doubled the same way: a pattern ^\d+$ is written pattern=^\\d+$.
//
// For example:
//
//	type Approval struct {
//		Approve bool   `json:"approve" jsonschema:"required,description=Pay the invoice?"`
//		Reason  string `json:"reason,omitempty" jsonschema:"maxLength=200,description=Why\\, in a sentence"`
//	}
//	schema, err := question.SchemaFor[Approval]()
//
// Nothing in a tag is dropped in silence: a struct tag that is not valid
// Go tag syntax (which reflect would read as no tag at all), a key named
// twice, an unknown or empty item, a value that does not parse, or a key
// that does not apply to the field's type is an error that names the type,
// the field and the problem.
func SchemaFor[T any]() (json.RawMessage, error) {
	return schemaOf(reflect.TypeFor[T]())
}

// schemaOf is SchemaFor for the type t.
func schemaOf(t reflect.Type) (json.RawMessage, error) {
	d := &deriver{root: t, seen: map[reflect.Type]bool{}}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if scalarAnswer(t) {
		return d.scalar(t)
	}
	if t.Kind() != reflect.Struct {
		return nil, d.errorf("", "needs a struct type or a single value (a string, bool, number, time or slice), not %s", t)
	}
	s, err := d.schema(t, "", "")
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
	root reflect.Type          // the type SchemaFor describes, for errors
	seen map[reflect.Type]bool // struct types on the current path
}

// errorf is an error of SchemaFor about the field at (a Go name such as
// pkg.Item.Price and its answer path, or "" for the type itself).
func (d *deriver) errorf(at, format string, args ...any) error {
	where := ""
	if at != "" {
		where = at + ": "
	}
	return fmt.Errorf("question: SchemaFor[%s]: %s%s", d.root, where, fmt.Sprintf(format, args...))
}

// where names a field for errors: its Go name (the struct type that
// declares it, dot, the field) and its place in the answer.
func where(goName, path string) string {
	switch {
	case goName == "":
		return ""
	case path == "":
		return "field " + goName
	}
	return fmt.Sprintf("field %s (answer field %q)", goName, path)
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schema describes t; path is its place in the answer and goName the
// field it is the type of, for errors.
func (d *deriver) schema(t reflect.Type, path, goName string) (map[string]any, error) {
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
		items, err := d.schema(t.Elem(), path+"[]", goName)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, d.errorf(where(goName, path), "a map key must be a string, not %s", t.Key())
		}
		vals, err := d.schema(t.Elem(), path+"{}", goName)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		return d.object(t, path, goName)
	}
	return nil, d.errorf(where(goName, path), "%s has no JSON form", t)
}

// object describes a struct.
func (d *deriver) object(t reflect.Type, path, goName string) (map[string]any, error) {
	if d.seen[t] {
		return nil, d.errorf(where(goName, path), "%s contains itself, which a question's answer cannot", t)
	}
	d.seen[t] = true
	defer delete(d.seen, t)
	props := map[string]any{}
	var required []string
	if err := d.fields(t, path, props, &required); err != nil {
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
		if !f.IsExported() && !f.Anonymous {
			continue // encoding/json ignores it, and so does its tag
		}
		goName := t.String() + "." + f.Name
		if err := checkTagSyntax(f.Tag); err != nil {
			return d.errorf(where(goName, ""), "struct tag `%s` %v", f.Tag, err)
		}
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
		path := joinPath(at, jname)
		s, err := d.schema(f.Type, path, goName)
		if err != nil {
			return err
		}
		req, err := applyTag(s, f.Type, f.Tag.Get("jsonschema"))
		if err != nil {
			return d.errorf(where(goName, path), "%v", err)
		}
		props[jname] = s
		if req {
			*required = append(*required, jname)
		}
	}
	return nil
}

func joinPath(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// checkTagSyntax reports what keeps a struct tag from being read by
// reflect.StructTag.Get, which reads such a tag as no tag at all: the
// conventional key:"value" syntax, pairs separated by spaces, each value a
// valid Go string literal, as go vet's structtag check has it. A key given
// twice is an error too: Get reads the first and drops the other.
func checkTagSyntax(tag reflect.StructTag) error {
	rest := string(tag)
	seen := map[string]bool{}
	for n := 0; ; n++ {
		if n > 0 && rest != "" && rest[0] != ' ' {
			return errors.New(`has key:"value" pairs not separated by spaces`)
		}
		rest = strings.TrimLeft(rest, " ")
		if rest == "" {
			return nil
		}
		i := 0
		for i < len(rest) && rest[i] > ' ' && rest[i] != ':' && rest[i] != '"' && rest[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(rest) || rest[i] != ':' || rest[i+1] != '"' {
			return fmt.Errorf("is not key:\"value\" syntax at %q", rest)
		}
		key := rest[:i]
		rest = rest[i+1:]
		j := 1
		for j < len(rest) && rest[j] != '"' {
			if rest[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(rest) {
			return fmt.Errorf("has an unterminated value for key %q", key)
		}
		quoted := rest[:j+1]
		rest = rest[j+1:]
		if _, err := strconv.Unquote(quoted); err != nil {
			why := fmt.Sprintf("has a value for key %q that is not a valid Go string literal: %s", key, quoted)
			if strings.Contains(quoted, `\,`) && !strings.Contains(quoted, `\\,`) {
				why += ` (a comma inside a value is written \\, in the tag)`
			} else if strings.Contains(quoted, `\`) {
				why += ` (a backslash in the tag is written \\)`
			}
			return errors.New(why)
		}
		if seen[key] {
			return fmt.Errorf("gives key %q twice", key)
		}
		seen[key] = true
	}
}

// applyTag adds a field's jsonschema tag to its schema s; it reports
// whether the field is required.
func applyTag(s map[string]any, t reflect.Type, tag string) (required bool, err error) {
	if tag == "" {
		return false, nil
	}
	seen := map[string]bool{}
	for _, item := range splitTag(tag) {
		key, val, hasVal := strings.Cut(item, "=")
		key = strings.TrimSpace(key)
		bad := func(why string) error {
			return fmt.Errorf("jsonschema tag item %q: %s", item, why)
		}
		if key == "" {
			return false, fmt.Errorf("jsonschema tag %q has an empty item (two commas in a row, or one at an end?)", tag)
		}
		if seen[key] {
			return false, bad("the key " + strconv.Quote(key) + " is given twice")
		}
		seen[key] = true
		switch key {
		case "required":
			if hasVal {
				return false, bad("required takes no value")
			}
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
			if !hasVal || val == "" {
				return false, bad("needs a value")
			}
			var vals []any
			for _, v := range strings.Split(val, "|") {
				ev, err := enumValue(t, v)
				if err != nil {
					return false, bad(err.Error())
				}
				vals = append(vals, ev)
			}
			s["enum"] = vals
		default:
			return false, bad("unknown key " + strconv.Quote(key))
		}
	}
	return required, nil
}

// splitTag splits a jsonschema tag's value at its commas, but for those
// written \, (\\, in the struct tag, before reflect unquotes it).
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
