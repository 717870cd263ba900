package servertest_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// extensionText is the question extension's specification.
const extensionText = "../../docs/extensions/question-v1.md"

// TestTheExtensionTextSaysWhatAnAnswerGets runs each row of the
// extension text's table "What an answer gets" on every binding: the
// reply the row names, and the rule the text gives callers to tell that
// an answer was not taken (the task's history holds the answer's messageId
// if and only if it was). The text promised -32602 for an answer naming a
// closed question and -32004 for one after the expiry, while the server
// answered the task as it stood (issue 30, item 12); each row is looked up
// in the text as written, so the two cannot part again unnoticed.
func TestTheExtensionTextSaysWhatAnAnswerGets(t *testing.T) {
	doc, err := os.ReadFile(extensionText)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]bool{}
	env := apitest.Start(t, apitest.Options{Quiet: true})
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		ctx := testCtx(t)
		c := env.Client(t, "script", tr)
		// reply sends m to the task and says what came back: the task
		// with whether m is in its history (taken), or the error.
		type reply struct {
			task  *a2a.Task
			taken bool
			err   error
		}
		send := func(id a2a.TaskID, m *a2a.Message) reply {
			t.Helper()
			res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: followUp(id, m)})
			if err != nil {
				return reply{err: err}
			}
			got := getTask(t, ctx, c, res.(*a2a.Task).ID)
			return reply{task: got, taken: inHistory(got, m.ID)}
		}
		ask := func(command string) (*a2a.Task, *question.Question) {
			t.Helper()
			task := sendState(t, ctx, c, userText(command), a2a.TaskStateInputRequired)
			q, _, err := question.FromMessage(task.Status.Message)
			if err != nil || q == nil {
				t.Fatalf("%s: no question (%v)", command, err)
			}
			return task, q
		}
		answer := func(fields map[string]any) *a2a.Message { return userData(fields) }
		check := func(row string, r reply, ok bool, taken bool, what string) {
			t.Helper()
			rows[row] = true
			if !ok {
				t.Errorf("%s: got task %v / error %v; want %s", row, state(r.task), r.err, what)
			} else if r.err == nil && r.taken != taken {
				t.Errorf("%s: the answer's messageId in the history: %v, want %v (taken)", row, r.taken, taken)
			}
		}

		task, q := ask("ask")
		valid := answer(map[string]any{"questionId": q.ID, "name": "Ada"})
		r := send(task.ID, valid)
		check("| names the open question (or none) and is valid | the task, resumed with it | yes |",
			r, r.err == nil && r.task.Status.State == a2a.TaskStateCompleted, true, "the task completed")
		again := *valid
		r = send(task.ID, &again)
		check("| the same message again (same `messageId` and content) | the task as it stands | once, the first time |",
			r, r.err == nil && r.task.Status.State == a2a.TaskStateCompleted && countInHistory(r.task, valid.ID) == 1, true, "the task as it stood, the answer in it once")
		r = send(task.ID, answer(map[string]any{"questionId": q.ID, "name": "Grace"}))
		check("| names a question this task asked that is closed now | the task as it stands | no |",
			r, r.err == nil && r.task.Status.State == a2a.TaskStateCompleted, false, "the finished task as it stood")
		r = send(task.ID, userText("Grace"))
		check("| names no question, or one the task never asked, after the task ended | UnsupportedOperation (`-32004`) saying how it ended (`… is failed (No answer in time: question q-… expired at …)`) | no |",
			r, isErr(r.err, a2a.ErrUnsupportedOperation, "is completed"), false, "-32004 saying the task is completed")

		task, q = ask("ask")
		r = send(task.ID, answer(map[string]any{"questionId": q.ID, "name": ""}))
		reasked, _, _ := question.FromMessage(statusMessage(r.task))
		check("| names the open question (or none) and is invalid | the task, re-asked: a new `questionId`, `attempt` one higher, `errors` | yes: kept, and answered by the re-ask (not given to the agent) |",
			r, r.err == nil && r.task.Status.State == a2a.TaskStateInputRequired && reasked != nil && reasked.ID != q.ID && reasked.Attempt == 2 && len(reasked.Errors) > 0, true, "a re-ask")
		r = send(task.ID, answer(map[string]any{"questionId": q.ID, "name": "Ada"}))
		check("| names a question this task asked that is closed now | the task as it stands | no |",
			r, r.err == nil && r.task.Status.State == a2a.TaskStateInputRequired && openQuestion(r.task) == reasked.ID, false, "the task as it stood, asking the re-ask")
		for _, id := range []any{"q-made-up", 5} {
			r = send(task.ID, answer(map[string]any{"questionId": id, "name": "Ada"}))
			check("| names a question this task never asked, or a `questionId` that is not a string, while a question is open | InvalidParams (`-32602`) naming the open question | no |",
				r, isErr(r.err, a2a.ErrInvalidParams, reasked.ID), false, "-32602 naming the open question")
		}
		r = send(task.ID, answer(map[string]any{"questionId": reasked.ID, "name": strings.Repeat("x", 70<<10)}))
		check("| larger than the limit (64 KiB), or nested deeper than 32 levels | InvalidParams (`-32602`) saying so | no |",
			r, isErr(r.err, a2a.ErrInvalidParams, "may be at most 65536 bytes"), false, "-32602 naming the limit")

		key := apitest.UniqueKey(t)
		busy := sendTask(t, ctx, c, &a2a.SendMessageRequest{Message: userText("block " + key), Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
		r = send(busy.ID, userText("Ada"))
		apitest.Release(key)
		check("| any other message while the task works on a step or waits for another agent | UnsupportedOperation (`-32004`): send it again when the task asks | no |",
			r, isErr(r.err, a2a.ErrUnsupportedOperation, "Send it again when the task asks"), false, "-32004 asking to send it again")
		waitState(t, ctx, c, busy.ID, a2a.TaskStateCompleted)
	})
	for row := range rows {
		if !strings.Contains(string(doc), row+"\n") {
			t.Errorf("%s has no row\n  %s\nwhich is what the server does", extensionText, row)
		}
	}
	for _, promise := range []string{"is rejected with JSON-RPC error InvalidParams", "An answer that arrives after `expires` is refused"} {
		if strings.Contains(string(doc), promise) {
			t.Errorf("%s still says %q, which the server does not do", extensionText, promise)
		}
	}
}

func inHistory(t *a2a.Task, messageID string) bool { return countInHistory(t, messageID) > 0 }

func countInHistory(t *a2a.Task, messageID string) int {
	n := 0
	for _, m := range t.History {
		if m.ID == messageID && m.Role == a2a.MessageRoleUser {
			n++
		}
	}
	return n
}

func isErr(err, kind error, says string) bool {
	return err != nil && errors.Is(err, kind) && strings.Contains(err.Error(), says)
}

func state(t *a2a.Task) string {
	if t == nil {
		return "none"
	}
	return string(t.Status.State) + " (" + messageText(t.Status.Message) + ")"
}

func statusMessage(t *a2a.Task) *a2a.Message {
	if t == nil {
		return nil
	}
	return t.Status.Message
}

func openQuestion(t *a2a.Task) string {
	q, _, _ := question.FromMessage(statusMessage(t))
	if q == nil {
		return ""
	}
	return q.ID
}
