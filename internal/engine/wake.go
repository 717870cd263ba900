package engine

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// A task can wait for something outside it: a sub-agent's work, a
// notification. Such a pause is rows like any other: the agent's outcome
// is an await (the task stays working, with no run and no goroutine) or an
// ask with a wake token, and whoever holds the token resumes the task with
// an event through Wake (the HTTP front's wake endpoint calls it for a
// sub-agent's push notifications).

// minWakeToken is the shortest wake token accepted.
const minWakeToken = 16

func tokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// wakeSecretName names the store's secret that wake tokens derive from.
const wakeSecretName = "wake-token"

// wakeToken is the wake token the engine offers the steps of agent's task
// id (Call.WakeToken): an HMAC of the task under the deployment's secret
// (store.Store.Secret, read at Start), so every node and every run of a
// step derive the same token, and neither the checkpoint nor the task row
// needs to hold it; the row keeps only its digest (pauseState.WakeDigest).
// "" before Start.
func (s *Engine) wakeToken(agent, id string) string {
	secret := s.wakeSecret.Load()
	if secret == nil {
		return ""
	}
	m := hmac.New(sha256.New, *secret)
	m.Write([]byte("askpoint wake token\x00"))
	m.Write([]byte(agent))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return hex.EncodeToString(m.Sum(nil))
}

// ErrNotWaiting says a wake came for a task that has finished: a late
// notification, which callers usually ignore.
var ErrNotWaiting = errors.New("askpoint: the task has finished and waits for no event")

// ErrBusy says a wake came while the task runs a step: the step is about
// to decide what the task waits for, so the event should come again
// shortly (the wake endpoint answers 503, which a push outbox retries).
var ErrBusy = errors.New("askpoint: the task is running a step; send the event again shortly")

// Wake resumes a waiting task of the named agent ("" for any) with event:
// one whose step awaits an event, or one paused with a question that an
// event may withdraw. token must be the one the agent gave. An unknown task
// and a wrong token are both TaskNotFound, so that a task's existence does
// not leak; a task that is not waiting gives ErrNotWaiting, one running a
// step ErrBusy. The agent's Waker may drop the event, in which case nothing
// changes and Wake returns nil.
func (s *Engine) Wake(ctx context.Context, agent, taskID, token string, event json.RawMessage) error {
	return s.resumeFromOutside(ctx, taskID, func(t *store.Task) (*runInput, error) {
		if agent != "" && t.Agent != agent {
			return nil, errTaskNotFound(taskID)
		}
		p, err := decodePause(t)
		if err != nil {
			return nil, err
		}
		running := !t.State.Terminal() && (t.Runnable || t.LeaseOwner != "")
		if running && p.WakeDigest == "" {
			// A step runs and has not said yet what the task waits for:
			// its token is stored only when it returns (a sub-agent may
			// push before its sender's step is done). Busy, send again.
			// Task IDs are unguessable, so this says no more than that.
			return nil, ErrBusy
		}
		if running && token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.wakeToken(t.Agent, t.ID))) == 1 {
			// The task's own derived token while a step runs that is
			// about to wait on it (one moving off a token of its own, as
			// a relay's checkpoint of an older version kept): busy too.
			return nil, ErrBusy
		}
		// The token the task waits on (its digest is kept). A task that
		// ended in the step that handed out its own derived token
		// (Call.WakeToken) never waited on it: its sub-agent's late
		// notifications with that token are late (202), not for an
		// unknown task.
		waitedOn := p.WakeDigest != "" && subtle.ConstantTimeCompare([]byte(p.WakeDigest), []byte(tokenDigest(token))) == 1
		endedOwn := t.State.Terminal() && p.WakeDigest == "" && token != "" &&
			subtle.ConstantTimeCompare([]byte(token), []byte(s.wakeToken(t.Agent, t.ID))) == 1
		if !waitedOn && !endedOwn {
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
		if w, ok := entry.agent.(api.Waker); ok && !w.Wakes(t.Checkpoint, event) {
			return nil, nil // nothing new: the task stays as it is
		}
		return &runInput{Kind: inputEvent, Event: event, Key: fmt.Sprintf("%s/event-%d", t.ID, t.Version)}, nil
	})
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
