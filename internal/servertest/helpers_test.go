package servertest_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/internal/apitest"
)

// callTimeout bounds every call a test makes, so that a broken engine fails
// the test instead of hanging it.
const callTimeout = 10 * time.Second

// notYet is how long a "has not returned yet" check waits.
const notYet = 300 * time.Millisecond

// testCtx is t.Context() bounded by callTimeout.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	t.Cleanup(cancel)
	return ctx
}

// eachTransport runs f once per binding, as a subtest named after it.
func eachTransport(t *testing.T, f func(t *testing.T, tr a2a.TransportProtocol)) {
	t.Helper()
	for _, tr := range apitest.Transports {
		t.Run(string(tr), func(t *testing.T) { f(t, tr) })
	}
}

// served is what a test has on one binding: a server of its own, a client
// of one of its agents over that binding, and a context bounded by
// callTimeout.
type served struct {
	env *apitest.Env
	tr  a2a.TransportProtocol
	c   *a2aclient.Client
	ctx context.Context
}

// eachServed runs f in parallel once per binding, as a subtest named after
// it, each time on a fresh server from start with a client of its agent.
func eachServed(t *testing.T, start func(t *testing.T) *apitest.Env, agent string, f func(t *testing.T, s served)) {
	t.Helper()
	t.Parallel()
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		t.Parallel()
		env := start(t)
		f(t, served{env: env, tr: tr, c: env.Client(t, agent, tr), ctx: testCtx(t)})
	})
}

// eachScript is eachServed for the script agent on a server started with
// opts.
func eachScript(t *testing.T, opts apitest.Options, f func(t *testing.T, s served)) {
	t.Helper()
	eachServed(t, func(t *testing.T) *apitest.Env { return apitest.Start(t, opts) }, "script", f)
}

// sendStream opens SendStreamingMessage for m on c.
func sendStream(t *testing.T, ctx context.Context, c *a2aclient.Client, m *a2a.Message) *stream {
	t.Helper()
	return openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return c.SendStreamingMessage(ctx, &a2a.SendMessageRequest{Message: m})
	})
}

// subscribeStream opens SubscribeToTask for task id on c.
func subscribeStream(t *testing.T, ctx context.Context, c *a2aclient.Client, id a2a.TaskID) *stream {
	t.Helper()
	return openStream(t, ctx, func(ctx context.Context) iter.Seq2[a2a.Event, error] {
		return c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id})
	})
}

// sendAsync sends m with returnImmediately and requires a Task back.
func sendAsync(t *testing.T, ctx context.Context, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	return sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: m, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
}

// cancelTask cancels task id and requires the answer, and then the stored
// task, to be canceled.
func cancelTask(t *testing.T, ctx context.Context, c *a2aclient.Client, id a2a.TaskID) {
	t.Helper()
	canceled, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("CancelTask(%s) error = %v", id, err)
	}
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask(%s) state = %v, want %v", id, canceled.Status.State, a2a.TaskStateCanceled)
	}
	if got := getTask(t, ctx, c, id).Status.State; got != a2a.TaskStateCanceled {
		t.Errorf("GetTask(%s) after CancelTask state = %v, want %v", id, got, a2a.TaskStateCanceled)
	}
}

// wantUserTexts requires the texts of the user messages of history to be
// want, in order.
func wantUserTexts(t *testing.T, history []*a2a.Message, want ...string) {
	t.Helper()
	var users []string
	for _, m := range history {
		if m.Role == a2a.MessageRoleUser {
			users = append(users, messageText(m))
		}
	}
	if !slices.Equal(users, want) {
		t.Fatalf("user messages in history = %q, want %q", users, want)
	}
}

// userText is a new user message holding one text part.
func userText(text string) *a2a.Message {
	return a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
}

// userData is a new user message holding one data part.
func userData(v map[string]any) *a2a.Message {
	p := a2a.NewDataPart(v)
	p.MediaType = "application/json"
	return a2a.NewMessage(a2a.MessageRoleUser, p)
}

// followUp binds m to task id (no contextId).
func followUp(id a2a.TaskID, m *a2a.Message) *a2a.Message {
	m.TaskID = id
	return m
}

