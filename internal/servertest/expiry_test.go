package servertest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// TestQuestionExpiryIsNeverEarlierThanAsked: a question that stays open
// for the configured expiry expires no earlier than that after it was
// asked, whatever fraction of a second the clock reads (it was cut to the
// whole second: 3s gave 2.0-3.0 s and 500ms an expiry already past), and
// it is still open, and answerable, a millisecond before its expiry.
func TestQuestionExpiryIsNeverEarlierThanAsked(t *testing.T) {
	for _, expiry := range []time.Duration{500 * time.Millisecond, 3 * time.Second} {
		for _, frac := range []time.Duration{300 * time.Millisecond, 700*time.Millisecond + 123456} {
			t.Run(fmt.Sprintf("%v at .%03d", expiry, frac/time.Millisecond), func(t *testing.T) {
				clock := apitest.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, int(frac), time.UTC))
				env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
					c.Now, c.QuestionExpiry, c.DisableSweeper = clock.Now, expiry, true
				}})
				eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
					ctx := testCtx(t)
					c := env.Client(t, "script", tr)
					asked := clock.Now()
					task := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
					q, _, err := question.FromMessage(task.Status.Message)
					if err != nil {
						t.Fatal(err)
					}
					if q.Expires.Before(asked.Add(expiry)) {
						t.Fatalf("asked at %s with expiry %v: expires %s, %v early", asked.Format(time.RFC3339Nano), expiry,
							q.Expires.Format(time.RFC3339Nano), asked.Add(expiry).Sub(q.Expires))
					}
					clock.Advance(q.Expires.Sub(clock.Now()) - time.Millisecond)
					if err := env.Engine.SweepNow(ctx); err != nil {
						t.Fatal(err)
					}
					if got := getTask(t, ctx, c, task.ID); got.Status.State != a2a.TaskStateInputRequired {
						t.Fatalf("a millisecond before its expiry: state %v (%q), want input-required", got.Status.State, statusText(got))
					}
					res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(task.ID, userData(map[string]any{"questionId": q.ID, "name": "Ada"}))})
					if err != nil {
						t.Fatalf("answer a millisecond before the expiry: %v", err)
					}
					if got := res.(*a2a.Task); got.Status.State != a2a.TaskStateCompleted {
						t.Fatalf("answer a millisecond before the expiry: state %v (%q), want completed", got.Status.State, statusText(got))
					}
				})
			})
		}
	}
}

// TestAnAnswerAtTheExpiryGetsOneReply: an answer that comes at the instant
// its question expires gets the same reply whether a sweep acted on the
// expiry first or the answer found it, on every binding: the refusal of an
// ended task for an answer that names no question, the task as it stands
// for one that names the expired question (it did not get the refusal on
// one path and the task on the other).
func TestAnAnswerAtTheExpiryGetsOneReply(t *testing.T) {
	clock := apitest.NewFakeClock(time.Date(2026, 11, 29, 9, 0, 0, int(400*time.Millisecond), time.UTC))
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Now, c.QuestionExpiry, c.DisableSweeper = clock.Now, time.Minute, true
	}})
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		ctx := testCtx(t)
		c := env.Client(t, "script", tr)
		for _, named := range []bool{false, true} {
			// Two tasks asked at one instant expire at one instant: the
			// first is answered before any sweep, the second after one.
			var tasks [2]*a2a.Task
			var qs [2]*question.Question
			for i := range tasks {
				tasks[i] = sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
				qs[i], _, _ = question.FromMessage(tasks[i].Status.Message)
			}
			clock.Advance(qs[0].Expires.Sub(clock.Now()))
			var replies [2]string
			for i := range tasks {
				if i == 1 {
					if err := env.Engine.SweepNow(ctx); err != nil {
						t.Fatal(err)
					}
				}
				data := map[string]any{"name": "Ada"}
				if named {
					data["questionId"] = qs[i].ID
				}
				res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(tasks[i].ID, userData(data))})
				reply := ""
				if err != nil {
					reply = "error: " + err.Error()
				} else {
					got := res.(*a2a.Task)
					reply = fmt.Sprintf("task %s: %s", got.Status.State, statusText(got))
				}
				replies[i] = strings.NewReplacer(string(tasks[i].ID), "TASK", qs[i].ID, "QUESTION").Replace(reply)
			}
			if replies[0] != replies[1] {
				t.Errorf("answer (naming the question: %v) at the expiry:\n  before a sweep: %s\n  after a sweep:  %s\nwant one reply", named, replies[0], replies[1])
			}
			if !strings.Contains(replies[0], "expired") {
				t.Errorf("answer (naming the question: %v) at the expiry: %s; want it to say the question expired", named, replies[0])
			}
		}
	})
}
