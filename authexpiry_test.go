package askpoint_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
)

// The pause of RequireAuth has an end, as a question's has: these tests
// run a server on a clock of their own, on SQLite and on PostgreSQL, and
// move the clock past the pause's expiry.

// authStart is when the tests' clocks start: at a fraction of a second,
// so that rounding an expiry shows.
var authStart = time.Date(2030, 1, 1, 9, 0, 0, 300_000_000, time.UTC)

const signInText = "Sign in to the calendar at https://calendar.example/authorize, then tell me."

// onEachStore runs f on SQLite (pg "") and on PostgreSQL (pg a schema of
// its own).
func onEachStore(t *testing.T, f func(t *testing.T, pg string)) {
	t.Run("sqlite", func(t *testing.T) { f(t, "") })
	t.Run("postgres", func(t *testing.T) { f(t, dbtest.Schema(t)) })
}

// signIn is an agent that pauses for a credential with the outcome it is
// given, holding a seat, and completes saying which holds it got back;
// releases hears the holds it releases.
func signIn(outcome func(call *askpoint.Call) askpoint.Outcome, releases chan<- string) askpoint.AgentSpec {
	return askpoint.AgentSpec{Name: "signin", Card: a2a.AgentCard{Name: "Sign-in", Description: "Needs a calendar sign-in."},
		Agent: askpoint.Steps[struct{}, struct{}]{
			OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) { return outcome(call), nil },
			OnAuth: func(ctx context.Context, call *askpoint.Call, _ struct{}, _ *askpoint.AuthArrival) (askpoint.Outcome, error) {
				var held []string
				for _, h := range call.Holds {
					held = append(held, h.Name)
				}
				return askpoint.Complete(&a2a.Artifact{ID: a2a.NewArtifactID(),
					Parts: a2a.ContentParts{a2a.NewTextPart("signed in, holding " + strings.Join(held, ","))}}), nil
			},
			OnRelease: func(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
				releases <- h.Name
				return nil
			},
		}}
}

// authEnv is one node serving signIn on a clock of the test's, its sweeper
// run only by the test (SweepNow), and a push receiver.
type authEnv struct {
	*apitest.Env
	clock    *apitest.FakeClock
	hook     *apitest.Webhook
	c        *a2aclient.Client
	releases chan string
}

func startAuth(t *testing.T, pg string, outcome func(call *askpoint.Call) askpoint.Outcome, adjust ...func(*askpoint.Config)) *authEnv {
	t.Helper()
	return startAuthNode(t, pg, apitest.NewFakeClock(authStart), make(chan string, 8), outcome, adjust...)
}

// startAuthNode is startAuth on a clock and a release channel it is given
// (one deployment's nodes share them).
func startAuthNode(t *testing.T, pg string, clock *apitest.FakeClock, releases chan string, outcome func(call *askpoint.Call) askpoint.Outcome, adjust ...func(*askpoint.Config)) *authEnv {
	t.Helper()
	e := &authEnv{clock: clock, hook: apitest.NewWebhook(t), releases: releases}
	e.Env = apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: pg,
		Config: func(c *askpoint.Config) {
			c.Now = e.clock.Now
			c.PollInterval = 20 * time.Millisecond
			c.AllowPrivateWebhooks = true
			c.DisableSweeper = true // the test sweeps
			for _, a := range adjust {
				a(c)
			}
		},
		Agents: []askpoint.AgentSpec{signIn(outcome, e.releases)},
	})
	e.c = e.Client(t, "signin", a2a.TransportProtocolJSONRPC)
	return e
}

// pause starts a task and checks it waits for the credential.
func (e *authEnv) pause(t *testing.T) *a2a.Task {
	t.Helper()
	task := apitest.SendTask(t, t.Context(), e.c, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("book my meeting")),
		Config:  &a2a.SendMessageConfig{PushConfig: &a2a.PushConfig{URL: e.hook.URL()}},
	}, "the request")
	if task.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("state %s (%s), want auth-required", task.Status.State, apitest.Text(task.Status.Message))
	}
	return task
}

