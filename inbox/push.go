package inbox

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
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
	// Agents are the only agents whose notifications are taken: agent URL
	// -> that agent's own push token ("" to use Token). Without agents,
	// every notification is refused: the agent an item names is where a
	// person's answer, and the caller's bearer token, are sent, so it is
	// never taken from a notification. A notification names its agent
	// with ?agent=URL, or is known by its agent's own token, or is for a
	// task the inbox already has from one of them.
	Agents map[string]string
	// Token is the push token of the agents listed with "".
	Token string
	// OnItem, when set, is called with each open item a notification
	// added or found.
	OnItem func(it *Item, created bool)
	// OnReminder, when set, is called when a notification is one of the
	// agent's reminders of an open question (a status update whose
	// metadata holds ReminderKey), with the item it reminds of.
	OnReminder func(it *Item, r Reminder)
	// Verify, when set, reads the task from its agent (GetTask to one of
	// Agents, never to a URL the notification supplied) before anything
	// changes; what the agent says is recorded, not what the notification
	// says, and a task it does not know changes nothing.
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

// admit refuses a notification that carries no listed agent's token: an
// HTTP status and why (0 when it is admitted).
func (o *PushOptions) admit(token string) (status int, why string) {
	if len(o.Agents) == 0 {
		return http.StatusForbidden, "this inbox takes push notifications from no agent: only from the agents it is told of"
	}
	if !o.anyToken(token) {
		return http.StatusUnauthorized, "missing or wrong " + TokenHeader + " header"
	}
	return 0, ""
}

// pushAgent is the agent an admitted notification comes from, named by
// ?agent= or known by its own token: "" when neither says, and an HTTP
// status and why when the notification is refused.
func (o *PushOptions) pushAgent(named, token string) (agent string, status int, why string) {
	agent = named
	if agent == "" {
		agent = o.agentByToken(token)
	}
	if agent == "" {
		return "", 0, "" // the task may say (knownAgent)
	}
	if _, ok := o.Agents[agent]; !ok {
		return "", http.StatusForbidden, "this inbox takes no push notifications from that agent"
	}
	if !equal(token, o.tokenOf(agent)) {
		return "", http.StatusUnauthorized, "missing or wrong " + TokenHeader + " header"
	}
	return agent, 0, ""
}

// tokenOf is the push token of a listed agent ("" when it has none).
func (o *PushOptions) tokenOf(agent string) string {
	if t := o.Agents[agent]; t != "" {
		return t
	}
	return o.Token
}

// anyToken says whether token is the push token of any listed agent.
func (o *PushOptions) anyToken(token string) bool {
	ok := false
	for a := range o.Agents {
		if equal(token, o.tokenOf(a)) {
			ok = true // and compare with every token, so timing says nothing of which
		}
	}
	return ok
}

// agentByToken is the agent whose own push token is token ("" for none).
func (o *PushOptions) agentByToken(token string) string {
	for a, t := range o.Agents {
		if t != "" && equal(t, token) {
			return a
		}
	}
	return ""
}

// knownAgent is the agent of a notification that names none and carries
// Token: the listed agent (with no token of its own) the inbox has the
// task from.
func (o *PushOptions) knownAgent(ctx context.Context, ib *Inbox, taskID string) string {
	if taskID == "" {
		return ""
	}
	known, err := ib.agentsForTask(ctx, taskID)
	if err != nil || len(known) != 1 {
		return ""
	}
	if t, ok := o.Agents[known[0]]; ok && t == "" {
		return known[0]
	}
	return ""
}

// equal compares a token received with one configured, in constant time;
// an empty configured token matches nothing.
func equal(got, want string) bool {
	return want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// NewPushHandler returns an http.Handler that receives A2A push
// notifications: POST requests whose body is a StreamResponse ({"task":
// {...}}, {"statusUpdate": {...}}, {"artifactUpdate": {...}} or {"message":
// {...}}). A task or status update in input-required adds its question to
// the inbox; one in another state closes the task's open items. Artifact
// updates and messages are acknowledged and ignored.
//
// It is the one guard of every push door (askpoint inbox --listen, the web
// inbox's /push): a notification is taken only from one of
// PushOptions.Agents, with that agent's push token in the
// A2A-Notification-Token header (401 otherwise), as application/json (415
// otherwise). A web page on another origin can send neither the header nor
// that type without a CORS preflight, which this handler does not answer.
// The agent is named by the request's "agent" query parameter (register
// the push URL as http://HOST:PORT/?agent=AGENT_URL), or known by its own
// token, or by an item the inbox already has for the task; an agent not
// listed is refused (403), and a notification never changes an item's
// agent (403). Set Verify so that the task is read from its agent before
// anything changes.
func NewPushHandler(ib *Inbox, opts PushOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "push notifications are POSTed", http.StatusMethodNotAllowed)
			return
		}
		token := r.Header.Get(TokenHeader)
		if status, why := opts.admit(token); status != 0 {
			http.Error(w, why, status)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (mt != "application/json" && mt != "application/a2a+json") {
			http.Error(w, fmt.Sprintf("Content-Type %q is not JSON: send the notification as Content-Type: application/json", r.Header.Get("Content-Type")), http.StatusUnsupportedMediaType)
			return
		}
		agent, status, why := opts.pushAgent(r.URL.Query().Get("agent"), token)
		if status != 0 {
			http.Error(w, why, status)
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
		id := eventTask(ev)
		if agent == "" {
			// Named neither by ?agent= nor by its own token: the task's
			// agent, if the inbox has it from one of the listed agents.
			if agent = opts.knownAgent(r.Context(), ib, id); agent == "" && id != "" {
				http.Error(w, "the notification names no agent this inbox takes notifications from (add ?agent=AGENT_URL to the push URL)", http.StatusForbidden)
				return
			}
		}
		if id == "" {
			w.WriteHeader(http.StatusNoContent) // nothing the inbox records
			return
		}
		if opts.Verify != nil {
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
