package telemetry_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/telemetry"
)

// clock is a settable clock for a server: the log's times and the
// question's expiry follow it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestStoreStatsMatchMetrics: every way a question ends (answered after a
// re-ask, declined, the cancel action, CancelTask, attempts used up, a
// late losing answer and a redelivery, expired, still open), on SQLite
// (quick steps: an answer and its step's outcome in one write) and on
// PostgreSQL (separate writes). The table read back from the store has
// the counts and rates of the table of the server's metrics, row for
// row; the answer times are exact from the store and in the same
// histogram bucket as the metrics' estimate.
func TestStoreStatsMatchMetrics(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) { testStoreStatsMatchMetrics(t, "") })
	t.Run("PostgreSQL", func(t *testing.T) { testStoreStatsMatchMetrics(t, dbtest.Schema(t)) })
}

func testStoreStatsMatchMetrics(t *testing.T, pgURL string) {
	m := newMetrics(t)
	obs := &telemetry.Observer{Metrics: m}
	clk := &clock{now: time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)}
	env := apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: pgURL, Config: func(c *askpoint.Config) {
		c.Now = clk.Now
		c.MaxAttempts = 2
		c.Observer = obs
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := dial(ctx, t, env.URL+"/expense")

	ask := func(text string) (*a2a.Task, *question.Question) {
		t.Helper()
		task := send(ctx, t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)))
		q, ok, err := question.FromMessage(task.Status.Message)
		if err != nil || !ok {
			t.Fatalf("no question: %s %v", task.Status.State, err)
		}
		return task, q
	}
	answer := func(task *a2a.Task, parts ...*a2a.Part) *a2a.Task {
		t.Helper()
		msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
		msg.TaskID = task.ID
		return send(ctx, t, c, msg)
	}
	const receipt = "File my taxi receipt from Tuesday, 42 euros"
	wantState := func(what string, got *a2a.Task, want a2a.TaskState) {
		t.Helper()
		if got.Status.State != want {
			t.Fatalf("%s: task is %s, want %s", what, got.Status.State, want)
		}
	}

	// Answered after a re-ask, 10 s after it was asked.
	task, _ := ask(receipt)
	clk.add(7 * time.Second)
	re := answer(task, a2a.NewTextPart("engineering"))
	wantState("re-ask", re, a2a.TaskStateInputRequired)
	rq, _, _ := question.FromMessage(re.Status.Message)
	clk.add(3 * time.Second)
	wantState("answer", answer(task, dataPart(map[string]any{"questionId": rq.ID, "costCentre": "CC-4410"})), a2a.TaskStateCompleted)

	// Declined.
	task, q := ask(receipt)
	answer(task, dataPart(map[string]any{"questionId": q.ID, "action": "decline", "reason": "not mine"}))

	// The cancel action, and CancelTask.
	task, q = ask(receipt)
	wantState("cancel action", answer(task, dataPart(map[string]any{"questionId": q.ID, "action": "cancel"})), a2a.TaskStateCanceled)
	task, _ = ask(receipt)
	if _, err := c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: task.ID}); err != nil {
		t.Fatalf("CancelTask: %v", err)
	}

	// Attempts used up (MaxAttempts 2): re-asked once, then failed.
	task, _ = ask(receipt)
	answer(task, a2a.NewTextPart("engineering"))
	wantState("attempts used up", answer(task, a2a.NewTextPart("marketing")), a2a.TaskStateFailed)

	// Answered at once; a late losing answer and a redelivery write nothing.
	task, q = ask(receipt)
	clk.add(90 * time.Second)
	winner := a2a.NewMessage(a2a.MessageRoleUser, dataPart(map[string]any{"questionId": q.ID, "costCentre": "CC-4420"}))
	winner.TaskID = task.ID
	send(ctx, t, c, winner)
	answer(task, dataPart(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	send(ctx, t, c, winner)

	// Expired: the answer after the expiry expires it, and gets the
	// expired task as it stands (decision 0105).
	task, q = ask(receipt)
	clk.add(25 * time.Hour)
	late := a2a.NewMessage(a2a.MessageRoleUser, dataPart(map[string]any{"questionId": q.ID, "costCentre": "CC-4410"}))
	late.TaskID = task.ID
	if res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: late}); err != nil {
		t.Fatalf("an answer after the expiry: %v, want the expired task", err)
	} else if got, ok := res.(*a2a.Task); !ok || got.Status.State != a2a.TaskStateFailed {
		t.Fatalf("an answer after the expiry = %v, want the task failed at its expiry", res)
	}

	// Still open, one of another kind (a receipt without a date) too.
	ask(receipt)
	ask("File my taxi receipt, 42 euros")

	fromMetrics := m.Stats()
	fromStore, err := telemetry.StoreStats(ctx, env.Store)
	if err != nil {
		t.Fatalf("StoreStats: %v", err)
	}
	show := func(rows [][]string) string {
		var b strings.Builder
		for _, r := range rows {
			fmt.Fprintln(&b, strings.Join(r, " | "))
		}
		return b.String()
	}
	if len(fromStore) != len(fromMetrics) || len(fromStore) < 2 {
		t.Fatalf("the store's table has %d rows, the metrics' %d; want the same, at least 2:\nstore:\n%smetrics:\n%s", len(fromStore), len(fromMetrics), show(fromStore), show(fromMetrics))
	}
	for i := range fromStore {
		s, mm := fromStore[i], fromMetrics[i]
		for col := range telemetry.StatsHeader {
			if col == 4 || col == 5 { // MEDIAN, P90
				if !sameBucket(s[col], mm[col]) {
					t.Errorf("row %s/%s, %s: store %s and metrics %s are not in the same answer-time bucket", s[0], s[1], telemetry.StatsHeader[col], s[col], mm[col])
				}
				continue
			}
			if s[col] != mm[col] {
				t.Errorf("row %d, %s: store %q, metrics %q\nstore:\n%smetrics:\n%s", i, telemetry.StatsHeader[col], s[col], mm[col], show(fromStore), show(fromMetrics))
			}
		}
	}
	// And the figures are the ones the scenarios make: 8 asked of kind
	// costCentre, 2 answered (exact median 10 s of 10 s and 90 s; p90
	// 90 s), 2 re-asks, 1 expiry, 1 decline of 8.
	want := []string{"expense", "costCentre", "8", "2", "10s", "1m30s", "25%", "12%", "12%"}
	var got []string
	for _, r := range fromStore {
		if r[1] == "costCentre" {
			got = r
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the store's costCentre row = %v, want %v\n%s", got, want, show(fromStore))
	}
}

// sameBucket reports whether two MEDIAN or P90 cells are both "-" or both
// durations in the same bucket of the answer-time histogram.
func sameBucket(a, b string) bool {
	if a == "-" || b == "-" {
		return a == b
	}
	da, errA := time.ParseDuration(a)
	db, errB := time.ParseDuration(b)
	return errA == nil && errB == nil && telemetry.AnswerBucket(da) == telemetry.AnswerBucket(db)
}
