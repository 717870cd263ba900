package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
)

// WakePush is the push configuration an orchestrator (a relay or a
// workflow, on another server) put on task id of this server's agent: its
// URL is the orchestrator's wake endpoint and its token the wake token,
// as the sub-agent received them. It fails the test when there is none.
func (e *Env) WakePush(t testing.TB, ctx context.Context, id a2a.TaskID) (pc a2a.PushConfig) {
	t.Helper()
	c, err := e.Store.GetPushConfig(ctx, string(id), "relay")
	if err != nil {
		t.Fatalf("task %s has no push configuration of an orchestrator: %v", id, err)
	}
	if err := json.Unmarshal(c.Config, &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.Token) < 16 {
		t.Fatalf("the orchestrator's push configuration on %s has token %q, want a wake token", id, pc.Token)
	}
	return pc
}

// SetPushConfig replaces task id's push configuration pc.ID with pc,
// keeping its delivery state, as the sub-agent's store holds it (a test
// that recreates what an older version configured).
func (e *Env) SetPushConfig(t testing.TB, ctx context.Context, id a2a.TaskID, pc a2a.PushConfig) {
	t.Helper()
	stored, err := e.Store.GetPushConfig(ctx, string(id), pc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Config, err = json.Marshal(pc); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Store.PutPushConfig(ctx, &store.PushConfig{TaskID: stored.TaskID, ID: stored.ID, Config: stored.Config, SentSeq: stored.SentSeq}); err != nil {
		t.Fatal(err)
	}
}

// WorkingEvent is the push notification that task id works again.
func WorkingEvent(t testing.TB, id a2a.TaskID) []byte {
	t.Helper()
	now := time.Now().UTC()
	ev := &a2a.TaskStatusUpdateEvent{TaskID: id, Status: a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &now}}
	body, err := json.Marshal(a2a.StreamResponse{Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// PostNotification posts a push notification's body to url with token, as
// an A2A server's push delivery does (no token header when token is ""),
// and returns the HTTP status.
func PostNotification(t testing.TB, ctx context.Context, url, token string, body []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("A2A-Notification-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
