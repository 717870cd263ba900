package servertest_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/store"
)

const (
	hogToken    = "hog-token-0123456789ab"
	victimToken = "victim-token-0123456789"
)

var quotaCallers = map[string]string{hogToken: "hog", victimToken: "victim"}

// Finding 6 of issue 23: one principal's open tasks and its rate of new
// tasks are capped, with an error that says so, and others are not held
// back by it.
func TestPerPrincipalQuotasOnOpenTasksAndNewTasks(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = quotaCallers
		c.MaxOpenTasksPerPrincipal = 3
		c.NewTasksPerMinutePerPrincipal = 6
	}})
	ctx := testCtx(t)
	hog := env.ClientAs(t, "script", a2a.TransportProtocolJSONRPC, hogToken)
	victim := env.ClientAs(t, "script", a2a.TransportProtocolJSONRPC, victimToken)
	var first *a2a.Task
	for range 3 {
		first = sendState(t, ctx, hog, userText("ask"), a2a.TaskStateInputRequired)
	}
	_, err := hog.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("ask")})
	if err == nil || !strings.Contains(err.Error(), "3 open tasks") {
		t.Fatalf("a fourth open task: %v; want an error naming the cap of open tasks", err)
	}
	// The victim is not held back by the hog's tasks.
	sendState(t, ctx, victim, userText("ask"), a2a.TaskStateInputRequired)
	// Finished tasks do not count: with one canceled, tasks that
	// complete are taken again, until the rate (6 a minute) is used up.
	if _, err := hog.CancelTask(ctx, &a2a.CancelTaskRequest{ID: first.ID}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sendState(t, ctx, hog, userText("complete"), a2a.TaskStateCompleted)
	}
	_, err = hog.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("complete")})
	if err == nil || !strings.Contains(err.Error(), "in the last minute") {
		t.Fatalf("a seventh task within a minute: %v; want an error naming the rate", err)
	}
}

// Issue 30, point 6: creates that race cannot pass the open-task cap on a
// node. Fifteen at once, with a cap of five, on every binding: at most
// five tasks are open after, and the other callers were told why not.
func TestRacingCreatesCannotPassTheOpenTaskCap(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = quotaCallers
		c.MaxOpenTasksPerPrincipal = 5
	}})
	ctx := testCtx(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken, refused := 0, 0
	for i := range 15 {
		c := env.ClientAs(t, "script", apitest.Transports[i%len(apitest.Transports)], hogToken)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("ask")})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				taken++
			case strings.Contains(err.Error(), "open tasks"):
				refused++
			default:
				t.Errorf("a racing create: %v", err)
			}
		}()
	}
	wg.Wait()
	open, err := env.Store.CountOpen(ctx, "", "hog")
	if err != nil {
		t.Fatal(err)
	}
	if taken > 5 || open != taken || taken+refused != 15 {
		t.Fatalf("15 racing creates under a cap of 5: %d taken, %d refused, %d open; want at most 5 taken, each open, the rest refused", taken, refused, open)
	}
	// A refusal in the instant between another create's write and its
	// end leaves no slot taken: once the race is over, the caller may
	// start tasks up to the cap, and not one more.
	c := env.ClientAs(t, "script", apitest.Transports[0], hogToken)
	for open < 5 {
		if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("ask")}); err != nil {
			t.Fatalf("a create with %d of 5 open after the race: %v", open, err)
		}
		open++
	}
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("ask")}); err == nil || !strings.Contains(err.Error(), "open tasks") {
		t.Fatalf("a sixth create after the race = %v, want the cap's refusal", err)
	}
	if n, err := env.Store.CountOpen(ctx, "", "hog"); err != nil || n != 5 {
		t.Fatalf("open tasks after the race and the creates = %d (%v), want 5", n, err)
	}
}

// Finding 6 of issue 23: finished tasks are deleted after
// RetainFinished; paused ones stay.
func TestFinishedTasksAreDeletedAfterTheRetention(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.RetainFinished = 50 * time.Millisecond
		c.PollInterval = 20 * time.Millisecond
	}})
	ctx := testCtx(t)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	done := sendState(t, ctx, c, userText("complete"), a2a.TaskStateCompleted)
	paused := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
	eventually(t, "the finished task deleted", func() bool {
		_, err := env.Store.GetTask(ctx, string(done.ID))
		return errors.Is(err, store.ErrNotFound)
	})
	if _, err := env.Store.GetTask(ctx, string(paused.ID)); err != nil {
		t.Fatalf("the paused task: %v; want it kept", err)
	}
}

// Finding 6 of issue 23: one principal's many tasks aimed at a slow
// receiver do not take every push slot: another principal's notification
// goes out while they hang.
func TestOnePrincipalsSlowReceiversDoNotDelayAnothersNotifications(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	var mu sync.Mutex
	hung := 0
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hung++
		mu.Unlock()
		<-release
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(unblock)
	env := pushEnv(t, func(c *askpoint.Config) {
		c.Tokens = quotaCallers
		c.PushTimeout = time.Minute
	})
	t.Cleanup(unblock) // before the server stops: its deliveries finish
	ctx := testCtx(t)
	hog := env.ClientAs(t, "script", a2a.TransportProtocolJSONRPC, hogToken)
	for i := range 70 {
		sendPushed(t, ctx, hog, "ask", a2a.PushConfig{URL: slow.URL + fmt.Sprintf("/hog/%d", i)})
	}
	eventually(t, "the hog's deliveries under way", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return hung >= 16
	})
	hook := newHookReceiver(t)
	victim := env.ClientAs(t, "script", a2a.TransportProtocolJSONRPC, victimToken)
	sendPushed(t, ctx, victim, "ask", a2a.PushConfig{URL: hook.URL()})
	hook.waitFor(t, "the victim's notification while the hog's hang", func(n []notification) bool { return len(n) >= 1 })
	unblock()
}