func intp(n int) *int { return &n }

// sendTask sends req and requires a Task back.
func sendTask(t *testing.T, ctx context.Context, c apitest.Caller, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	return apitest.SendTask(t, ctx, c, req, fmt.Sprintf("%q", messageText(req.Message)))
}

// sendPushed sends text with the push configuration pc and requires a Task
// back.
func sendPushed(t *testing.T, ctx context.Context, c *a2aclient.Client, text string, pc a2a.PushConfig) *a2a.Task {
	t.Helper()
	return sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: userText(text), Config: &a2a.SendMessageConfig{PushConfig: &pc}})
}

// send is sendTask with no configuration.
func send(t *testing.T, ctx context.Context, c apitest.Caller, m *a2a.Message) *a2a.Task {
	t.Helper()
	return sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: m})
}

// sendState sends m and requires the returned task to be in state want.
func sendState(t *testing.T, ctx context.Context, c apitest.Caller, m *a2a.Message, want a2a.TaskState) *a2a.Task {
	t.Helper()
	task := send(t, ctx, c, m)
	if task.Status.State != want {
		t.Fatalf("SendMessage(%q) state = %v (status message %q), want %v",
			messageText(m), task.Status.State, messageText(task.Status.Message), want)
	}
	return task
}

func getTask(t *testing.T, ctx context.Context, c apitest.Caller, id a2a.TaskID) *a2a.Task {
	t.Helper()
	return apitest.GetTask(t, ctx, c, &a2a.GetTaskRequest{ID: id})
}

// waitState polls GetTask until the task is in state want.
func waitState(t *testing.T, ctx context.Context, c apitest.Caller, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	return apitest.WaitState(t, ctx, c, &a2a.GetTaskRequest{ID: id}, want, func(last *a2a.Task) string {
		return fmt.Sprintf("status message %q", messageText(last.Status.Message))
	})
}

// preStreamStatus is the HTTP status with which a JSON-RPC streaming call
// is refused before its stream starts (a plain JSON-RPC error response;
// see http.go's writeJSONRPCStreamError and decision 0012).
var preStreamStatus = map[error]string{
	a2a.ErrTaskNotFound:         "404",
	a2a.ErrUnsupportedOperation: "400",
	a2a.ErrInvalidParams:        "400",
	a2a.ErrInvalidRequest:       "429",
}

// wantRefused requires err to be the refusal want of a streaming call. The
// a2a-go v2.4.0 client reports a JSON-RPC refusal that comes before the
// stream only by its HTTP status, so there the status must match; the
// JSON-RPC error in the body is checked by raw requests in
// tck_errors_test.go.
func wantRefused(t *testing.T, call string, err, want error) {
	t.Helper()
	if err != nil && strings.HasPrefix(err.Error(), "unexpected HTTP status: ") {
		if status := preStreamStatus[want]; !strings.Contains(err.Error(), status) {
			t.Fatalf("%s error = %v, want HTTP status %s for %v", call, err, status, want)
		}
		return
	}
	wantErr(t, call, err, want)
}

// wantErr requires err to wrap want.
func wantErr(t *testing.T, call string, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s error = nil, want %v", call, want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s error = %v, want %v", call, err, want)
	}
}

// messageText joins the text parts of m.
func messageText(m *a2a.Message) string { return apitest.Text(m) }

// dataPart returns the first data part of parts holding a JSON object.
func dataPart(parts a2a.ContentParts) (map[string]any, bool) {
	for _, p := range parts {
		if p == nil {
			continue
		}
		if d, ok := p.Content.(a2a.Data); ok {
			if m, ok := d.Value.(map[string]any); ok {
				return m, true
			}
		}
	}
	return nil, false
}

// artifactText joins the text parts of the named artifact; ok is false when
// the task has no artifact of that name.
func artifactText(task *a2a.Task, name string) (string, bool) {
	for _, a := range task.Artifacts {
		if a != nil && a.Name == name {
			return messageText(&a2a.Message{Parts: a.Parts}), true
		}
	}
	return "", false
}

