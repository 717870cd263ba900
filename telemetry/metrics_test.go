package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/telemetry"
)

// series gathers m's registry into "name{k="v",...}" -> value (counters,
// gauges, and histograms' _count).
func series(t *testing.T, m *telemetry.Metrics) map[string]float64 {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, mm := range f.GetMetric() {
			var ls []string
			for _, l := range mm.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(ls)
			name := f.GetName() + "{" + strings.Join(ls, ",") + "}"
			switch {
			case mm.GetCounter() != nil:
				out[name] = mm.GetCounter().GetValue()
			case mm.GetGauge() != nil:
				out[name] = mm.GetGauge().GetValue()
			case mm.GetHistogram() != nil:
				out[strings.Replace(name, "{", "_count{", 1)] = float64(mm.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestDeclinesConflictsAndRedeliveriesAreCounted: a declined question, a
// late answer to a question already answered (the loser of the race), and
// a redelivered message each show in their series, and the open-question
// gauge starts from the store when a server restarts on it.
func TestDeclinesConflictsAndRedeliveriesAreCounted(t *testing.T) {
	m := newMetrics(t)
	obs := &telemetry.Observer{Metrics: m}
	withObs := func(o *telemetry.Observer) func(*askpoint.Config) {
		return func(c *askpoint.Config) {
			c.Observer = o
		}
	}
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: withObs(obs)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(ctx, t, env.URL+"/expense")

	ask := func() (*a2a.Task, *question.Question) {
		t.Helper()
		task := send(ctx, t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")))
		q, ok, err := question.FromMessage(task.Status.Message)
		if err != nil || !ok {
			t.Fatalf("no question: %s %v", task.Status.State, err)
		}
		return task, q
	}
	answer := func(task *a2a.Task, fields map[string]any) *a2a.Message {
		msg := a2a.NewMessage(a2a.MessageRoleUser, dataPart(fields))
		msg.TaskID = task.ID
		return msg
	}

	declined, dq := ask()
	send(ctx, t, c, answer(declined, map[string]any{"questionId": dq.ID, "action": "decline", "reason": "not mine"}))

	won, wq := ask()
	winner := answer(won, map[string]any{"questionId": wq.ID, "costCentre": "CC-4410"})
	send(ctx, t, c, winner)
	send(ctx, t, c, answer(won, map[string]any{"questionId": wq.ID, "costCentre": "CC-4420"})) // late: lost
	send(ctx, t, c, winner)                                                                    // the same message again

	stillOpen, _ := ask()
	_ = stillOpen

	got := series(t, m)
	for name, want := range map[string]float64{
		`askpoint_questions_asked_total{agent="expense",kind="costCentre"}`:                     3,
		`askpoint_questions_closed_total{agent="expense",kind="costCentre",outcome="declined"}`: 1,
		`askpoint_questions_closed_total{agent="expense",kind="costCentre",outcome="answered"}`: 1,
		`askpoint_question_answer_seconds_count{agent="expense",kind="costCentre"}`:             1,
		`askpoint_answer_conflicts_total{agent="expense"}`:                                      1,
		`askpoint_redeliveries_total{agent="expense"}`:                                          1,
		`askpoint_questions_open{agent="expense"}`:                                              1,
		`askpoint_transitions_total{agent="expense",cause="answer"}`:                            2,
		`askpoint_store_operation_seconds_count{op="CreateTask"}`:                               3,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}

	// A new server on the same database starts the gauge from the store.
	env.Close()
	m2 := newMetrics(t)
	apitest.Start(t, apitest.Options{Quiet: true, DBPath: env.DBPath, Config: withObs(&telemetry.Observer{Metrics: m2})})
	if v := series(t, m2)[`askpoint_questions_open{agent="expense"}`]; v != 1 {
		t.Errorf("after a restart askpoint_questions_open = %v, want 1 (the question still open in the store)", v)
	}
}

func dial(ctx context.Context, t *testing.T, agentURL string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(ctx, agentURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func send(ctx context.Context, t *testing.T, c *a2aclient.Client, m *a2a.Message) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T", res)
	}
	return task
}

// TestDebugLogHasOneJSONLinePerTransition: at debug level every committed
// change is one structured line naming the task, its agent and the cause,
// with no observer configured.
func TestDebugLogHasOneJSONLinePerTransition(t *testing.T) {
	var buf apitest.SyncBuffer
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := dial(ctx, t, env.URL+"/expense")
	task := send(ctx, t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")))
	q, _, _ := question.FromMessage(task.Status.Message)
	msg := a2a.NewMessage(a2a.MessageRoleUser, dataPart(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	msg.TaskID = task.ID
	if done := send(ctx, t, c, msg); done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("task is %s, want completed", done.Status.State)
	}

	var lines []map[string]any
	for _, l := range strings.Split(buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "transition" && m["task"] == string(task.ID) {
			lines = append(lines, m)
		}
	}
	// Quick steps on SQLite: the ask is one write (message and question),
	// the answer another (answer and outcome).
	if len(lines) != 2 {
		t.Fatalf("%d transition lines for the task, want 2:\n%s", len(lines), buf.String())
	}
	first, second := lines[0], lines[1]
	if first["agent"] != "expense" || first["cause"] != "start" || first["to"] != string(a2a.TaskStateInputRequired) || first["asked"] != true || first["level"] != "DEBUG" {
		t.Errorf("first transition line = %v, want the start asking, at debug", first)
	}
	if second["cause"] != "answer" || second["from"] != string(a2a.TaskStateInputRequired) || second["to"] != string(a2a.TaskStateCompleted) || second["question"] != "answered" {
		t.Errorf("second transition line = %v, want the answer completing the task", second)
	}
}

// An agent that asks ever new kinds of question (a relay asking on for a
// hostile sub-agent, whose field names make the kind) gets at most 64 kind
// series, the rest counted under "other", and a kind that is not valid
// UTF-8 is counted, not a panic.
func TestQuestionKindsPerAgentAreBoundedAndValid(t *testing.T) {
	m := newMetrics(t)
	obs := telemetry.New(m, nil)
	for i := range 100 {
		obs.Transition(t.Context(), askpoint.Transition{TaskID: fmt.Sprint("t", i), Agent: "relay", Cause: "step",
			To: a2a.TaskStateInputRequired, Asked: true, Kind: fmt.Sprintf("field%03d", i)})
	}
	obs.Transition(t.Context(), askpoint.Transition{TaskID: "bad", Agent: "other-agent", Cause: "step",
		To: a2a.TaskStateInputRequired, Asked: true, Kind: "a\xffb"})
	kinds, other := 0, 0.0
	for name, v := range series(t, m) {
		if !strings.HasPrefix(name, "askpoint_questions_asked_total{") || !strings.Contains(name, `agent="relay"`) {
			continue
		}
		kinds++
		if strings.Contains(name, `kind="other"`) {
			other = v
		}
	}
	if kinds != 65 || other != 36 {
		t.Errorf("relay's asked series: %d kinds, %v under other; want 64 kinds and other with the 36 past them", kinds, other)
	}
	if v := series(t, m)[`askpoint_questions_asked_total{agent="other-agent",kind="a`+"\uFFFD"+`b"}`]; v != 1 {
		t.Errorf("the invalid kind was counted %v times under its valid form, want 1", v)
	}
}
