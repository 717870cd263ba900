package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
)

// Notification is one push notification a Webhook accepted.
type Notification struct {
	Token    string // the A2A-Notification-Token header
	Auth     string // the Authorization header
	TaskID   a2a.TaskID
	Status   a2a.TaskStatus // for status updates
	Artifact bool           // an artifact update
	Reminder map[string]any // the reminder marker, nil when not a reminder
}

// Webhook is a push receiver on 127.0.0.1 that records the notifications
// it accepts (StreamResponse bodies). While failing it answers 503 and
// records nothing.
type Webhook struct {
	srv *httptest.Server

	mu       sync.Mutex
	got      []Notification
	failing  bool
	attempts int
	failed   int
}

// NewWebhook starts a receiver and stops it when the test ends.
func NewWebhook(t testing.TB) *Webhook {
	t.Helper()
	h := &Webhook{}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.srv.Close)
	return h
}

// URL is the receiver's URL for push configurations.
func (h *Webhook) URL() string { return h.srv.URL + "/hook" }

// Host is the receiver's host:port (for Config.WebhookHosts).
func (h *Webhook) Host() string { return h.srv.Listener.Addr().String() }

func (h *Webhook) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts++
	if h.failing {
		h.failed++
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	var sr a2a.StreamResponse
	if err := json.Unmarshal(body, &sr); err != nil {
		http.Error(w, "not a StreamResponse: "+err.Error(), http.StatusBadRequest)
		return
	}
	n := Notification{Token: r.Header.Get("A2A-Notification-Token"), Auth: r.Header.Get("Authorization")}
	switch ev := sr.Event.(type) {
	case *a2a.TaskStatusUpdateEvent:
		n.TaskID, n.Status = ev.TaskID, ev.Status
		if m, ok := ev.Metadata[askpoint.ReminderKey].(map[string]any); ok {
			n.Reminder = m
		}
	case *a2a.TaskArtifactUpdateEvent:
		n.TaskID, n.Artifact = ev.TaskID, true
	default:
		http.Error(w, "unexpected event", http.StatusBadRequest)
		return
	}
	h.got = append(h.got, n)
	w.WriteHeader(http.StatusNoContent)
}

// SetFailing makes the receiver answer 503 (true) or accept again (false).
func (h *Webhook) SetFailing(v bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failing = v
}

// All returns what was accepted, in order.
func (h *Webhook) All() []Notification {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Notification(nil), h.got...)
}

// For returns what was accepted about task, in order.
func (h *Webhook) For(task a2a.TaskID) []Notification {
	var out []Notification
	for _, n := range h.All() {
		if n.TaskID == task {
			out = append(out, n)
		}
	}
	return out
}

// Attempts counts every request, accepted or failed; Failed the failed.
func (h *Webhook) Attempts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempts
}

// Failed counts the requests answered 503.
func (h *Webhook) Failed() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.failed
}
