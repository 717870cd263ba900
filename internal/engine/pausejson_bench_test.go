package engine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/store"
)

// benchPause is the pause state of the worked example's question; the
// benchmarks write and read it through encoding/json and by hand (go test
// -run XXX -bench Pause -benchmem).
var benchPause = &pauseState{Kind: "options", Asked: time.Date(2026, 12, 3, 17, 0, 0, 123e6, time.UTC), Question: "q-1", Expires: time.Date(2026, 12, 4, 17, 0, 0, 123e6, time.UTC), OnExpiry: api.ExpireFail, Fresh: "q-1"}

func BenchmarkPauseEncodeJSON(b *testing.B) {
	for range b.N {
		_, _ = json.Marshal(benchPause)
	}
}
func BenchmarkPauseEncodeHand(b *testing.B) {
	for range b.N {
		_, _ = encodePause(benchPause)
	}
}
func BenchmarkPauseDecodeJSON(b *testing.B) {
	raw, _ := json.Marshal(benchPause)
	for range b.N {
		p := &pauseState{}
		_ = json.Unmarshal(raw, p)
	}
}
func BenchmarkPauseDecodeHand(b *testing.B) {
	raw, _ := json.Marshal(benchPause)
	for range b.N {
		_, _ = decodePause(&store.Task{Pause: raw})
	}
}
