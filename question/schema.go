package question

import (
	"bytes"
	"container/list"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/askpoint/askpoint/internal/jsonwrite"
)

// MaxSchemaDepth is how deeply an answer schema's JSON may nest.
const MaxSchemaDepth = 32

// schemaURL is the internal location every answer schema is compiled under.
// Nothing is ever loaded from it: the loader refuses every URL.
const schemaURL = "mem:///answerSchema.json"

// reservedFields are answer keys the convention uses itself; an answer schema
// may not declare them at its top level.
var reservedFields = []string{keyQuestionID, keyAction}

// errRefused is what the loader answers for every reference.
var errRefused = errors.New("references outside the schema are not allowed")

// refuseLoader refuses every URL, so that a schema can reach nothing but
// itself (and the draft meta-schemas the library embeds).
type refuseLoader struct{}

func (refuseLoader) Load(string) (any, error) { return nil, errRefused }

// compiled is a compiled answer schema with what the convention needs to know
// about its top level.
type compiled struct {
	schema   *jsonschema.Schema
	required []string // top-level required properties, in schema order
	props    []string // top-level properties, sorted
	propType map[string][]string
	// wire is the schema as generic JSON values (genericJSON), never
	// handed out: a question's data part gets a copy (wireSchema).
	wire any
	// wireJSON is wire encoded (json.Marshal), nil when wire is nil.
	wireJSON jsonwrite.Encoded

	// validOptions remembers option values (field and canonical JSON)
	// that Check found valid for this schema, at most maxValidOptions:
	// the same agent asks with the same options again and again.
	mu           sync.Mutex
	validOptions map[string]struct{}
}

const maxValidOptions = 64

func (c *compiled) optionValid(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.validOptions[key]
	return ok
}

func (c *compiled) rememberOption(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.validOptions == nil {
		c.validOptions = map[string]struct{}{}
	}
	if len(c.validOptions) < maxValidOptions {
		c.validOptions[key] = struct{}{}
	}
}

// wireSchema is raw as generic JSON values, a fresh copy for each caller:
// decoded once per schema the cache holds.
func wireSchema(raw json.RawMessage) any {
	if c := schemas.get(raw); c != nil && c.wire != nil {
		return copyGeneric(c.wire)
	}
	return genericJSON(raw)
}

// wireSchemaJSON is what wireSchema(raw) encodes as: the schema's cached
// encoding, or the generic value itself when it is not cached.
func wireSchemaJSON(raw json.RawMessage) any {
	if c := schemas.get(raw); c != nil && c.wireJSON != nil {
		return c.wireJSON
	}
	return genericJSON(raw)
}

// copyGeneric is a deep copy of a generic JSON value (its maps and slices;
// the scalars are immutable).
func copyGeneric(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = copyGeneric(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = copyGeneric(e)
		}
		return s
	}
	return v
}

// cache holds compiled schemas keyed by the schema's bytes, least recently
// used first out.
type cache struct {
	mu    sync.Mutex
	max   int
	ll    *list.List
	items map[string]*list.Element
}

type cacheEntry struct {
	key string
	c   *compiled
}

const cacheSize = 256

var schemas = &cache{max: cacheSize, ll: list.New(), items: map[string]*list.Element{}}

func (c *cache) get(key []byte) *compiled {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[string(key)]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*cacheEntry).c
	}
	return nil
}

func (c *cache) put(key []byte, v *compiled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := string(key)
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return
	}
	c.items[k] = c.ll.PushFront(&cacheEntry{key: k, c: v})
	for c.ll.Len() > c.max {
		last := c.ll.Back()
		c.ll.Remove(last)
		delete(c.items, last.Value.(*cacheEntry).key)
	}
}

// compileSchema compiles raw (a draft 2020-12 schema), using the cache.
func compileSchema(raw json.RawMessage) (*compiled, error) {
	if c := schemas.get(raw); c != nil {
		return c, nil
	}
	c, err := doCompile(raw)
	if err != nil {
		return nil, err
	}
	schemas.put(raw, c)
	return c, nil
}

