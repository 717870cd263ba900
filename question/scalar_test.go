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
