package question

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
)

// The shortcut for scalar option values gives what the JSON round trip
// gives.
func TestScalarOptionValuesAsTheRoundTripGivesThem(t *testing.T) {
	for _, v := range []any{nil, true, false, 0.0, math.Copysign(0, -1), 1.5, 1e300, 4410.0, "", "CC-4410", "<&>", "\u2028", "é", "\xff", math.NaN(), math.Inf(1), 7, []any{"a"}} {
		raw, err := json.Marshal(v)
		var want any = v
		wantCanon := ""
		if err == nil {
			var g any
			_ = json.Unmarshal(raw, &g)
			want = g
			out, _ := json.Marshal(g)
			wantCanon = string(out)
		}
		if got := generic(v); !reflect.DeepEqual(got, want) && !(isNaN(got) && isNaN(want)) {
			t.Errorf("generic(%#v) = %#v, want %#v", v, got, want)
		}
		got, gotErr := canonical(v)
		if (gotErr != nil) != (err != nil) || got != wantCanon {
			t.Errorf("canonical(%#v) = %q, %v; want %q, %v", v, got, gotErr, wantCanon, err)
		}
	}
}

func isNaN(v any) bool {
	f, ok := v.(float64)
	return ok && math.IsNaN(f)
}

// A question's data part gets its own copy of the schema the cache decoded
// once: changing one message's schema changes no other.
func TestWireSchemaIsAFreshCopyOfTheDecodedSchema(t *testing.T) {
	raw := json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"string","enum":["x","y"]}}}`)
	if _, err := compileSchema(raw); err != nil {
		t.Fatal(err)
	}
	first := wireSchema(raw)
	if !reflect.DeepEqual(first, genericJSON(raw)) {
		t.Fatalf("wireSchema = %#v, want %#v", first, genericJSON(raw))
	}
	first.(map[string]any)["properties"].(map[string]any)["a"].(map[string]any)["enum"].([]any)[0] = "changed"
	if second := wireSchema(raw); !reflect.DeepEqual(second, genericJSON(raw)) {
		t.Errorf("after a change to one copy, wireSchema = %#v", second)
	}
	if got := wireSchema(json.RawMessage(`not json`)); got != nil {
		t.Errorf("wireSchema of invalid JSON = %#v, want nil", got)
	}
}

// Options Check found valid once are not validated again, and an invalid
// one is refused however often valid ones came before it.
func TestCheckRemembersValidOptionsOnly(t *testing.T) {
	q := Question{Text: "Which?", Schema: json.RawMessage(`{"type":"object","required":["cc"],"properties":{"cc":{"type":"string","pattern":"^CC-[0-9]{4}$"}}}`),
		Options: []Option{{Value: "CC-4410"}, {Value: "CC-4420"}}}
	for range 3 {
		if err := q.Check(); err != nil {
			t.Fatalf("Check() = %v", err)
		}
	}
	bad := q
	bad.Options = []Option{{Value: "CC-4410"}, {Value: "engineering"}}
	for range 2 {
		if err := bad.Check(); err == nil {
			t.Fatal("Check() of an option outside the pattern = nil")
		}
	}
}
