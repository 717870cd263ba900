package telemetry_test

import (
	"testing"

	"github.com/askpoint/askpoint/telemetry"
	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine they started is
// still running after the last of them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newMetrics is askpoint's metrics on a registry of their own.
func newMetrics(tb testing.TB) *telemetry.Metrics {
	tb.Helper()
	m, err := telemetry.NewMetrics(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}
