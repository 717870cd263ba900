package servertest_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
)

// goroutinesSettle waits for the goroutine count to drop to at most limit.
func goroutinesSettle(limit int) int {
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= limit || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPausedTasksHoldNoGoroutinesOrWaiters(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	sendState(t, ctx, c, userText("File my taxi receipt from Tuesday, 42 euros"), a2a.TaskStateInputRequired)
	base := runtime.NumGoroutine()

	const paused = 200
	for range paused {
		sendState(t, ctx, c, userText("File my taxi receipt from Tuesday, 42 euros"), a2a.TaskStateInputRequired)
	}
	// A handful of goroutines may come and go (connections, timers); one
	// per paused task would be 200 more.
	if n := goroutinesSettle(base + 5); n > base+5 {
		t.Errorf("goroutines: %d with 1 paused task, %d with %d; want no goroutine per paused task", base, n, paused+1)
	}
	if w := env.Engine.Waiters(); w != 0 {
		t.Errorf("Waiters() = %d with every task paused and no caller waiting, want 0", w)
	}
}

func TestStopLeavesNoGoroutinesBehind(t *testing.T) {
	base := runtime.NumGoroutine()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	sendState(t, t.Context(), c, userText("complete"), a2a.TaskStateCompleted)
	_ = c.Destroy()
	env.Close()
	if n := goroutinesSettle(base + 2); n > base+2 {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines after Stop: %d, before Start: %d\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}
