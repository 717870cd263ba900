package question

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// ScalarField is the one field of the answer to a question whose answer
// type is a single value (see [SchemaFor]): the answer to "Book it?" asked
// for a bool is {"answer": true}.
const ScalarField = "answer"

// scalarAnswer reports whether an answer of type t is a single value
// carried in ScalarField: not an object (struct or map), not a value of any
// shape (an interface, json.RawMessage).
func scalarAnswer(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return true
	}
	if t == rawType {
		return false
	}
	switch t.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64, reflect.Slice, reflect.Array:
		return true
	}
	return false
}

// scalar is the schema of an answer of one required field, ScalarField, of
// type t.
func (d *deriver) scalar(t reflect.Type) (json.RawMessage, error) {
	field, err := d.schema(t, ScalarField, "")
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{ScalarField: field},
		"required":             []string{ScalarField},
		"additionalProperties": false,
	})
}

// decodeScalar reads ScalarField of an answer object into T.
func decodeScalar[T any](fields json.RawMessage) (T, error) {
	var v T
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(fields, &obj); err != nil {
		return v, fmt.Errorf("question: decoding answer: %w", err)
	}
	raw, ok := obj[ScalarField]
	if !ok {
		return v, fmt.Errorf("question: decoding answer: it has no %q field", ScalarField)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("question: decoding answer: %s: %w", ScalarField, err)
	}
	return v, nil
}
