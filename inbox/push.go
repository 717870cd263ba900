package inbox

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// TokenHeader is the header in which an A2A server sends a push
// configuration's token.
const TokenHeader = "A2A-Notification-Token"

// maxPushBytes bounds a push notification's body.
const maxPushBytes = 1 << 20

// PushOptions configure NewPushHandler.
type PushOptions struct {
	// Token, when set, must arrive in the A2A-Notification-Token header of
	// every notification; others are refused with 401.
	Token string
	// OnItem, when set, is called with each open item a notification
	// added or found.
	OnItem func(it *Item, created bool)
	// OnReminder, when set, is called when a notification is one of the
	// agent's reminders of an open question (a status update whose
	// metadata holds ReminderKey), with the item it reminds of.
	OnReminder func(it *Item, r Reminder)
}

// ReminderKey is the status update metadata key of a question reminder
// (see docs/extensions/question-v1.md).
const ReminderKey = "https://askpoint.dev/ext/question/v1#reminder"

// Reminder is what a reminder says: which of how many, and the expiry.
type Reminder struct {
	N       int       `json:"reminder"`
	Of      int       `json:"of"`
	Expires time.Time `json:"expires"`
}

// reminderOf reads a reminder from a status update, if it is one.
func reminderOf(ev a2a.Event) (Reminder, bool) {
	su, ok := ev.(*a2a.TaskStatusUpdateEvent)
	if !ok || su.Metadata == nil {
		return Reminder{}, false
	}
	v, ok := su.Metadata[ReminderKey]
	if !ok {
		return Reminder{}, false
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return Reminder{}, false
	}
	var r Reminder
	if json.Unmarshal(raw, &r) != nil || r.N < 1 {
		return Reminder{}, false
	}
	return r, true
}

// NewPushHandler returns an http.Handler that receives A2A push
// notifications: POST requests whose body is a StreamResponse ({"task":
// {...}}, {"statusUpdate": {...}}, {"artifactUpdate": {...}} or {"message":
// {...}}). A task or status update in input-required adds its question to
// the inbox; one in another state closes the task's open items. Artifact
// updates and messages are acknowledged and ignored.
//
// The agent's URL, needed to answer later, is taken from the request's
// "agent" query parameter (register the push URL as
// http://HOST:PORT/?agent=AGENT_URL), else from an item the inbox already
// has for the task.
func NewPushHandler(ib *Inbox, opts PushOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "push notifications are POSTed", http.StatusMethodNotAllowed)
			return
		}
		if opts.Token != "" {
			got := r.Header.Get(TokenHeader)
			if subtle.ConstantTimeCompare([]byte(got), []byte(opts.Token)) != 1 {
				http.Error(w, "missing or wrong "+TokenHeader+" header", http.StatusUnauthorized)
				return
			}
		}
		if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
			http.Error(w, fmt.Sprintf("expected Content-Type application/json, got %s", ct), http.StatusUnsupportedMediaType)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxPushBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, fmt.Sprintf("the body is larger than %d bytes", maxPushBytes), http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		var sr a2a.StreamResponse
		if err := json.Unmarshal(body, &sr); err != nil {
			http.Error(w, "the body is not an A2A StreamResponse ({\"task\": ...} or {\"statusUpdate\": ...}): "+err.Error(), http.StatusBadRequest)
			return
		}
		it, created, err := ib.Observe(r.Context(), r.URL.Query().Get("agent"), sr.Event)
		if errors.Is(err, ErrBadEvent) {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if it != nil && opts.OnItem != nil {
			opts.OnItem(it, created)
		}
		if r, ok := reminderOf(sr.Event); ok && it != nil && it.State == StateOpen && opts.OnReminder != nil {
			opts.OnReminder(it, r)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