func doCompile(raw json.RawMessage) (*compiled, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, errors.New("answerSchema is missing")
	}
	if err := checkDepth(raw); err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("answerSchema is not valid JSON: %v", err)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("answerSchema must be a JSON object")
	}
	if err := checkBounds(raw, doc); err != nil {
		return nil, err
	}
	c := &compiled{propType: map[string][]string{}}
	if req, has := root["required"]; has {
		arr, _ := req.([]any)
		for _, r := range arr {
			if s, ok := r.(string); ok {
				c.required = append(c.required, s)
			}
		}
	}
	if props, ok := root["properties"].(map[string]any); ok {
		for name, sub := range props {
			c.props = append(c.props, name)
			if subObj, ok := sub.(map[string]any); ok {
				c.propType[name] = typeNames(subObj["type"])
			}
		}
		slices.Sort(c.props)
	}
	for _, r := range reservedFields {
		if slices.Contains(c.required, r) || slices.Contains(c.props, r) {
			return nil, fmt.Errorf("answerSchema declares the field %q, which the question convention reserves", r)
		}
	}

	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	comp.UseLoader(refuseLoader{})
	if err := comp.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("answerSchema: %v", err)
	}
	sch, err := comp.Compile(schemaURL)
	if err != nil {
		return nil, compileError(err)
	}
	if t, has := root["type"]; has && !typeAllows(t, "object") {
		return nil, fmt.Errorf(`answerSchema must describe a JSON object, but its "type" is %s`, display(t))
	}
	c.schema = sch
	c.wire = genericJSON(raw)
	if c.wire != nil {
		if c.wireJSON, err = json.Marshal(c.wire); err != nil {
			c.wireJSON = nil
		}
	}
	return c, nil
}

// compileError turns the library's compile error into one that names the
// problem in the agent's terms.
func compileError(err error) error {
	var load *jsonschema.LoadURLError
	if errors.As(err, &load) {
		return fmt.Errorf("answerSchema refers to %q, outside the schema; only references inside the schema are allowed", displayURL(load.URL))
	}
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			errs := flatten(ve)
			var parts []string
			for i, fe := range errs {
				if i == 3 {
					parts = append(parts, fmt.Sprintf("and %d more", len(errs)-i))
					break
				}
				at := fe.Pointer
				if at == "" {
					at = "the top level"
				}
				parts = append(parts, "at "+at+": "+fe.Message)
			}
			return fmt.Errorf("answerSchema is not a valid JSON Schema (draft 2020-12): %s", strings.Join(parts, "; "))
		}
	}
	msg := strings.ReplaceAll(err.Error(), schemaURL, "answerSchema")
	return fmt.Errorf("answerSchema cannot be compiled: %s", msg)
}

// displayURL shows a URL the way the schema author wrote it where possible: a
// relative reference resolved against the internal location loses that prefix.
func displayURL(u string) string {
	if rest, ok := strings.CutPrefix(u, "mem:///"); ok {
		return rest
	}
	return u
}