// sweepAt moves the clock to authStart+d and sweeps, once the server has
// settled what else came due (a hold's deadline at the expiry: a release
// racing the sweep would make it leave the task to its next round).
func (e *authEnv) sweepAt(t *testing.T, d time.Duration) {
	t.Helper()
	if now := e.clock.Now(); authStart.Add(d).Before(now) {
		t.Fatalf("sweepAt(%v): the clock is already at %v", d, now.Sub(authStart))
	}
	e.idle(t)
	e.clock.Advance(authStart.Add(d).Sub(e.clock.Now()))
	e.idle(t)
	if err := e.Engine.SweepNow(t.Context()); err != nil {
		t.Fatalf("SweepNow: %v", err)
	}
}

// idle waits, 10 s at most, until the server has nothing in hand.
func (e *authEnv) idle(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := e.Engine.Idle(ctx); err != nil {
		t.Fatalf("the server did not settle: %v", err)
	}
}

// waitState waits, 10 s at most, until task id is in state want.
func (e *authEnv) waitState(t *testing.T, id a2a.TaskID, want a2a.TaskState) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	return apitest.WaitState(t, ctx, e.c, &a2a.GetTaskRequest{ID: id}, want, func(t *a2a.Task) string { return apitest.Text(t.Status.Message) })
}

func (e *authEnv) get(t *testing.T, id a2a.TaskID) *a2a.Task {
	t.Helper()
	return apitest.GetTask(t, t.Context(), e.c, &a2a.GetTaskRequest{ID: id})
}

// pushed waits until the receiver has a notification of id for which ok
// holds.
func (e *authEnv) pushed(t *testing.T, id a2a.TaskID, what string, ok func(apitest.Notification) bool) apitest.Notification {
	t.Helper()
	var got apitest.Notification
	apitest.Eventually(t, what, 10*time.Second, func() bool {
		for _, n := range e.hook.For(id) {
			if ok(n) {
				got = n
				return true
			}
		}
		return false
	})
	return got
}

// released waits for the release of the hold named name.
func (e *authEnv) released(t *testing.T, name string) {
	t.Helper()
	select {
	case got := <-e.releases:
		if got != name {
			t.Fatalf("released %q, want %q", got, name)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("hold %q was not released", name)
	}
}

func heldSeat(call *askpoint.Call) askpoint.Outcome {
	return askpoint.RequireAuth(signInText, struct{}{}).Hold(askpoint.Hold{Name: "seat 14C"})
}

// An expiry the agent sets ends the pause at that time, kept to the
// millisecond and never earlier: the task fails saying what credential it
// waited for and when the wait expired, the seat it held is released, and
// push receivers hear of the end.
func TestRequireAuthEndsFailedAtTheExpiryTheAgentSet(t *testing.T) {
	onEachStore(t, func(t *testing.T, pg string) {
		// 10 min 1.5 ms after the start: stored as 10 min 2 ms, not 1 ms.
		asked := authStart.Add(10*time.Minute + 1500*time.Microsecond)
		env := startAuth(t, pg, func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(asked)
		}, func(c *askpoint.Config) { c.Reminders = []float64{} })
		task := env.pause(t)

		env.sweepAt(t, 10*time.Minute+time.Millisecond)
		if got := env.get(t, task.ID); got.Status.State != a2a.TaskStateAuthRequired {
			t.Fatalf("0.5 ms before the expiry asked: %s (%s), want auth-required", got.Status.State, apitest.Text(got.Status.Message))
		}
		env.sweepAt(t, 10*time.Minute+2*time.Millisecond)
		got := env.get(t, task.ID)
		want := "No credential in time: the request for it expired at 2030-01-01T09:10:00.302Z. It asked: " + signInText
		if got.Status.State != a2a.TaskStateFailed || apitest.Text(got.Status.Message) != want {
			t.Fatalf("at the expiry: %s (%q), want failed (%q)", got.Status.State, apitest.Text(got.Status.Message), want)
		}
		env.released(t, "seat 14C")
		env.pushed(t, task.ID, "the failure pushed", func(n apitest.Notification) bool {
			return n.Status.State == a2a.TaskStateFailed && apitest.Text(n.Status.Message) == want
		})
	})
}

