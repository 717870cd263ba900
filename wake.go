package askpoint

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// A task can wait for something outside it: a sub-agent's work, a
// notification. Such a pause is rows like any other: the agent returns
// [Await] (the task stays working, with no run and no goroutine) or an Ask
// with [Outcome.WakeOn], and whoever holds the wake token resumes the task
// with an event through [Server.Wake], or through the HTTP endpoint
// POST /NAME/wake/TASK_ID with the token in A2A-Notification-Token, which
// is where a sub-agent's push notifications go.

// Await leaves the task working without a run while something outside the
// agent happens: a sub-agent works, a notification is due. what says what
// the task waits for (the status message); token is the secret that
// [Server.Wake] must be given to resume it (at least 16 characters; push
// notification configurations carry it as their token); at deadline the
// task fails, saying what it waited for.
func Await(what string, checkpoint any, token string, deadline time.Time) Outcome {
	return Outcome{kind: OutcomeAwait, text: what, checkpoint: checkpoint, wakeToken: token, deadline: deadline}
}

// OutcomeAwait is [Await]'s kind.
const OutcomeAwait OutcomeKind = "await"

// WakeOn lets an Ask outcome's question be withdrawn by an event: a call
// to [Server.Wake] with token resumes the task (the agent's Waker decides
// first whether the event matters) even though nobody answered.
func (o Outcome) WakeOn(token string) Outcome {
	o.wakeToken = token
	return o
}

// Waker is implemented by agents whose tasks wait for events. Wakes
// reports whether event (the body given to [Server.Wake]) should resume
// the task saved with checkpoint; an event that does not (a reminder, a
// repeat of what the agent already knows) is dropped without a write.
// Resume then gets the event in Resumption.Event.
type Waker interface {
	Wakes(checkpoint json.RawMessage, event json.RawMessage) bool
}

// minWakeToken is the shortest wake token accepted.
const minWakeToken = 16

func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// ErrNotWaiting says a wake came for a task that has finished: a late
// notification, which callers usually ignore.
var ErrNotWaiting = errors.New("askpoint: the task has finished and waits for no event")

// ErrBusy says a wake came while the task runs a step: the step is about
// to decide what the task waits for, so the event should come again
// shortly (the wake endpoint answers 503, which a push outbox retries).
var ErrBusy = errors.New("askpoint: the task is running a step; send the event again shortly")

// Wake resumes a waiting task with event: one that returned [Await], or
// one paused with a question asked [Outcome.WakeOn]. token must be the one
// the agent gave. An unknown task and a wrong token are both
// TaskNotFound, so that a task's existence does not leak; a task that is
// not waiting gives ErrNotWaiting. The agent's Waker may drop the event,
// in which case nothing changes and Wake returns nil.
func (s *Server) Wake(ctx context.Context, taskID, token string, event json.RawMessage) error {
	return s.wake(ctx, "", taskID, token, event)
}

// wake is Wake for a task of the named agent ("" for any).
func (s *Server) wake(ctx context.Context, agent, taskID, token string, event json.RawMessage) error {
	return s.resumeFromOutside(ctx, taskID, func(t *store.Task) (*runInput, error) {
		if agent != "" && t.Agent != agent {
			return nil, errTaskNotFound(taskID)
		}
		p, err := decodePause(t)
		if err != nil {
			return nil, err
		}
		if p.WakeDigest == "" && !t.State.Terminal() && (t.Runnable || t.LeaseOwner != "") {
			// A step runs and has not said yet what the task waits for:
			// its token is stored only when it returns (a sub-agent may
			// push before its sender's step is done). Busy, send again.
			// Task IDs are unguessable, so this says no more than that.
			return nil, ErrBusy
		}
		if p.WakeDigest == "" || subtle.ConstantTimeCompare([]byte(p.WakeDigest), []byte(tokenDigest(token))) != 1 {
			return nil, errTaskNotFound(taskID)
		}
		awaiting := t.State == a2a.TaskStateWorking && !t.Runnable && p.Await != ""
		switch {
		case t.State.Terminal():
			return nil, ErrNotWaiting
		case !awaiting && t.State != a2a.TaskStateInputRequired:
			return nil, ErrBusy
		case awaiting && !s.now().Before(p.Expires):
			return nil, ErrNotWaiting // past its deadline: the sweeper ends it
		case t.State == a2a.TaskStateInputRequired && questionExpired(t, s.now()):
			return nil, ErrNotWaiting // past its expiry, like a late answer
		}
		entry := s.agentByName(t.Agent)
		if entry == nil {
			return nil, fmt.Errorf("askpoint: task %s belongs to agent %q, which is not served here", t.ID, t.Agent)
		}
		if w, ok := entry.spec.Agent.(Waker); ok && !w.Wakes(t.Checkpoint, event) {
			return nil, nil // nothing new: the task stays as it is
		}
		return &runInput{Kind: inputEvent, Event: event, Key: fmt.Sprintf("%s/event-%d", t.ID, t.Version)}, nil
	})
}

// serveWake is POST /NAME/wake/{task}: a push notification (or any JSON
// event) for a waiting task, authenticated by its wake token.
func (s *Server) serveWake(w http.ResponseWriter, r *http.Request, agent string) {
	id := r.PathValue("task")
	token := r.Header.Get("A2A-Notification-Token")
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxRequestBytes))
	if err != nil {
		http.Error(w, "the event is larger than this server takes", http.StatusRequestEntityTooLarge)
		return
	}
	if !json.Valid(body) {
		http.Error(w, "the event must be JSON (a push notification's StreamResponse)", http.StatusBadRequest)
		return
	}
	err = s.wake(r.Context(), agent, id, token, body)
	switch {
	case err == nil:
		w.WriteHeader(http.StatusNoContent)
	case errors.Is(err, ErrNotWaiting):
		w.WriteHeader(http.StatusAccepted) // late: nothing to do
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "1")
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
	case errors.Is(err, a2a.ErrTaskNotFound):
		http.Error(w, "no such waiting task, or a wrong token", http.StatusNotFound)
	default:
		s.log.Error("wake a task", slog.String("task", id), slog.Any("err", err))
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
}

// questionExpired reports whether t's open question's expiry has passed.
func questionExpired(t *store.Task, now time.Time) bool {
	var q struct {
		Expires time.Time `json:"expires"`
	}
	if json.Unmarshal(t.Question, &q) != nil || q.Expires.IsZero() {
		return false
	}
	return !now.Before(q.Expires)
}
