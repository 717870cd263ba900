// Package jsontest holds tests' checks of askpoint's hand-written JSON
// readers against encoding/json.
package jsontest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// SameRead checks that read, a hand-written reader that reports false to
// leave raw to json.Unmarshal, reads raw into the value json.Unmarshal
// gives when it reads it; must says it has to read it.
func SameRead[T any](t testing.TB, raw []byte, must bool, read func([]byte, *T) bool) {
	t.Helper()
	var got, want T
	ok := read(raw, &got)
	if must && !ok {
		t.Fatalf("the hand-written reader left %s to json.Unmarshal", raw)
	}
	if !ok {
		return
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatalf("the hand-written reader read %s, json.Unmarshal refuses it: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nread by hand   %#v\njson.Unmarshal %#v", raw, got, want)
	}
}