// Without ExpiresAt the server's question expiry applies.
func TestRequireAuthWithoutAnExpiryEndsAtTheServersQuestionExpiry(t *testing.T) {
	onEachStore(t, func(t *testing.T, pg string) {
		env := startAuth(t, pg, heldSeat, func(c *askpoint.Config) { c.QuestionExpiry = time.Hour })
		task := env.pause(t)
		env.sweepAt(t, time.Hour-time.Millisecond)
		if got := env.get(t, task.ID); got.Status.State != a2a.TaskStateAuthRequired {
			t.Fatalf("a millisecond before the server's expiry: %s (%s), want auth-required", got.Status.State, apitest.Text(got.Status.Message))
		}
		env.sweepAt(t, time.Hour)
		got := env.get(t, task.ID)
		if got.Status.State != a2a.TaskStateFailed || !strings.Contains(apitest.Text(got.Status.Message), "expired at 2030-01-01T10:00:00.3Z") {
			t.Fatalf("at the server's expiry: %s (%q), want failed, expired at 10:00:00.3", got.Status.State, apitest.Text(got.Status.Message))
		}
		env.released(t, "seat 14C")
	})
}

// Reminders go to push receivers at Config.Reminders of the way to the
// expiry, as for a question: the status (auth-required, what is needed)
// unchanged, marked as reminder n of m.
func TestRequireAuthRemindsPushReceivers(t *testing.T) {
	onEachStore(t, func(t *testing.T, pg string) {
		env := startAuth(t, pg, func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(authStart.Add(10 * time.Minute))
		}, func(c *askpoint.Config) { c.Reminders = []float64{0.5, 0.9} })
		task := env.pause(t)
		for i, at := range []time.Duration{5 * time.Minute, 9 * time.Minute} {
			env.sweepAt(t, at)
			n := env.pushed(t, task.ID, fmt.Sprintf("reminder %d", i+1), func(n apitest.Notification) bool {
				return n.Reminder != nil && n.Reminder["reminder"] == float64(i+1)
			})
			if n.Reminder["of"] != float64(2) || n.Reminder["expires"] != "2030-01-01T09:10:00.3Z" ||
				n.Status.State != a2a.TaskStateAuthRequired || apitest.Text(n.Status.Message) != signInText {
				t.Fatalf("reminder %d = %v, status %s (%q); want of 2, expires 09:10:00.3, auth-required with what is needed",
					i+1, n.Reminder, n.Status.State, apitest.Text(n.Status.Message))
			}
		}
		if got := env.get(t, task.ID); got.Status.State != a2a.TaskStateAuthRequired {
			t.Fatalf("after the reminders: %s, want auth-required", got.Status.State)
		}
	})
}

// OnExpiry(ExpireCancel) ends the task canceled at the expiry.
func TestRequireAuthOnExpiryCancelEndsCanceled(t *testing.T) {
	onEachStore(t, func(t *testing.T, pg string) {
		env := startAuth(t, pg, func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(authStart.Add(time.Minute)).OnExpiry(askpoint.ExpireCancel)
		})
		task := env.pause(t)
		env.sweepAt(t, time.Minute)
		got := env.get(t, task.ID)
		want := "No credential in time: the request for it expired at 2030-01-01T09:01:00.3Z, so the task was canceled. It asked: " + signInText
		if got.Status.State != a2a.TaskStateCanceled || apitest.Text(got.Status.Message) != want {
			t.Fatalf("at the expiry: %s (%q), want canceled (%q)", got.Status.State, apitest.Text(got.Status.Message), want)
		}
		env.released(t, "seat 14C")
		env.pushed(t, task.ID, "the cancel pushed", func(n apitest.Notification) bool { return n.Status.State == a2a.TaskStateCanceled })
	})
}