// checkDepth refuses JSON nested deeper than MaxSchemaDepth.
func checkDepth(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("answerSchema is not valid JSON: %v", err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			if depth > MaxSchemaDepth {
				return fmt.Errorf("answerSchema nests deeper than %d levels", MaxSchemaDepth)
			}
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

// typeNames returns a schema's "type" keyword as a list.
func typeNames(t any) []string {
	switch t := t.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func typeAllows(t any, want string) bool {
	return slices.Contains(typeNames(t), want)
}

// Check compiles the schema (draft 2020-12) with a loader that refuses every
// reference outside the schema, and checks that the options (if any) apply:
// the option field is OptionsFor, which must be a property of the schema,
// or else the schema's only required property or, failing that, its only
// property; every option's value must be distinct and valid for that field.
// It also checks that there is text for a person, that the schema describes
// an object, does not declare the reserved fields questionId or action, and
// nests no deeper than MaxSchemaDepth. The error names the problem; it is the
// asking agent's bug.
func (q *Question) Check() error {
	if strings.TrimSpace(q.Text) == "" {
		return errors.New("question text is empty; the text part must be complete on its own for a person")
	}
	if q.Attempt < 0 || q.MaxAttempts < 0 {
		return errors.New("attempt and maxAttempts must not be negative")
	}
	c, err := compileSchema(q.Schema)
	if err != nil {
		return err
	}
	if len(q.Options) == 0 {
		return nil
	}
	field, err := optionField(c, q)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, o := range q.Options {
		if o.Value == nil || o.Value == "" {
			return fmt.Errorf("option %d has no value", i)
		}
		key, err := canonical(o.Value)
		if err != nil {
			return fmt.Errorf("option %d's value cannot be encoded as JSON: %v", i, err)
		}
		if seen[key] {
			return fmt.Errorf("option value %s appears more than once", key)
		}
		seen[key] = true
		memo := field + "\x00" + key
		if c.optionValid(memo) {
			continue
		}
		errs := validateOne(c, map[string]any{field: generic(o.Value)})
		ptr := "/" + escapeToken(field)
		for _, e := range errs {
			if e.Pointer == ptr || strings.HasPrefix(e.Pointer, ptr+"/") {
				return fmt.Errorf("option %s is not a valid %s: %s", key, field, e.Message)
			}
		}
		c.rememberOption(memo)
	}
	return nil
}

// optionField finds the property the options fill: q.OptionsFor when set
// (it must be a property of the schema), else the only required property,
// else the only property.
func optionField(c *compiled, q *Question) (string, error) {
	if q.OptionsFor != "" {
		if !slices.Contains(c.props, q.OptionsFor) && !slices.Contains(c.required, q.OptionsFor) {
			return "", fmt.Errorf("the options are for %q, which is not a property of the answer schema", q.OptionsFor)
		}
		return q.OptionsFor, nil
	}
	if len(c.required) == 1 {
		return c.required[0], nil
	}
	if len(c.props) == 1 {
		return c.props[0], nil
	}
	return "", fmt.Errorf("options need to say which field they are for (OptionsFor), or a schema with exactly one required property or exactly one property to fill; this one has %d required and %d properties", len(c.required), len(c.props))
}

// OptionField returns the property the options fill: OptionsFor when set,
// else the schema's only required property, else its only property; ""
// when there are no options or nothing says which property they fill.
func (q *Question) OptionField() string {
	if len(q.Options) == 0 {
		return ""
	}
	c, err := compileSchema(q.Schema)
	if err != nil {
		return ""
	}
	f, _ := optionField(c, q)
	return f
}

// Validate checks fields (a JSON object) against q's schema and then, when
// there are options, the option field against the option values (a closed
// set). It returns one error per failing leaf, with a JSON pointer into fields
// and a message a person can read, sorted by pointer; nil when fields are
// valid.
func (q *Question) Validate(fields json.RawMessage) []FieldError {
	c, err := compileSchema(q.Schema)
	if err != nil {
		return []FieldError{{Message: "the question's answer schema is broken, so no answer can be checked: " + err.Error()}}
	}
	dec := json.NewDecoder(bytes.NewReader(fields))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []FieldError{{Message: "the answer is not valid JSON"}}
	}
	if _, err := dec.Token(); err != io.EOF {
		return []FieldError{{Message: "the answer is not valid JSON"}}
	}
	if _, ok := v.(map[string]any); !ok {
		return []FieldError{{Message: "the answer must be a JSON object"}}
	}
	return q.validateValue(c, v)
}

// validateValue is Validate for fields already decoded (a JSON object, as
// a json.Decoder with UseNumber decodes it), c q's compiled schema.
func (q *Question) validateValue(c *compiled, v any) []FieldError {
	errs := validateOne(c, v)
	if len(q.Options) > 0 {
		if field, ferr := optionField(c, q); ferr == nil {
			errs = checkOption(errs, q.Options, field, v.(map[string]any))
		}
	}
	sortErrors(errs)
	return errs
}

// checkOption enforces the closed option set on field. A value outside the
// set gets one error, "expected one of A, B", which replaces whatever the
// schema said about that field.
func checkOption(errs []FieldError, opts []Option, field string, obj map[string]any) []FieldError {
	val, present := obj[field]
	if !present {
		return errs
	}
	for _, o := range opts {
		if SameValue(o.Value, val) {
			return errs
		}
	}
	ptr := "/" + escapeToken(field)
	out := errs[:0]
	for _, e := range errs {
		if e.Pointer == ptr || strings.HasPrefix(e.Pointer, ptr+"/") {
			continue
		}
		out = append(out, e)
	}
	return append(out, FieldError{Pointer: ptr, Message: expectedOneOf(opts)})
}

func expectedOneOf(opts []Option) string {
	return "expected one of " + optionValues(opts)
}

func validateOne(c *compiled, v any) []FieldError {
	err := c.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Message: err.Error()}}
	}
	return flatten(ve)
}

