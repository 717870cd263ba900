package cli_test

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/cli"
)

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Main(args, &out, &errb)
	return out.String(), errb.String(), code
}

var (
	taskLine     = regexp.MustCompile(`(?m)^task:\s+(\S+)$`)
	questionLine = regexp.MustCompile(`(?m)^question: (\S+)$`)
)

func TestSendWalksTheExpenseQuestionToCompletion(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")

	out, stderr, code := run(t, "send", url, "File my taxi receipt from Tuesday, 42 euros")
	if code != 0 {
		t.Fatalf("send exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{
		"state:   TASK_STATE_INPUT_REQUIRED",
		"Which cost centre should this expense be charged to?",
		"options: CC-4410, CC-4420",
		"expires: ",
		"(in 24h0m0s)",
		"answer:  askpoint send --task ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first send output lacks %q:\n%s", want, out)
		}
	}
	task := taskLine.FindStringSubmatch(out)
	q := questionLine.FindStringSubmatch(out)
	if task == nil || q == nil {
		t.Fatalf("output names no task or question ID:\n%s", out)
	}

	out, stderr, code = run(t, "send", "--task", task[1], url, "engineering")
	if code != 0 {
		t.Fatalf("send (text answer) exit %d, stderr %s", code, stderr)
	}
	q2 := questionLine.FindStringSubmatch(out)
	if !strings.Contains(out, "TASK_STATE_INPUT_REQUIRED") || q2 == nil || q2[1] == q[1] ||
		!strings.Contains(out, "expected one of CC-4410, CC-4420") || !strings.Contains(out, "attempt: 2 of 3") {
		t.Fatalf("text answer output is not a re-ask with a new question ID and the options error:\n%s", out)
	}

	// Flags after the URL work too.
	out, stderr, code = run(t, "send", url, "--task", task[1], "--data", `{"questionId":"`+q2[1]+`","costCentre":"CC-4410"}`)
	if code != 0 {
		t.Fatalf("send (data answer) exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"state:   TASK_STATE_COMPLETED", "artifact: expense", `"costCentre":"CC-4410"`, `"expenseId":"EXP-`} {
		if !strings.Contains(out, want) {
			t.Errorf("final output lacks %q:\n%s", want, out)
		}
	}
}

func TestSendStreamPrintsEachEvent(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	out, stderr, code := run(t, "send", "--stream", "--transport", "HTTP+JSON", env.AgentURL("script"), "progress")
	if code != 0 {
		t.Fatalf("send --stream exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"working on it", "artifact: partial", "almost there", "TASK_STATE_COMPLETED"} {
		if !strings.Contains(out, want) {
			t.Errorf("stream output lacks %q:\n%s", want, out)
		}
	}
}

func TestSendReportsProtocolErrorsAndExitsNonZero(t *testing.T) {
	t.Parallel()
	env := apitest.Start(t, apitest.Options{Quiet: true})
	_, stderr, code := run(t, "send", "--task", "no-such-task", env.AgentURL("expense"), "hello")
	if code != 1 || !strings.Contains(stderr, "no-such-task") {
		t.Errorf("send to unknown task: exit %d, stderr %q; want 1 and the task named", code, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args     []string
		code     int
		mentions string
	}{
		{nil, 2, "Usage"},
		{[]string{"explode"}, 2, `unknown command "explode"`},
		{[]string{"send"}, 2, "Usage: askpoint send"},
		{[]string{"send", "http://127.0.0.1:1/x"}, 2, "nothing to send"},
		{[]string{"send", "--data", "[1]", "http://127.0.0.1:1/x"}, 2, "--data is not a JSON object: it is an array"},
		{[]string{"send", "--data", `{"a":1`, "http://127.0.0.1:1/x"}, 2, "--data is not JSON: unexpected end of JSON input"},
		{[]string{"serve", "--streams", "sideways"}, 2, "use close or open"},
		{[]string{"serve", "--log-format", "xml"}, 2, `--log-format "xml": use text or json`},
		{[]string{"serve", "--addr", "127.0.0.1:8420", "--metrics-addr", "127.0.0.1:8420"}, 2, "is the A2A address"},
		{[]string{"stats"}, 2, "give the server's metrics URL"},
		{[]string{"stats", "ftp://x"}, 2, "is not an http(s) URL"},
		{[]string{"stats", "--db", "x.db", "http://127.0.0.1:1/metrics"}, 2, "not both"},
		{[]string{"stats", "--db", "x.db", "extra", "more"}, 2, `unexpected argument "more"`},
		{[]string{"serve", "--addr", "0.0.0.0:0"}, 2, "anonymous callers are served on loopback only"},
		{[]string{"serve", "--token", "alice"}, 2, "want PRINCIPAL=TOKEN"},
		{[]string{"serve", "--token", "alice=a-long-enough-token", "--token", "bob=a-long-enough-token"}, 2, "share a token"},
	} {
		_, stderr, code := run(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.mentions) {
			t.Errorf("askpoint %v: exit %d, stderr %q; want %d mentioning %q", tt.args, code, stderr, tt.code, tt.mentions)
		}
		if strings.Contains(stderr, "Go value") || strings.Contains(stderr, "interface {}") {
			t.Errorf("askpoint %v: stderr names Go's types: %q", tt.args, stderr)
		}
	}
}
