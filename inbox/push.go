package inbox

import (
	"context"
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
	// Agents, when set, are the only agents whose notifications are
	// taken: agent URL -> that agent's push token ("" to use Token). A
	// notification names its agent with ?agent=URL, or is known by its
	// agent's token, or is for a task the inbox has from one of them; it
	// must carry that agent's token. Per-agent tokens keep one agent from
	// speaking for another.
	Agents map[string]string
	// Verify, when set, reads the task from its agent (GetTask to the
	// item's own agent, never to a URL the notification supplied) before
	// anything changes; what the agent says is recorded, not what the
	// notification says, and a task it does not know changes nothing.
	Verify func(ctx context.Context, agentURL, taskID string) (*a2a.Task, error)
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

// eventTask is the ID of the task an event is about ("" for others).
func eventTask(ev a2a.Event) string {
	switch v := ev.(type) {
	case *a2a.Task:
		return string(v.ID)
	case *a2a.TaskStatusUpdateEvent:
		return string(v.TaskID)
	}
	return ""
}

// agentByToken is the agent whose own push token is token ("" for none).
func agentByToken(agents map[string]string, token string) string {
	if token == "" {
		return ""
	}
	for a, t := range agents {
		if t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
			return a
		}
	}
	return ""
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
// has for the task. Items are matched by (agent, task): a notification
// never changes an item's agent (403). Set PushOptions.Agents and Verify
// so that a notification is taken only from agents you name, with their
// own tokens, and is checked with the agent itself before anything
// changes: a forged notification could otherwise open an item that sends
// a person's answer, and the caller's bearer token, where it says.
func NewPushHandler(ib *Inbox, opts PushOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "push notifications are POSTed", http.StatusMethodNotAllowed)
			return
		}
		got := r.Header.Get(TokenHeader)
		agent := r.URL.Query().Get("agent")
		if len(opts.Agents) > 0 {
			if agent == "" {
				agent = agentByToken(opts.Agents, got)
			}
			if agent != "" {
				want, ok := opts.Agents[agent]
				if !ok {
					http.Error(w, "this listener takes no notifications from that agent", http.StatusForbidden)
					return
				}
				if want == "" {
					want = opts.Token
				}
				if want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
					http.Error(w, "missing or wrong "+TokenHeader+" header", http.StatusUnauthorized)
					return
				}
			}
		}
		if opts.Token != "" && (len(opts.Agents) == 0 || agent == "") {
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
		ev := sr.Event
		if len(opts.Agents) > 0 && agent == "" {
			// Known neither by ?agent= nor by token: the task's agent, if
			// the inbox has it from one of the listed agents.
			if id := eventTask(ev); id != "" {
				if known, err := ib.agentsForTask(r.Context(), id); err == nil && len(known) == 1 {
					if _, ok := opts.Agents[known[0]]; ok && opts.Agents[known[0]] == "" {
						agent = known[0]
					}
				}
			}
			if agent == "" {
				http.Error(w, "the notification names no agent this listener takes notifications from (add ?agent=AGENT_URL to the push URL)", http.StatusForbidden)
				return
			}
		}
		if opts.Verify != nil {
			id := eventTask(ev)
			if id == "" {
				w.WriteHeader(http.StatusNoContent) // nothing the inbox records
				return
			}
			if agent == "" {
				known, err := ib.agentsForTask(r.Context(), id)
				if err != nil || len(known) != 1 {
					http.Error(w, "the inbox has no single agent for this task, and the notification names none", http.StatusForbidden)
					return
				}
				agent = known[0]
			}
			task, err := opts.Verify(r.Context(), agent, id)
			if err != nil {
				http.Error(w, "the agent did not confirm the task: "+err.Error(), http.StatusBadGateway)
				return
			}
			if task == nil || string(task.ID) != id {
				http.Error(w, "the agent's task is not the notification's", http.StatusConflict)
				return
			}
			ev = task
		}
		it, created, err := ib.Observe(r.Context(), agent, ev)
		if errors.Is(err, ErrWrongAgent) {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
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