// flatten turns the library's error tree into a flat, sorted, de-duplicated
// list of leaf errors.
func flatten(ve *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if fe, ok := mergedTypes(e); ok {
			out = append(out, fe)
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, leafErrors(e)...)
	}
	walk(ve)
	sortErrors(out)
	return slices.Compact(out)
}

// mergedTypes renders an anyOf/oneOf whose alternatives all failed on type
// alone as one error: "expected a string or a number, got a boolean".
func mergedTypes(e *jsonschema.ValidationError) (FieldError, bool) {
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
	default:
		return FieldError{}, false
	}
	if len(e.Causes) < 2 {
		return FieldError{}, false
	}
	var want []string
	var got string
	for _, c := range e.Causes {
		t, ok := c.ErrorKind.(*kind.Type)
		if !ok || len(c.Causes) > 0 || !slices.Equal(c.InstanceLocation, e.InstanceLocation) {
			return FieldError{}, false
		}
		got = t.Got
		for _, w := range t.Want {
			if !slices.Contains(want, w) {
				want = append(want, w)
			}
		}
	}
	return FieldError{
		Pointer: pointerOf(e.InstanceLocation),
		Message: fmt.Sprintf("expected %s, got %s", joinOr(withArticles(want)), withArticle(got)),
	}, true
}

func sortErrors(errs []FieldError) {
	slices.SortStableFunc(errs, func(a, b FieldError) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
}

// leafErrors renders one leaf of the error tree; a few kinds name several
// fields and become one error per field.
func leafErrors(e *jsonschema.ValidationError) []FieldError {
	at := pointerOf(e.InstanceLocation)
	child := func(name string) string { return at + "/" + escapeToken(name) }
	one := func(msg string) []FieldError { return []FieldError{{Pointer: at, Message: msg}} }

	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		out := make([]FieldError, 0, len(k.Missing))
		for _, m := range k.Missing {
			out = append(out, FieldError{Pointer: child(m), Message: "missing required field " + m})
		}
		return out
	case *kind.DependentRequired:
		return dependent(child, k.Prop, k.Missing)
	case *kind.Dependency:
		return dependent(child, k.Prop, k.Missing)
	case *kind.AdditionalProperties:
		out := make([]FieldError, 0, len(k.Properties))
		for _, p := range k.Properties {
			out = append(out, FieldError{Pointer: child(p), Message: "unexpected field " + p})
		}
		return out
	case *kind.PropertyNames:
		return []FieldError{{Pointer: child(k.Property), Message: fmt.Sprintf("the field name %s is not allowed", quote(k.Property))}}
	case *kind.Type:
		return one(fmt.Sprintf("expected %s, got %s", joinOr(withArticles(k.Want)), withArticle(k.Got)))
	case *kind.Enum:
		return one("expected one of " + joinValues(k.Want))
	case *kind.Const:
		return one("expected " + display(k.Want))
	case *kind.Format:
		return one(fmt.Sprintf("%s is not a valid %s", display(k.Got), k.Want))
	case *kind.Pattern:
		return one(fmt.Sprintf("%s does not match %s", quote(k.Got), k.Want))
	case *kind.MinLength:
		return one(fmt.Sprintf("must be at least %s long", plural(k.Want, "character")))
	case *kind.MaxLength:
		return one(fmt.Sprintf("must be at most %s long", plural(k.Want, "character")))
	case *kind.MinItems:
		return one(fmt.Sprintf("must have at least %s", plural(k.Want, "item")))
	case *kind.MaxItems:
		return one(fmt.Sprintf("must have at most %s", plural(k.Want, "item")))
	case *kind.AdditionalItems:
		return one(fmt.Sprintf("has %s too many", plural(k.Count, "item")))
	case *kind.MinProperties:
		return one(fmt.Sprintf("must have at least %s", plural(k.Want, "field")))
	case *kind.MaxProperties:
		return one(fmt.Sprintf("must have at most %s", plural(k.Want, "field")))
	case *kind.UniqueItems:
		return one(fmt.Sprintf("items %d and %d are the same; items must be unique", k.Duplicates[0], k.Duplicates[1]))
	case *kind.Contains:
		return one("no item is of the required kind")
	case *kind.MinContains:
		return one(fmt.Sprintf("must have at least %s of the required kind", plural(k.Want, "item")))
	case *kind.MaxContains:
		return one(fmt.Sprintf("must have at most %s of the required kind", plural(k.Want, "item")))
	case *kind.Minimum:
		return one("must be at least " + ratString(k.Want))
	case *kind.Maximum:
		return one("must be at most " + ratString(k.Want))
	case *kind.ExclusiveMinimum:
		return one("must be greater than " + ratString(k.Want))
	case *kind.ExclusiveMaximum:
		return one("must be less than " + ratString(k.Want))
	case *kind.MultipleOf:
		return one("must be a multiple of " + ratString(k.Want))
	case *kind.FalseSchema, *kind.Not:
		return one("this value is not allowed here")
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return one("matches more than one of the allowed forms; it must match exactly one")
		}
		return one("does not match any of the allowed forms")
	case *kind.AnyOf:
		return one("does not match any of the allowed forms")
	case *kind.RefCycle:
		return one("the answer schema refers to itself in a loop")
	case *kind.InvalidJsonValue:
		return one("is not a JSON value")
	}
	// Anything else: the library's own message, without its location prefix.
	msg := (&jsonschema.ValidationError{SchemaURL: e.SchemaURL, InstanceLocation: e.InstanceLocation, ErrorKind: e.ErrorKind}).Error()
	if i := strings.Index(msg, "': "); i >= 0 && strings.HasPrefix(msg, "at '") {
		msg = msg[i+3:]
	}
	return one(msg)
}

