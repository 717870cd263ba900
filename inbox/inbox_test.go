package inbox_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

func open(t *testing.T, path string) *inbox.Inbox {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "inbox.db")
	}
	ib, err := inbox.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open = %v", err)
	}
	t.Cleanup(func() { _ = ib.Close() })
	return ib
}

func costCentreQuestion(id string) *a2a.Message {
	q := &question.Question{
		ID: id, Text: "Which cost centre?", Expires: time.Now().Add(24 * time.Hour),
		Schema:  json.RawMessage(`{"type":"object","required":["costCentre"],"properties":{"costCentre":{"type":"string"}}}`),
		Options: []question.Option{{Value: "CC-4410"}, {Value: "CC-4420"}},
	}
	return q.Message()
}

func pausedTask(id, question string) *a2a.Task {
	return &a2a.Task{ID: a2a.TaskID(id), ContextID: "ctx-" + id,
		Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: costCentreQuestion(question)}}
}

func TestAnItemSurvivesReopeningTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "inbox.db")
	ib := open(t, path)
	req := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt"))
	it := inbox.FromStatus("http://127.0.0.1:1/expense", "task-1", "ctx-1", costCentreQuestion("q-1"))
	it.Request, it.Caller, it.Round, it.MaxRounds = req, "alice", 1, 3
	stored, created, err := ib.Add(t.Context(), it)
	if err != nil || !created {
		t.Fatalf("Add = %v, created %v", err, created)
	}
	if err := ib.Close(); err != nil {
		t.Fatal(err)
	}
	ib = open(t, path)
	got, err := ib.Get(t.Context(), stored.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != inbox.StateOpen || got.AgentURL != "http://127.0.0.1:1/expense" || got.TaskID != "task-1" || got.ContextID != "ctx-1" ||
		got.Key != "q-1" || got.Text != "Which cost centre?" || len(got.Options()) != 2 || got.Expires().IsZero() ||
		got.Caller != "alice" || got.Round != 1 || got.MaxRounds != 3 || got.Request == nil || got.Request.ID != req.ID {
		t.Errorf("item after reopening = %+v", got)
	}
}

func TestTheSameQuestionIsRecordedOnceAndANewOneSupersedesIt(t *testing.T) {
	ib := open(t, "")
	ctx := t.Context()
	first, created, err := ib.Add(ctx, inbox.FromStatus("", "task-1", "ctx-1", costCentreQuestion("q-1")))
	if err != nil || !created {
		t.Fatalf("Add = %v, %v", err, created)
	}
	again, created, err := ib.Add(ctx, inbox.FromStatus("http://agent", "task-1", "ctx-1", costCentreQuestion("q-1")))
	if err != nil || created || again.ID != first.ID || again.AgentURL != "http://agent" {
		t.Fatalf("second Add = %+v, created %v, %v; want the same item, with the agent URL filled in", again, created, err)
	}
	next, created, err := ib.Add(ctx, inbox.FromStatus("http://agent", "task-1", "ctx-1", costCentreQuestion("q-2")))
	if err != nil || !created || next.ID == first.ID {
		t.Fatalf("Add of the next question = %+v, %v, %v", next, created, err)
	}
	old, _ := ib.Get(ctx, first.ID)
	if old.State != inbox.StateClosed || old.Note != "the task asked another question" {
		t.Errorf("the superseded item is %s (%q)", old.State, old.Note)
	}
	openItems, _ := ib.List(ctx, inbox.ListOptions{})
	if len(openItems) != 1 || openItems[0].ID != next.ID {
		t.Errorf("open items %+v; want only the new question", openItems)
	}
	all, _ := ib.List(ctx, inbox.ListOptions{All: true})
	if len(all) != 2 {
		t.Errorf("all items: %d, want 2", len(all))
	}
}

func TestAnsweringTwiceIsRefused(t *testing.T) {
	ib := open(t, "")
	ctx := t.Context()
	it, _, err := ib.Add(ctx, inbox.FromStatus("http://agent", "task-1", "ctx-1", costCentreQuestion("q-1")))
	if err != nil {
		t.Fatal(err)
	}
	if err := ib.MarkAnswered(ctx, it.ID, "person (erin)", json.RawMessage(`{"costCentre":"CC-4410"}`)); err != nil {
		t.Fatal(err)
	}
	err = ib.MarkAnswered(ctx, it.ID, "person (bob)", json.RawMessage(`{"costCentre":"CC-4420"}`))
	if !errors.Is(err, inbox.ErrNotOpen) || !strings.Contains(err.Error(), "erin") {
		t.Errorf("second MarkAnswered = %v; want ErrNotOpen naming who answered", err)
	}
	if _, err := ib.Get(ctx, 999); !errors.Is(err, inbox.ErrNotFound) {
		t.Errorf("Get(999) = %v; want ErrNotFound", err)
	}
}

func TestConcurrentWritersOnOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inbox.db")
	a, b := open(t, path), open(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		ib := a
		if i%2 == 1 {
			ib = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := ib.Add(t.Context(), inbox.FromStatus("http://agent", "task-"+string(rune('A'+i)), "ctx", costCentreQuestion("q")))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Add = %v", err)
		}
	}
	items, _ := a.List(t.Context(), inbox.ListOptions{})
	if len(items) != 40 {
		t.Errorf("%d items, want 40", len(items))
	}
}

// post posts body (JSON, or the bytes as they are) to the inbox's push
// endpoint url with token and returns the HTTP status.
func post(t *testing.T, url, token string, body any) int {
	t.Helper()
	raw, ok := body.([]byte)
	if !ok {
		var err error
		raw, err = json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
	}
	return apitest.PostNotification(t, t.Context(), url, token, raw)
}

func TestPushNotificationsTeachTheInbox(t *testing.T) {
	ib := open(t, "")
	var mu sync.Mutex
	var learned []int64
	const tok = "s3cret-token-123456"
	agent := "http://127.0.0.1:8420/expense"
	srv := httptest.NewServer(inbox.NewPushHandler(ib, inbox.PushOptions{Agents: map[string]string{agent: ""}, Token: tok, OnItem: func(it *inbox.Item, created bool) {
		mu.Lock()
		defer mu.Unlock()
		if created {
			learned = append(learned, it.ID)
		}
	}}))
	defer srv.Close()

	// A task snapshot at input-required adds the question, with the agent
	// from the URL.
	if code := post(t, srv.URL+"/?agent="+agent, tok, a2a.StreamResponse{Event: pausedTask("task-1", "q-1")}); code != http.StatusNoContent {
		t.Fatalf("POST task: HTTP %d, want 204", code)
	}
	items, _ := ib.List(t.Context(), inbox.ListOptions{})
	if len(items) != 1 || items[0].AgentURL != agent || items[0].Key != "q-1" || items[0].Source != inbox.SourcePush {
		t.Fatalf("items after the push: %+v", items)
	}
	// The same question again adds nothing; a status update with a re-ask
	// (no agent in the URL) supersedes it and keeps the agent.
	post(t, srv.URL+"/?agent="+agent, tok, a2a.StreamResponse{Event: pausedTask("task-1", "q-1")})
	reask := &a2a.TaskStatusUpdateEvent{TaskID: "task-1", ContextID: "ctx-task-1",
		Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired, Message: costCentreQuestion("q-2")}}
	if code := post(t, srv.URL+"/", tok, a2a.StreamResponse{Event: reask}); code != http.StatusNoContent {
		t.Fatalf("POST statusUpdate: HTTP %d, want 204", code)
	}
	items, _ = ib.List(t.Context(), inbox.ListOptions{})
	if len(items) != 1 || items[0].Key != "q-2" || items[0].AgentURL != agent {
		t.Fatalf("items after the re-ask: %+v", items)
	}
	mu.Lock()
	if len(learned) != 2 {
		t.Errorf("OnItem reported %d new questions, want 2", len(learned))
	}
	mu.Unlock()

	// The task completes elsewhere: its question closes.
	done := &a2a.TaskStatusUpdateEvent{TaskID: "task-1", ContextID: "ctx-task-1", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
	post(t, srv.URL+"/", tok, a2a.StreamResponse{Event: done})
	if items, _ = ib.List(t.Context(), inbox.ListOptions{}); len(items) != 0 {
		t.Errorf("open items after the task completed: %+v", items)
	}

	for _, tt := range []struct {
		name, token string
		body        any
		want        int
	}{
		{"no token", "", a2a.StreamResponse{Event: pausedTask("task-2", "q-1")}, http.StatusUnauthorized},
		{"wrong token", "nope", a2a.StreamResponse{Event: pausedTask("task-2", "q-1")}, http.StatusUnauthorized},
		{"not JSON", tok, []byte("hello"), http.StatusBadRequest},
		{"not a StreamResponse", tok, []byte(`{"foo": 1}`), http.StatusBadRequest},
		{"input-required without a question", tok, a2a.StreamResponse{Event: &a2a.Task{ID: "t", Status: a2a.TaskStatus{State: a2a.TaskStateInputRequired}}}, http.StatusBadRequest},
		{"artifact update", tok, a2a.StreamResponse{Event: &a2a.TaskArtifactUpdateEvent{TaskID: "t", Artifact: &a2a.Artifact{ID: "a"}}}, http.StatusNoContent},
	} {
		if code := post(t, srv.URL+"/?agent="+agent, tt.token, tt.body); code != tt.want {
			t.Errorf("%s: HTTP %d, want %d", tt.name, code, tt.want)
		}
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %s, want 405", resp.Status)
	}
	if items, _ = ib.List(t.Context(), inbox.ListOptions{}); len(items) != 0 {
		t.Errorf("refused notifications changed the inbox: %+v", items)
	}
}