// roles lists the roles of a history.
func roles(h []*a2a.Message) []a2a.MessageRole {
	out := make([]a2a.MessageRole, len(h))
	for i, m := range h {
		out[i] = m.Role
	}
	return out
}

// streamItem is one item of a stream: an event or an error.
type streamItem struct {
	ev  a2a.Event
	err error
}

// stream reads a client stream on its own goroutine so that a test can wait
// for each item with a deadline and tell an open stream from a closed one.
type stream struct {
	items  chan streamItem
	cancel context.CancelFunc
}

// openStream starts reading the sequence build returns. build gets a
// context the stream owns: it is canceled when the test ends.
func openStream(t *testing.T, ctx context.Context, build func(ctx context.Context) iter.Seq2[a2a.Event, error]) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{items: make(chan streamItem), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.items)
		for ev, err := range build(ctx) {
			select {
			case s.items <- streamItem{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// next waits for the next item; ok is false when the stream ended.
func (s *stream) next(t *testing.T, ctx context.Context) (it streamItem, ok bool) {
	t.Helper()
	select {
	case it, ok = <-s.items:
		return it, ok
	case <-ctx.Done():
		t.Fatalf("stream: no event and no end before the deadline")
		return streamItem{}, false
	}
}

// nextEvent requires the next item to be an event.
func (s *stream) nextEvent(t *testing.T, ctx context.Context) a2a.Event {
	t.Helper()
	it, ok := s.next(t, ctx)
	if !ok {
		t.Fatalf("stream ended, want another event")
	}
	if it.err != nil {
		t.Fatalf("stream error = %v, want an event", it.err)
	}
	return it.ev
}

// rest reads the stream to its end and returns its events; an error item
// fails the test.
func (s *stream) rest(t *testing.T, ctx context.Context) []a2a.Event {
	t.Helper()
	var evs []a2a.Event
	for {
		it, ok := s.next(t, ctx)
		if !ok {
			return evs
		}
		if it.err != nil {
			t.Fatalf("stream error = %v after %d events", it.err, len(evs))
		}
		evs = append(evs, it.ev)
	}
}

// describeAll describes each of evs.
func describeAll(evs []a2a.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = describe(ev)
	}
	return out
}

// lastEvent is the final event of evs, nil when there is none.
func lastEvent(evs []a2a.Event) a2a.Event {
	if len(evs) == 0 {
		return nil
	}
	return evs[len(evs)-1]
}

// wantEnd requires the stream to end without another event.
func (s *stream) wantEnd(t *testing.T, ctx context.Context) {
	t.Helper()
	if it, ok := s.next(t, ctx); ok {
		t.Fatalf("stream yielded %s (error %v), want the end of the stream", describe(it.ev), it.err)
	}
}

// wantOpen requires the stream to yield nothing (and not end) for a short
// while.
func (s *stream) wantOpen(t *testing.T) {
	t.Helper()
	select {
	case it, ok := <-s.items:
		if !ok {
			t.Fatalf("stream ended, want it to stay open")
		}
		t.Fatalf("stream yielded %s (error %v), want it to stay open and quiet", describe(it.ev), it.err)
	case <-time.After(notYet):
	}
}

// describe names an event for failure messages and comparisons:
// "task SUBMITTED", "status TASK_STATE_WORKING \"text\"", "artifact name".
func describe(ev a2a.Event) string {
	switch e := ev.(type) {
	case nil:
		return "nothing"
	case *a2a.Task:
		return fmt.Sprintf("task %s", e.Status.State)
	case *a2a.TaskStatusUpdateEvent:
		if txt := messageText(e.Status.Message); txt != "" {
			return fmt.Sprintf("status %s %q", e.Status.State, txt)
		}
		return fmt.Sprintf("status %s", e.Status.State)
	case *a2a.TaskArtifactUpdateEvent:
		if e.Artifact == nil {
			return "artifact <nil>"
		}
		return fmt.Sprintf("artifact %s", e.Artifact.Name)
	case *a2a.Message:
		return fmt.Sprintf("message %q", messageText(e))
	}
	return fmt.Sprintf("%T", ev)
}