func dependent(child func(string) string, prop string, missing []string) []FieldError {
	out := make([]FieldError, 0, len(missing))
	for _, m := range missing {
		out = append(out, FieldError{Pointer: child(m), Message: fmt.Sprintf("missing field %s, required when %s is given", m, prop)})
	}
	return out
}

func withArticle(t string) string {
	switch t {
	case "null":
		return "null"
	case "object", "array", "integer":
		return "an " + t
	}
	return "a " + t
}

func withArticles(ts []string) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = withArticle(t)
	}
	return out
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return "nothing"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

// quote renders a string for a message, shortened when long.
func quote(s string) string {
	const max = 60
	if utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = string(r[:max]) + "…"
	}
	return strconv.Quote(s)
}

// display renders a JSON value for a message.
func display(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// joinValues lists enum values the way options are listed: strings as they
// are, anything else as JSON.
func joinValues(vs []any) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if s, ok := v.(string); ok {
			out[i] = s
		} else {
			out[i] = display(v)
		}
	}
	return strings.Join(out, ", ")
}

func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Asked returns the fields of an answer that q's schema names among its
// top-level properties, dropping any other, so that what the question did
// not ask for never reaches the agent. fields is returned as it is when
// every field is asked for, when the schema names no properties (it asks
// for anything), or when fields is not a JSON object.
func (q *Question) Asked(fields json.RawMessage) json.RawMessage {
	c, err := compileSchema(q.Schema)
	if err != nil || len(c.props) == 0 {
		return fields
	}
	var buf [8]member
	if ms, ok := plainMembers(fields, buf[:0]); ok {
		if out, ok := askedMembers(fields, ms, c.props); ok {
			return out
		}
	}
	return askedDecoded(fields, c.props)
}

// askedDecoded is Asked through a map of the members.
func askedDecoded(fields json.RawMessage, props []string) json.RawMessage {
	var got map[string]json.RawMessage
	if json.Unmarshal(fields, &got) != nil {
		return fields
	}
	extra := false
	for k := range got {
		if _, ok := slices.BinarySearch(props, k); !ok {
			delete(got, k)
			extra = true
		}
	}
	if !extra {
		return fields
	}
	out, err := json.Marshal(got)
	if err != nil {
		return fields
	}
	return out
}

// askedMembers is Asked for fields split into ms: fields itself when every
// member is asked for, else what json.Marshal writes for the asked members.
// It reports false when that cannot be told from the bytes as they are:
// fields is not valid JSON, or a kept value holds what json.Marshal would
// escape.
func askedMembers(fields json.RawMessage, ms []member, props []string) (json.RawMessage, bool) {
	kept := 0
	for _, m := range ms {
		if _, ok := slices.BinarySearch(props, string(m.key)); ok {
			kept++
		}
	}
	if kept == len(ms) {
		return fields, true
	}
	if !json.Valid(fields) {
		return nil, false
	}
	return membersObject(ms, len(fields), func(m member) (keep, ok bool) {
		if _, asked := slices.BinarySearch(props, string(m.key)); !asked {
			return false, true
		}
		return true, !bytes.ContainsAny(m.val, "<>&\u2028\u2029")
	})
}
