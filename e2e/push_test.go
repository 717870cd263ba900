package e2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// webhook is a push receiver on 127.0.0.1; of reads, per task, what it
// accepted: a state ("input_required", "completed"), or "reminder".
type webhook struct{ *apitest.Webhook }

func newWebhook(t *testing.T) *webhook { return &webhook{apitest.NewWebhook(t)} }

func (w *webhook) setDown(v bool) { w.SetFailing(v) }

// of returns what the receiver accepted about task id, the last question
// it was told, and how many requests it failed. A notification without the
// configured token counts as not accepted.
func (w *webhook) of(id a2a.TaskID) ([]string, *question.Question, int) {
	var whats []string
	var q *question.Question
	for _, n := range w.For(id) {
		if n.Token != "e2e-token" {
			continue
		}
		what := strings.ToLower(strings.TrimPrefix(string(n.Status.State), "TASK_STATE_"))
		if n.Reminder != nil {
			what = "reminder"
		}
		if got, ok, _ := question.FromMessage(n.Status.Message); ok {
			q = got
		}
		whats = append(whats, what)
	}
	return whats, q, w.Failed()
}

func (w *webhook) waitFor(t *testing.T, id a2a.TaskID, what string, cond func([]string, int) bool) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, _, failed := w.of(id)
		if cond(got, failed) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook: %s not within 20s; task %s got %v", what, id, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// TestWebhookHearsQuestionReminderAndEndAcrossOutageAndRestart runs the
// real binary with a real webhook on 127.0.0.1: the receiver hears, in
// order, the question, a reminder and the completion; then, with the
// receiver down and the server SIGKILLed and restarted meanwhile, the
// notifications it missed arrive once it is back.
func TestWebhookHearsQuestionReminderAndEndAcrossOutageAndRestart(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "askpoint.db")
	flags := []string{"--question-expiry", "8s", "--allow-private-webhooks", "--push-retry-min", "100ms", "--push-retry-max", "400ms", "--poll", "100ms"}
	srv, err := startServer(t, bin, "askpoint", db, flags...)
	if err != nil {
		t.Fatal(err)
	}
	hook := newWebhook(t)
	ctx := t.Context()
	c := crashClient(ctx, t, srv.url)
	push := &a2a.PushConfig{URL: hook.URL(), Token: "e2e-token"}

	// 1. Question, reminder (half-way: 4s), completion.
	res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")),
		Config:  &a2a.SendMessageConfig{PushConfig: push},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	first := res.(*a2a.Task)
	hook.waitFor(t, first.ID, "a reminder", func(got []string, _ int) bool { return last(got) == "reminder" })
	_, q, _ := hook.of(first.ID)
	if q == nil || q.ID == "" {
		t.Fatalf("the notifications carried no question")
	}
	crashSendOK(ctx, t, c, crashAnswer(string(first.ID), q.ID), false)
	got := hook.waitFor(t, first.ID, "the completion", func(got []string, _ int) bool { return last(got) == "completed" })
	if strings.Join(got, ",") != "input_required,reminder,completed" {
		t.Fatalf("notifications for the first task = %v, want input_required, reminder, completed", got)
	}

	// 2. Receiver down; the question is asked; the server is killed and
	// restarted while the receiver is still down; then it comes back.
	hook.setDown(true)
	res, err = c.SendMessage(ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my hotel bill, 180 euros, 2026-11-20")),
		Config:  &a2a.SendMessageConfig{PushConfig: push},
	})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	second := res.(*a2a.Task)
	hook.waitFor(t, second.ID, "failed attempts", func(_ []string, failed int) bool { return failed >= 2 })
	srv.sigkill(t)
	srv, err = startServer(t, bin, "askpoint", db, flags...)
	if err != nil {
		t.Fatal(err)
	}
	c = crashClient(ctx, t, srv.url)
	hook.setDown(false)
	got = hook.waitFor(t, second.ID, "the question after the outage", func(got []string, _ int) bool { return len(got) >= 1 })
	if got[0] != "input_required" {
		t.Fatalf("first notification after the outage = %v, want input_required", got)
	}
	_, q, _ = hook.of(second.ID)
	crashSendOK(ctx, t, c, crashAnswer(string(second.ID), q.ID), false)
	got = hook.waitFor(t, second.ID, "the completion", func(got []string, _ int) bool { return last(got) == "completed" })
	for i, w := range got {
		if w != "input_required" && w != "reminder" && !(w == "completed" && i == len(got)-1) {
			t.Fatalf("notifications for the second task = %v, want the question (and reminders) then completed", got)
		}
	}
}
