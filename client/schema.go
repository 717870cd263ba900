package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Field is one top-level property of a question's answer schema, with the
// constraints a person needs to see to answer it.
type Field struct {
	Name        string
	Required    bool
	Types       []string // the schema's "type": string, number, integer, boolean, object, array
	Description string
	Pattern     string
	Format      string
	Enum        []any
	Minimum     *float64
	Maximum     *float64
	ExclMinimum *float64
	ExclMaximum *float64
	MinLength   *int
	MaxLength   *int
}

// Constraints describes the field's constraints in a few words, e.g.
// "string, pattern ^CC-[0-9]{4}$, required".
func (f Field) Constraints() string {
	var parts []string
	if len(f.Types) > 0 {
		parts = append(parts, strings.Join(f.Types, " or "))
	}
	if len(f.Enum) > 0 {
		vals := make([]string, len(f.Enum))
		for i, v := range f.Enum {
			vals[i] = displayValue(v)
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

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func displayValue(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// is says whether the field's type list includes t.
func (f Field) is(t string) bool { return slices.Contains(f.Types, t) }

type propSchema struct {
	Type             json.RawMessage `json:"type"`
	Description      string          `json:"description"`
	Pattern          string          `json:"pattern"`
	Format           string          `json:"format"`
	Enum             []any           `json:"enum"`
	Minimum          *float64        `json:"minimum"`
	Maximum          *float64        `json:"maximum"`
	ExclusiveMinimum *float64        `json:"exclusiveMinimum"`
	ExclusiveMaximum *float64        `json:"exclusiveMaximum"`
	MinLength        *int            `json:"minLength"`
	MaxLength        *int            `json:"maxLength"`
}

// schemaFields reads the top-level properties of an answer schema: the
// required ones first in the order "required" lists them, then the others in
// the order the schema lists them.
func schemaFields(raw json.RawMessage) []Field {
	var s struct {
		Required   []string                   `json:"required"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	order := propertyOrder(raw)
	var names []string
	for _, r := range s.Required {
		if !slices.Contains(names, r) {
			names = append(names, r)
		}
	}
	for _, p := range order {
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	for p := range s.Properties { // anything the order scan missed
		if !slices.Contains(names, p) {
			names = append(names, p)
		}
	}
	out := make([]Field, 0, len(names))
	for _, name := range names {
		f := Field{Name: name, Required: slices.Contains(s.Required, name)}
		if sub, ok := s.Properties[name]; ok {
			var ps propSchema
			if json.Unmarshal(sub, &ps) == nil {
				f.Types = typeList(ps.Type)
				f.Description, f.Pattern, f.Format, f.Enum = ps.Description, ps.Pattern, ps.Format, ps.Enum
				f.Minimum, f.Maximum = ps.Minimum, ps.Maximum
				f.ExclMinimum, f.ExclMaximum = ps.ExclusiveMinimum, ps.ExclusiveMaximum
				f.MinLength, f.MaxLength = ps.MinLength, ps.MaxLength
			}
		}
		out = append(out, f)
	}
	return out
}

func typeList(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil {
		return many
	}
	return nil
}

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
		key, _ := tok.(string)
		if key != "properties" {
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
