//go:build unix

package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
)

var listeningLine = regexp.MustCompile(`^listening for push notifications on (http://\S+/) `)

// listener runs "askpoint inbox --listen" and hands back its URL and a
// reader of its output lines.
type listener struct {
	url   string
	lines chan string
	cmd   *exec.Cmd
	done  chan error
}

func startListener(t *testing.T, bin string, args ...string) *listener {
	t.Helper()
	return startListening(t, bin, listeningLine, append([]string{"inbox", "--listen", "127.0.0.1:0"}, args...)...)
}

// startListening runs the askpoint command args, whose first line of
// output must match first; its first group is the listener's URL.
func startListening(t *testing.T, bin string, first *regexp.Regexp, args ...string) *listener {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &listener{lines: make(chan string, 16), cmd: cmd, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l.lines <- sc.Text()
		}
		close(l.lines)
		l.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	})
	line := l.next(t)
	m := first.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q does not say where it listens (stderr %s)", line, stderr.String())
	}
	l.url = m[1]
	return l
}

func (l *listener) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-l.lines:
		if !ok {
			t.Fatal("the listener exited")
		}
		return line
	case <-time.After(30 * time.Second):
		t.Fatal("the listener printed nothing within 30s")
	}
	return ""
}

func push(t *testing.T, target, token string, ev a2a.Event) int {
	t.Helper()
	body, err := json.Marshal(a2a.StreamResponse{Event: ev})
	if err != nil {
		t.Fatal(err)
	}
	return apitest.PostNotification(t, t.Context(), target, token, body)
}

func TestInboxListenLearnsOfQuestionsFromPushNotifications(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	agentURL := env.AgentURL("expense")
	inboxPath := filepath.Join(t.TempDir(), "inbox.db")
	const token = "push-token-0123456789"
	l := startListener(t, bin, "--inbox", inboxPath, "--token", token, "--agent", agentURL)

	// A task pauses on the server (sent by some other client); its state
	// arrives as a push notification.
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(taxiReceipt))})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	target := l.url + "?agent=" + url.QueryEscape(agentURL)
	if code := push(t, target, "wrong", task); code != http.StatusUnauthorized {
		t.Errorf("push with a wrong token: %d, want 401", code)
	}
	if code := push(t, target, token, task); code != http.StatusNoContent {
		t.Fatalf("push: %d, want 204", code)
	}
	line := l.next(t)
	if !strings.HasPrefix(line, "new question: item 1 from "+agentURL+": Which cost centre") {
		t.Errorf("listener said %q; want the new question", line)
	}

	out, _, code := exe(t, bin, "", "inbox", "--inbox", inboxPath)
	if code != 0 {
		t.Fatalf("askpoint inbox: exit %d", code)
	}
	mustContain(t, "askpoint inbox", out, agentURL, "Which cost centre", "options: 1) CC-4410  2) CC-4420")

	// The pushed question is answerable like any other.
	out, stderr, code := exe(t, bin, "1\n", "answer", "1", "--inbox", inboxPath)
	if code != 0 {
		t.Fatalf("askpoint answer: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	mustContain(t, "askpoint answer", out, "state:   TASK_STATE_COMPLETED", `"costCentre":"CC-4410"`)

	// A second paused task, then word that it was canceled elsewhere: its
	// item closes.
	res, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(taxiReceipt))})
	if err != nil {
		t.Fatal(err)
	}
	second := res.(*a2a.Task)
	push(t, target, token, &a2a.TaskStatusUpdateEvent{TaskID: second.ID, ContextID: second.ContextID, Status: second.Status})
	if line := l.next(t); !strings.HasPrefix(line, "new question: item 2 ") {
		t.Errorf("listener said %q; want item 2", line)
	}
	// (The listener reads the task from its agent before it changes an
	// item, so the task is really canceled first.)
	if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: second.ID}); err != nil {
		t.Fatal(err)
	}
	push(t, l.url, token, &a2a.TaskStatusUpdateEvent{TaskID: second.ID, ContextID: second.ContextID, Status: a2a.TaskStatus{State: a2a.TaskStateCanceled}})
	out, _, _ = exe(t, bin, "", "inbox", "--inbox", inboxPath, "--all")
	mustContain(t, "askpoint inbox --all", out, "answered by person (erin)", "closed: the task is now canceled")

	// An interrupt stops the listener cleanly.
	if err := l.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-l.done:
		if err != nil {
			t.Errorf("listener exited with %v after SIGINT, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the listener did not stop after SIGINT")
	}
}