// Issue 30, finding 1: the push handler is the one guard of every push
// door. It takes a notification only from a listed agent, with that
// agent's own token (or Token for one listed without), as JSON; without
// listed agents it takes none, since the agent a notification names is
// where the person's answer and the caller's bearer token go.
func TestPushHandlerTakesOnlyListedAgentsWithTheirTokensAsJSON(t *testing.T) {
	const (
		shared = "shared-push-token-0123"
		own    = "agent-b-own-token-0123"
		agentA = "http://127.0.0.1:8420/a"
		agentB = "http://127.0.0.1:8420/b"
	)
	paused := func(id string) []byte {
		raw, _ := json.Marshal(a2a.StreamResponse{Event: pausedTask(id, "q-1")})
		return raw
	}
	send := func(url, token, contentType string, body []byte) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(string(body)))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if token != "" {
			req.Header.Set(inbox.TokenHeader, token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}

	none := open(t, "")
	nobody := httptest.NewServer(inbox.NewPushHandler(none, inbox.PushOptions{Token: shared}))
	defer nobody.Close()
	if code := send(nobody.URL+"/?agent="+agentA, shared, "application/json", paused("t-0")); code != http.StatusForbidden {
		t.Errorf("a handler with no agents listed: %d, want 403", code)
	}

	in := open(t, "")
	srv := httptest.NewServer(inbox.NewPushHandler(in, inbox.PushOptions{Token: shared, Agents: map[string]string{agentA: "", agentB: own}}))
	defer srv.Close()
	for _, c := range []struct {
		name, agent, token, contentType string
		want                            int
	}{
		{"no token", agentA, "", "application/json", http.StatusUnauthorized},
		{"an agent not listed, with the shared token", "http://evil.example/a", shared, "application/json", http.StatusForbidden},
		{"agent B with the shared token instead of its own", agentB, shared, "application/json", http.StatusUnauthorized},
		{"agent A with agent B's token", agentA, own, "application/json", http.StatusUnauthorized},
		{"no Content-Type (a web page's Blob body)", agentA, shared, "", http.StatusUnsupportedMediaType},
		{"text/plain (a web page's form or string body)", agentA, shared, "text/plain", http.StatusUnsupportedMediaType},
	} {
		if code := send(srv.URL+"/?agent="+c.agent, c.token, c.contentType, paused("t-1")); code != c.want {
			t.Errorf("%s: %d, want %d", c.name, code, c.want)
		}
	}
	if items, _ := in.List(t.Context(), inbox.ListOptions{All: true}); len(items) != 0 {
		t.Fatalf("refused notifications changed the inbox: %+v", items)
	}
	if items, _ := none.List(t.Context(), inbox.ListOptions{All: true}); len(items) != 0 {
		t.Fatalf("the handler with no agents changed its inbox: %+v", items)
	}

	if code := send(srv.URL+"/?agent="+agentA, shared, "application/json; charset=utf-8", paused("t-a")); code != http.StatusNoContent {
		t.Errorf("agent A with the shared token: %d, want 204", code)
	}
	if code := send(srv.URL+"/", own, "application/json", paused("t-b")); code != http.StatusNoContent {
		t.Errorf("agent B known by its own token: %d, want 204", code)
	}
	items, _ := in.List(t.Context(), inbox.ListOptions{})
	if len(items) != 2 || items[0].AgentURL != agentA || items[1].AgentURL != agentB {
		t.Errorf("items: %+v; want t-a from agent A and t-b from agent B", items)
	}
}

func TestDefaultPathFollowsTheEnvironment(t *testing.T) {
	t.Setenv(inbox.EnvPath, "/tmp/somewhere/inbox.db")
	if p, err := inbox.DefaultPath(); err != nil || p != "/tmp/somewhere/inbox.db" {
		t.Errorf("DefaultPath = %q, %v", p, err)
	}
	if runtime.GOOS != "linux" {
		return // os.UserConfigDir reads XDG_CONFIG_HOME on Linux only
	}
	t.Setenv(inbox.EnvPath, "")
	t.Setenv("XDG_CONFIG_HOME", "/tmp/cfg")
	if p, err := inbox.DefaultPath(); err != nil || p != filepath.Join("/tmp/cfg", "askpoint", "inbox.db") {
		t.Errorf("DefaultPath = %q, %v; want under the config directory", p, err)
	}
}
