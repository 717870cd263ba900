package question

import (
	"encoding/json"
	"testing"
	"time"
)

// benchQ is the worked example's question; the benchmarks write and read
// it through encoding/json and by hand (go test -run XXX -bench QuestionJSON
// -benchmem).
var benchQ = &Question{ID: "q-1", Text: "Which cost centre should this expense be charged to? CC-4410 or CC-4420.", Expires: time.Date(2026, 12, 4, 17, 0, 0, 123e6, time.UTC),
	Schema:  json.RawMessage(`{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"}`),
	Options: []Option{{Value: "CC-4410"}, {Value: "CC-4420"}}, MaxAttempts: 3, Attempt: 1}

func BenchmarkQuestionJSONEncodeReflect(b *testing.B) {
	for range b.N {
		_, _ = json.Marshal(benchQ)
	}
}
func BenchmarkQuestionJSONEncodeHand(b *testing.B) {
	for range b.N {
		_, _ = encodeQuestion(benchQ)
	}
}
func BenchmarkQuestionJSONDecodeReflect(b *testing.B) {
	raw, _ := json.Marshal(benchQ)
	for range b.N {
		var q Question
		_ = json.Unmarshal(raw, &q)
	}
}
func BenchmarkQuestionJSONDecodeHand(b *testing.B) {
	raw, _ := json.Marshal(benchQ)
	for range b.N {
		var q Question
		_ = decodeQuestion(raw, &q)
	}
}
