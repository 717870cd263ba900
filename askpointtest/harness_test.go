package askpointtest_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

type pick struct {
	Size string `json:"size" jsonschema:"required,enum=S|M|L"`
}

// sizer asks which size, holding the shirt until its deadline, and keeps
// the item in its checkpoint; a decline ends the task rejected.
func sizer(released *[]string, mu *sync.Mutex) askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "sizer", Card: a2a.AgentCard{Name: "Sizer", Description: "Asks a size."},
		Agent: askpoint.Steps[order, pick]{
			OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
				q := question.Question{Text: "Which size?", Schema: question.MustSchemaFor[pick](),
					Options: []question.Option{{Value: "S", Label: "Small"}, {Value: "M", Label: "Medium"}, {Value: "L", Label: "Large"}}}
				return askpoint.Ask(q, order{Item: "shirt"}).Hold(askpoint.Hold{Name: "shirt", Until: time.Time{}}), nil
			},
			OnAnswer: func(ctx context.Context, call *askpoint.Call, o order, a pick) (askpoint.Outcome, error) {
				return askpoint.Complete(&a2a.Artifact{ID: "order", Parts: a2a.ContentParts{a2a.NewTextPart(o.Item + " " + a.Size)}}), nil
			},
			OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
				mu.Lock()
				defer mu.Unlock()
				*released = append(*released, h.Name)
				return nil
			},
		}}
}

func sizerSpec() askpoint.AgentSpec { return sizer(new([]string), new(sync.Mutex)) }

func TestSendQuestionAnswerAndWaitFollowATask(t *testing.T) {
	env := askpointtest.Start(t, sizerSpec())
	task := env.Send(t, "sizer", "a shirt")
	if q := env.Question(t, task); q.Text != "Which size?" || q.ID == "" {
		t.Fatalf("Question = %+v, want the size question with an ID", q)
	}
	// A text answer is read as a person's: "medium" is the option's label.
	done := env.Answer(t, task, "medium")
	if done.Status.State != a2a.TaskStateCompleted || done.Artifacts[0].Parts[0].Text() != "shirt M" {
		t.Fatalf("after the text answer: %s %+v, want completed with shirt M", done.Status.State, done.Artifacts)
	}
	// Any other value is the answer's JSON object; an invalid one is re-asked.
	task = env.Send(t, "sizer", "a shirt")
	again := env.Answer(t, task, pick{Size: "XL"})
	if q := env.Question(t, again); q.Attempt != 2 || len(q.Errors) != 1 {
		t.Fatalf("re-ask %+v, want attempt 2 with one error", q)
	}
	if got := env.Answer(t, again, map[string]string{"size": "L"}); got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("after the data answer: %s, want completed", got.Status.State)
	}
	task = env.Send(t, "sizer", "a shirt")
	if got := env.Decline(t, task, "no shirts today"); got.Status.State != a2a.TaskStateRejected {
		t.Fatalf("after Decline: %s, want rejected", got.Status.State)
	}
	// WaitQuestion and WaitState on a task some other caller started.
	res, err := env.Client(t, "sizer").SendMessage(t.Context(), &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("a shirt")), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(res.(*a2a.Task).ID)
	if q := env.WaitQuestion(t, id); q.Text != "Which size?" {
		t.Fatalf("WaitQuestion = %+v", q)
	}
	go func() {
		m := a2a.NewMessageForTask(a2a.MessageRoleUser, a2a.TaskInfo{TaskID: a2a.TaskID(id)}, a2a.NewTextPart("S"))
		_, _ = env.Client(t, "sizer").SendMessage(context.WithoutCancel(t.Context()), &a2a.SendMessageRequest{Message: m})
	}()
	if got := env.WaitState(t, id, a2a.TaskStateCompleted); got.Artifacts[0].Parts[0].Text() != "shirt S" {
		t.Fatalf("WaitState = %+v", got.Artifacts)
	}
}

// recorder is a test's log, kept for the test to read.
type recorder struct {
	testing.TB
	mu    sync.Mutex
	lines []string
}