// A credential a millisecond before the expiry resumes the task, which
// gets its hold back, by a Go call or by a follow-up message.
func TestACredentialBeforeTheExpiryResumesTheTask(t *testing.T) {
	onEachStore(t, func(t *testing.T, pg string) {
		env := startAuth(t, pg, func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(authStart.Add(time.Minute))
		})
		byCall, byMessage := env.pause(t), env.pause(t)
		env.sweepAt(t, time.Minute-time.Millisecond)
		if err := env.Server.CredentialArrived(t.Context(), string(byCall.ID), "oauth2"); err != nil {
			t.Fatalf("CredentialArrived before the expiry: %v", err)
		}
		got := env.waitState(t, byCall.ID, a2a.TaskStateCompleted)
		if txt := apitest.Text(&a2a.Message{Parts: got.Artifacts[0].Parts}); txt != "signed in, holding seat 14C" {
			t.Errorf("artifact %q, want the step to get its hold back", txt)
		}
		res := apitest.SendTask(t, t.Context(), env.c, &a2a.SendMessageRequest{
			Message: a2a.NewMessageForTask(a2a.MessageRoleUser, byMessage, a2a.NewTextPart("done, I signed in"))}, "the follow-up")
		if res.Status.State != a2a.TaskStateCompleted {
			t.Errorf("after the follow-up: %s (%s), want completed", res.Status.State, apitest.Text(res.Status.Message))
		}
	})
}

// A credential that comes at or after the expiry gets the reply of a late
// answer (decision 0105): the ended task's refusal, which quotes its
// expiry, whether a sweep came first or not. The Go call and the
// follow-up message each get one reply either way.
func TestACredentialAfterTheExpiryGetsOneReply(t *testing.T) {
	onEachStore(t, func(t *testing.T, pg string) {
		env := startAuth(t, pg, func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(authStart.Add(time.Minute))
		})
		unswept, swept := env.pause(t), env.pause(t)
		env.clock.Advance(time.Minute) // at the expiry; no sweep yet
		late := func(task *a2a.Task) (byCall, byMessage string) {
			err := env.Server.CredentialArrived(t.Context(), string(task.ID), "oauth2")
			if err == nil {
				t.Fatalf("CredentialArrived at the expiry = nil, want a refusal")
			}
			_, merr := env.c.SendMessage(t.Context(), &a2a.SendMessageRequest{
				Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("done, I signed in"))})
			if merr == nil {
				t.Fatalf("a follow-up at the expiry was taken, want a refusal")
			}
			if got := env.get(t, task.ID); got.Status.State != a2a.TaskStateFailed {
				t.Fatalf("after a late credential: %s, want failed", got.Status.State)
			}
			r := strings.NewReplacer(string(task.ID), "TASK")
			return r.Replace(err.Error()), r.Replace(merr.Error())
		}
		callFirst, messageFirst := late(unswept)
		env.released(t, "seat 14C")
		env.sweepAt(t, time.Minute)
		callSwept, messageSwept := late(swept)
		env.released(t, "seat 14C")
		for _, reply := range []string{callFirst, messageFirst} {
			if !strings.Contains(reply, "No credential in time: the request for it expired at 2030-01-01T09:01:00.3Z") {
				t.Errorf("late reply %q does not quote the expiry", reply)
			}
		}
		if callFirst != callSwept {
			t.Errorf("CredentialArrived at the expiry: %q before a sweep, %q after; want one reply", callFirst, callSwept)
		}
		if messageFirst != messageSwept {
			t.Errorf("a follow-up at the expiry: %q before a sweep, %q after; want one reply", messageFirst, messageSwept)
		}
	})
}

