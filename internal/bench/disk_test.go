package bench

import (
	"os"
	"strconv"
	"testing"
)

// BenchmarkDiskPerTask reports the bytes an SQLite file takes per paused
// and per completed task of the worked example:
//
//	ASKPOINT_DISK_TASKS=100000 go test -run '^$' -bench DiskPerTask -benchtime 1x ./internal/bench/
func BenchmarkDiskPerTask(b *testing.B) {
	n := 10000
	if s := os.Getenv("ASKPOINT_DISK_TASKS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n <= 0 {
			b.Fatalf("ASKPOINT_DISK_TASKS=%q: want a count > 0", s)
		}
	}
	for range b.N {
		d, err := MeasureDisk(b.Context(), b.TempDir(), n)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(d.PausedPerTask(), "B/paused")
		b.ReportMetric(d.CompletedPerTask(), "B/completed")
	}
}
