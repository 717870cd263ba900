package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// stuckHook is a push receiver that holds its first request unanswered
// (until the sender goes away) and records the requests after it.
type stuckHook struct {
	srv    *httptest.Server
	stuck  chan struct{} // closed when the first request arrived
	quit   chan struct{} // closed when the test ends
	mu     sync.Mutex
	n      int
	got    chan struct{} // closed when a later request was answered 204
	closed bool
}

func newStuckHook(t *testing.T) *stuckHook {
	h := &stuckHook{stuck: make(chan struct{}), quit: make(chan struct{}), got: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The whole body read, the server watches the connection and ends
		// r's context when the sender goes away.
		io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		h.n++
		first := h.n == 1
		h.mu.Unlock()
		if first {
			close(h.stuck)
			select {
			case <-r.Context().Done(): // the sender was killed
			case <-h.quit:
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
		h.mu.Lock()
		if !h.closed {
			h.closed = true
			close(h.got)
		}
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { close(h.quit) }) // first: Close waits for handlers
	return h
}

// TestKilledServersPushClaimIsFreedAtRestart: a server SIGKILLed in the
// middle of a push delivery leaves the delivery claimed for the claim's
// lease (2 x the push timeout + 5s: 25s by default). On SQLite the file is
// one process's, so the restarted server frees that claim when it opens
// the file and delivers at once, well before the lease would have ended
// (decision 0082). While the first server runs, a second one on the same
// file is refused with an error that names the file.
func TestKilledServersPushClaimIsFreedAtRestart(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "askpoint.db")
	flags := []string{"--allow-private-webhooks", "--poll", "100ms"}
	srv, err := startServer(t, bin, "askpoint", db, flags...)
	if err != nil {
		t.Fatal(err)
	}

	// A second server on the file is refused, naming it.
	if second, err := startServer(t, bin, "second", db, flags...); err == nil {
		second.sigkill(t)
		t.Fatalf("a second askpoint serve on %s started; want it refused while the first runs", db)
	} else if msg := err.Error(); !strings.Contains(msg, db) || !strings.Contains(msg, "another process") {
		t.Errorf("a second askpoint serve on the same file failed with %q; want an error naming %s and another process", msg, db)
	}

	hook := newStuckHook(t)
	ctx := t.Context()
	c := crashClient(ctx, t, srv.url)
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: hook.srv.URL + "/hook", Token: "e2e-token"}},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SendMessage = %v, want a task that asks", res)
	}
	select {
	case <-hook.stuck:
	case <-time.After(20 * time.Second):
		t.Fatal("the question's notification was not sent within 20s")
	}
	claimed := time.Now() // the claim was made a moment before
	srv.sigkill(t)

	if _, err := startServer(t, bin, "askpoint", db, flags...); err != nil {
		t.Fatal(err)
	}
	// The lease would end 25s after the claim; the freed claim is
	// delivered at once. 20s leaves the restart plenty on a slow machine
	// and is still before the earliest a held claim could be taken.
	select {
	case <-hook.got:
		t.Logf("delivered again %v after the claim", time.Since(claimed).Round(time.Millisecond))
	case <-time.After(time.Until(claimed.Add(20 * time.Second))):
		t.Fatalf("the delivery the killed server had claimed was not made again within 20s of the claim; " +
			"the restarted server left the dead claim to its lease")
	}
}