// What a pause for a credential cannot be is refused: the task fails
// saying why, and the seat the step held is released.
func TestRequireAuthRefusesWhatACredentialCannotWaitWith(t *testing.T) {
	for _, c := range []struct {
		name    string
		outcome func(call *askpoint.Call) askpoint.Outcome
		want    string
	}{
		{"a default answer", func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).DefaultAnswer(map[string]any{"token": "x"})
		}, "The agent asked for a credential the runtime cannot wait for: a credential has no default answer"},
		{"an expiry that has passed", func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(authStart.Add(-time.Second))
		}, "The agent asked for a credential the runtime cannot wait for: its expiry 2030-01-01T08:59:59.3Z has passed"},
		{"no text", func(call *askpoint.Call) askpoint.Outcome {
			return askpoint.RequireAuth(" ", struct{}{}).Hold(askpoint.Hold{Name: "seat 14C"})
		}, "The agent asked for a credential the runtime cannot wait for: it does not say which credential it needs"},
		{"a hold past the expiry", func(call *askpoint.Call) askpoint.Outcome {
			return heldSeat(call).ExpiresAt(authStart.Add(time.Minute)).Hold(askpoint.Hold{Name: "table 3", Until: authStart.Add(time.Hour)})
		}, "after the request for a credential expires"},
		{"ExpiresAt on a question", func(call *askpoint.Call) askpoint.Outcome {
			return askpoint.Ask(question.Question{Text: "Which room?", Schema: []byte(`{"type":"object"}`)}, struct{}{}).
				Hold(askpoint.Hold{Name: "seat 14C"}).ExpiresAt(authStart.Add(time.Minute))
		}, "ExpiresAt is for RequireAuth; a question's expiry is its Expires field"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := startAuth(t, "", c.outcome)
			task := apitest.SendTask(t, t.Context(), env.c, &a2a.SendMessageRequest{
				Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("book my meeting"))}, "the request")
			if task.Status.State != a2a.TaskStateFailed || !strings.Contains(apitest.Text(task.Status.Message), c.want) {
				t.Fatalf("%s (%q), want failed saying %q", task.Status.State, apitest.Text(task.Status.Message), c.want)
			}
			env.released(t, "seat 14C")
		})
	}
}

// On several nodes of one PostgreSQL database, a node that did not pause
// the task sweeps it: the task fails at its expiry, once, its hold is
// released once, and the node that paused it refuses a late credential
// with the ended task's reply.
func TestRequireAuthExpiresOnAnyNode(t *testing.T) {
	pg := dbtest.Schema(t)
	paused := startAuth(t, pg, func(call *askpoint.Call) askpoint.Outcome {
		return heldSeat(call).ExpiresAt(authStart.Add(time.Minute))
	})
	other := startAuthNode(t, pg, paused.clock, paused.releases, heldSeat, func(c *askpoint.Config) {
		c.DisableSweeper = false // this node sweeps on its own
	})
	task := paused.pause(t)
	paused.clock.Advance(time.Minute)
	got := other.waitState(t, task.ID, a2a.TaskStateFailed)
	if !strings.Contains(apitest.Text(got.Status.Message), "No credential in time") {
		t.Fatalf("status %q, want the credential's expiry", apitest.Text(got.Status.Message))
	}
	paused.released(t, "seat 14C")
	paused.pushed(t, task.ID, "the failure pushed", func(n apitest.Notification) bool { return n.Status.State == a2a.TaskStateFailed })
	err := paused.Server.CredentialArrived(t.Context(), string(task.ID), "oauth2")
	if err == nil || !strings.Contains(err.Error(), "No credential in time") {
		t.Fatalf("CredentialArrived on the pausing node after the expiry = %v, want the ended task's reply", err)
	}
	paused.idle(t)
	other.idle(t)
	select {
	case name := <-paused.releases:
		t.Fatalf("hold %q released twice", name)
	default:
	}
	n := 0
	for _, p := range paused.hook.For(task.ID) {
		if p.Status.State == a2a.TaskStateFailed {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the failure pushed %d times, want once", n)
	}
}