func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range args {
		r.lines = append(r.lines, a.(string))
	}
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

func TestAPanickingStepFailsAtOnceAndItsStackIsInTheTestsLog(t *testing.T) {
	log := &recorder{TB: t}
	env := askpointtest.ListenWith(log, askpointtest.Options{})
	env.Serve(log, askpoint.AgentSpec{Name: "boom", Card: a2a.AgentCard{Name: "Boom", Description: "Panics."},
		Agent: askpoint.Steps[struct{}, struct{}]{OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			panic("the agent's bug")
		}}})
	task := env.Send(t, "boom", "hi")
	if task.Status.State != a2a.TaskStateWorking && task.Status.State != a2a.TaskStateFailed {
		t.Fatalf("state %s", task.Status.State)
	}
	got := env.WaitState(t, string(task.ID), a2a.TaskStateFailed)
	if !strings.Contains(got.Status.Message.Parts[0].Text(), "panicked") {
		t.Errorf("status %q does not say the step panicked", got.Status.Message.Parts[0].Text())
	}
	if n := env.StepRetries(); n != 0 {
		t.Errorf("%d retries of a panicking step, want none", n)
	}
	if l := log.text(); !strings.Contains(l, "the agent's bug") || !strings.Contains(l, "goroutine") {
		t.Errorf("the test's log %q lacks the panic and its stack", l)
	}
}

func TestTokensClientAsAndGRPCClient(t *testing.T) {
	const alice, bob = "alice-token-0123456789", "bob-token-0123456789ab"
	env := askpointtest.StartWith(t, askpointtest.Options{Tokens: map[string]string{alice: "alice", bob: "bob"}}, sizerSpec())
	task := env.As(alice).Send(t, "sizer", "a shirt")
	if _, err := env.ClientAs(t, "sizer", bob).GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err == nil {
		t.Error("bob reads alice's task")
	}
	if _, err := env.Client(t, "sizer").GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID}); err == nil {
		t.Error("a caller without a token reads alice's task")
	}
	g := env.As(alice).GRPCClient(t, "sizer")
	got, err := g.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	if err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("GetTask over gRPC as alice = %v, %v", got, err)
	}
	if env.As(alice).Answer(t, task, "L").Status.State != a2a.TaskStateCompleted {
		t.Error("alice's answer did not complete her task")
	}
}

func TestClockAdvanceReleasesHoldsAndExpiresQuestions(t *testing.T) {
	var (
		mu       sync.Mutex
		released []string
	)
	clock := askpointtest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	env := askpointtest.StartWith(t, askpointtest.Options{Clock: clock, Config: func(c *askpoint.Config) {
		c.QuestionExpiry = time.Hour
		c.SweepInterval, c.ReleaseInterval = time.Hour, time.Hour // only Advance moves them
	}}, sizer(&released, &mu))
	task := env.Send(t, "sizer", "a shirt")
	if q := env.Question(t, task); !q.Expires.Equal(clock.Now().Add(time.Hour)) {
		t.Fatalf("expires %v, want an hour from the clock's %v", q.Expires, clock.Now())
	}
	clock.Advance(t, 59*time.Minute)
	mu.Lock()
	early := len(released)
	mu.Unlock()
	if early != 0 {
		t.Fatalf("released %v before the deadline", released)
	}
	clock.Advance(t, time.Minute)
	mu.Lock()
	defer mu.Unlock()
	if len(released) != 1 {
		t.Errorf("released %v at the deadline, want the shirt", released)
	}
	got := env.WaitState(t, string(task.ID), a2a.TaskStateFailed)
	if !strings.Contains(got.Status.Message.Parts[0].Text(), "No answer in time") {
		t.Errorf("status %q", got.Status.Message.Parts[0].Text())
	}
}

