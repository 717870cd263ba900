package cli

import (
	"encoding/json"
	"testing"
)

func TestExampleAnswerIsValidJSONWithEveryRequiredField(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","required":["amount","date","costCentre"],"properties":{
		"amount":{"type":"number"},"date":{"type":"string","pattern":"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
		"costCentre":{"type":"string","enum":["CC-4410","CC-4420"]}}}`)
	ex := exampleAnswer("q-1", schema)
	var got map[string]any
	if err := json.Unmarshal([]byte(ex), &got); err != nil {
		t.Fatalf("exampleAnswer() = %s, not JSON: %v", ex, err)
	}
	want := map[string]any{"questionId": "q-1", "amount": float64(0), "date": "...", "costCentre": "CC-4410"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("exampleAnswer()[%q] = %v, want %v (in %s)", k, got[k], v, ex)
		}
	}
}