// A relay served by one server, its sub-agent by another: the sub-agent's
// server pushes to the relay's (no hop falls back to reading the
// sub-task), and the relay's lines go to the logger it was given.
func TestARelayHearsFromASubAgentOnAnotherServer(t *testing.T) {
	sub := askpointtest.Start(t, sizerSpec())
	env := askpointtest.Listen(t)
	var buf apitest.SyncBuffer
	a, err := relay.Agent(relay.Config{SubAgentURL: sub.AgentURL("sizer"), CallbackURL: env.AgentURL("front"),
		SettleWithin: time.Nanosecond, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	env.Serve(t, askpoint.AgentSpec{Name: "front", Agent: a, Card: a2a.AgentCard{Name: "Front", Description: "Relays."}})
	task := env.Send(t, "front", "a shirt")
	q := env.WaitQuestion(t, string(task.ID))
	task = env.WaitState(t, string(task.ID), a2a.TaskStateInputRequired)
	if q.Text != "Which size?" {
		t.Fatalf("relayed %q", q.Text)
	}
	got := env.Answer(t, task, "M")
	if got.Status.State != a2a.TaskStateCompleted {
		got = env.WaitState(t, string(task.ID), a2a.TaskStateCompleted)
	}
	if l := buf.String(); l != "" {
		t.Errorf("the relay logged %q; want nothing (no fallback to reading the sub-task)", l)
	}
}

// fatalTB records a Fatalf and ends its goroutine, as testing.T does,
// with a deadline of its own.
type fatalTB struct {
	testing.TB
	deadline time.Time
	mu       sync.Mutex
	fatal    string
}

func (f *fatalTB) Deadline() (time.Time, bool) { return f.deadline, true }

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func TestWaitStateFailsWithWhatTheTaskIsAtTheDeadline(t *testing.T) {
	env := askpointtest.Start(t, sizerSpec())
	task := env.Send(t, "sizer", "a shirt")
	f := &fatalTB{TB: t, deadline: time.Now().Add(time.Second)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		env.WaitState(f, string(task.ID), a2a.TaskStateCompleted)
	}()
	<-done
	if !strings.Contains(f.fatal, "was not completed by the test's deadline") || !strings.Contains(f.fatal, `"Which size?"`) {
		t.Errorf("WaitState failed with %q; want the deadline and what the task is (its question)", f.fatal)
	}
}

func TestAStepErrorIsInTheTestsLog(t *testing.T) {
	log := &recorder{TB: t}
	tries := 0
	env := askpointtest.StartWith(log, askpointtest.Options{Config: func(c *askpoint.Config) { c.StepRetryMin, c.StepRetryMax = time.Millisecond, time.Millisecond }},
		askpoint.AgentSpec{Name: "flaky", Card: a2a.AgentCard{Name: "Flaky", Description: "Fails once."},
			Agent: askpoint.Steps[struct{}, struct{}]{OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
				if tries++; tries == 1 {
					return askpoint.Outcome{}, fmt.Errorf("the ledger is down")
				}
				return askpoint.Complete(), nil
			}}})
	task := env.Send(t, "flaky", "hi")
	env.WaitState(t, string(task.ID), a2a.TaskStateCompleted)
	if l := log.text(); !strings.Contains(l, "the ledger is down") {
		t.Errorf("the test's log %q lacks the step's error", l)
	}
}

// Restart serves the same file at the same address with a new server: a
// question asked before it is answered after it, by the new process's
// agents, and the Env's clients reach it.
func TestRestartResumesWhatThePreviousServerPaused(t *testing.T) {
	var released []string
	var mu sync.Mutex
	env := askpointtest.Start(t, sizer(&released, &mu))
	task := env.Send(t, "sizer", "a shirt")
	first, url := env.Server, env.URL

	env.Restart(t, sizer(&released, &mu))
	if env.Server == first || env.URL != url {
		t.Fatalf("after Restart: the same server (%v) or another URL (%s, was %s)", env.Server == first, env.URL, url)
	}
	if got := env.Answer(t, task, "large"); got.Status.State != a2a.TaskStateCompleted || got.Artifacts[0].Parts[0].Text() != "shirt L" {
		t.Fatalf("after the restart the answer gives %s, want the paused task completed", got.Status.State)
	}
}
