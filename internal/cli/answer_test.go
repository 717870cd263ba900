package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/apitest"
)

const taxiReceipt = "File my taxi receipt from Tuesday, 42 euros"

// buildAskpoint builds ./cmd/askpoint into the test's temporary directory.
func buildAskpoint(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(wd, "..", "..")
	bin := filepath.Join(t.TempDir(), "askpoint")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, "build", "-o", bin, "./cmd/askpoint")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/askpoint: %v\n%s", err, out)
	}
	return bin
}

// exe runs the built binary as its own process with stdin piped in and
// returns its output and exit code.
func exe(t *testing.T, bin, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "USER=erin")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errb.String(), 0
	case errors.As(err, &exit):
		return out.String(), errb.String(), exit.ExitCode()
	}
	t.Fatalf("askpoint %v: %v\nstdout:\n%s\nstderr:\n%s", args, err, out.String(), errb.String())
	return "", "", -1
}

func mustContain(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

var waitingLine = regexp.MustCompile(`(?m)^waiting: inbox item (\d+): `)

// deferExpense runs "askpoint ask" on the expense agent with no way to
// answer but the inbox, and returns the inbox item ID and task ID.
func deferExpense(t *testing.T, bin, url, inboxPath, text string) (item, task string) {
	t.Helper()
	out, _ := exeCode(t, 3, bin, "", "ask", url, text, "--inbox", inboxPath)
	m := waitingLine.FindStringSubmatch(out)
	tm := taskLine.FindStringSubmatch(out)
	if m == nil || tm == nil {
		t.Fatalf("askpoint ask names no inbox item or task:\n%s", out)
	}
	mustContain(t, "askpoint ask output", out, "answer:  askpoint answer "+m[1]+" --inbox "+inboxPath)
	return m[1], tm[1]
}

// exeCode runs the built binary as exe does and requires exit code want.
func exeCode(t *testing.T, want int, bin, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	stdout, stderr, code := exe(t, bin, stdin, args...)
	if code != want {
		t.Fatalf("askpoint %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
	}
	return stdout, stderr
}

// inboxed is an expense question that "askpoint ask" left in an inbox for
// a person.
type inboxed struct {
	bin   string       // the askpoint binary
	env   *apitest.Env // serving the expense agent
	url   string       // the expense agent's
	inbox string       // the inbox file
	item  string       // the question's inbox item ID
	task  string       // the question's task ID
}

// askIntoInbox builds askpoint, serves the expense agent and asks it text
// with no way to answer but a new inbox (deferExpense).
func askIntoInbox(t *testing.T, text string) inboxed {
	t.Helper()
	in := inboxed{bin: buildAskpoint(t), env: apitest.Start(t, apitest.Options{Quiet: true}), inbox: filepath.Join(t.TempDir(), "inbox.db")}
	in.url = in.env.AgentURL("expense")
	in.item, in.task = deferExpense(t, in.bin, in.url, in.inbox, text)
	return in
}

func TestAPersonAnswersThroughAskpointAnswerInASeparateProcess(t *testing.T) {
	t.Parallel()
	// First process: asks, finds nobody to answer, records the question
	// in the inbox and exits.
	in := askIntoInbox(t, taxiReceipt)
	c := in.env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(in.task)})
	if err != nil || task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("after askpoint ask exited the task is %v (%v); want input-required", task, err)
	}

	// The person looks at the inbox...
	out, _ := exeCode(t, 0, in.bin, "", "inbox", "--inbox", in.inbox)
	mustContain(t, "askpoint inbox", out, in.item+"  ", in.url, "Which cost centre should this expense be charged to?",
		"options: 1) CC-4410  2) CC-4420", "23h5", "askpoint answer ID --inbox "+in.inbox)

	// ...and answers in a second process: a number out of range is asked
	// again, then option 2.
	out, _ = exeCode(t, 0, in.bin, "7\n2\n", "answer", in.item, "--inbox", in.inbox)
	mustContain(t, "askpoint answer", out,
		"Which cost centre should this expense be charged to?", "Expires in 23h5",
		"  1) CC-4410\n  2) CC-4420\n", "Choose 1-2> ", "Cost centre: Choose one of: CC-4410, CC-4420, or type its number, 1 to 2.",
		"by person (erin): {\"costCentre\":\"CC-4420\"}",
		"state:   TASK_STATE_COMPLETED", "artifact: expense", `"costCentre":"CC-4420"`)

	task, err = c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(in.task)})
	if err != nil {
		t.Fatal(err)
	}
	var last *a2a.Message
	for _, m := range task.History {
		if m.Role == a2a.MessageRoleUser {
			last = m
		}
	}
	if task.Status.State != a2a.TaskStateCompleted || last.Role != a2a.MessageRoleUser ||
		last.Metadata[client.MetaAnsweredBy] != client.ByPerson || last.Metadata[client.MetaPerson] != "erin" {
		t.Errorf("task %s, last history entry %+v; want completed, answered by the person erin", task.Status.State, last)
	}

	out, _, _ = exe(t, in.bin, "", "inbox", "--inbox", in.inbox)
	mustContain(t, "askpoint inbox after the answer", out, "No open questions")
	_, stderr, code := exe(t, in.bin, "1\n", "answer", in.item, "--inbox", in.inbox)
	if code != 1 || !strings.Contains(stderr, "answered already (by person (erin))") {
		t.Errorf("answering again: exit %d, stderr %q; want 1 and who answered", code, stderr)
	}
}

func TestAnswerPromptsFieldsOneByOneAndChecksThemLocally(t *testing.T) {
	t.Parallel()
	// No amount and no date: the agent asks for both and the cost centre.
	in := askIntoInbox(t, "File my taxi receipt")

	// amount "abc" is not a number; -5 parses but the schema wants > 0;
	// "yesterday" fails the date pattern; currency is optional (left
	// empty). Then the two refused fields are asked again.
	stdin := "abc\n-5\nyesterday\nCC-4410\n\n42\n2026-11-24\n"
	out, _ := exeCode(t, 0, in.bin, stdin, "answer", in.item, "--inbox", in.inbox)
	mustContain(t, "askpoint answer", out,
		// The web inbox's words: caption, rules, description; no
		// regular expression.
		"Amount (a number, more than 0) — the amount on the receipt> ",
		"Amount: expected a number",
		"Date — the receipt's date, YYYY-MM-DD> ",
		// Enums are choices, as in the web inbox's form.
		"Options for Cost centre:\n  1) CC-4410\n  2) CC-4420\nChoose 1-2> ",
		"Options for Currency — defaults to EUR (optional: leave empty to skip):\n  1) EUR\n",
		"That answer would not be accepted:",
		"  - Amount: must be greater than 0",
		`  - Date: "yesterday" is not in the expected format (the receipt's date, YYYY-MM-DD)`,
		"state:   TASK_STATE_COMPLETED", `"amount":42`, `"date":"2026-11-24"`, `"costCentre":"CC-4410"`)
	// Only the refused fields were asked again.
	if strings.Contains(out, "^[0-9]") {
		t.Errorf("the prompts show a regular expression:\n%s", out)
	}
	if n := strings.Count(out, "Options for Cost centre"); n != 1 {
		t.Errorf("costCentre was prompted %d times, want once", n)
	}
	if n := strings.Count(out, "Amount (a number"); n != 3 { // abc, -5, then 42
		t.Errorf("amount was prompted %d times, want 3", n)
	}
}

func TestAnswerShowsAReAskWithItsErrorsAndPromptsAgain(t *testing.T) {
	t.Parallel()
	in := askIntoInbox(t, taxiReceipt)

	// The person types words the agent cannot map to an option; the agent
	// re-asks and the same process shows the re-ask and prompts again.
	out, _ := exeCode(t, 0, in.bin, "1\n", "answer", in.item, "--inbox", in.inbox, "--text", "engineering")
	mustContain(t, "askpoint answer", out,
		"Your previous answer was not accepted (attempt 2 of 3):",
		"  - Cost centre: Choose one of: CC-4410, CC-4420",
		"Choose 1-2> ",
		"by person (erin): engineering",
		"by person (erin): {\"costCentre\":\"CC-4410\"}",
		"state:   TASK_STATE_COMPLETED", `"costCentre":"CC-4410"`)
}

func TestAnswerDataIsCheckedBeforeItIsSent(t *testing.T) {
	t.Parallel()
	in := askIntoInbox(t, taxiReceipt)

	_, stderr := exeCode(t, 1, in.bin, "", "answer", in.item, "--inbox", in.inbox, "--data", `{"costCentre":"CC-9999"}`)
	mustContain(t, "stderr", stderr, "nothing was sent", "costCentre: expected one of CC-4410, CC-4420")
	c := in.env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: a2a.TaskID(in.task)})
	if err != nil {
		t.Fatal(err)
	}
	if len(task.History) != 2 || task.Status.State != a2a.TaskStateInputRequired {
		t.Errorf("the refused answer reached the agent: %d history entries, state %s", len(task.History), task.Status.State)
	}

	out, _ := exeCode(t, 0, in.bin, "", "answer", in.item, "--inbox", in.inbox, "--data", `{"costCentre":"CC-4410"}`)
	mustContain(t, "askpoint answer --data", out, "state:   TASK_STATE_COMPLETED", `"costCentre":"CC-4410"`)
}

func TestAnswerWithoutInputLeavesTheItemOpen(t *testing.T) {
	t.Parallel()
	in := askIntoInbox(t, taxiReceipt)
	_, stderr, code := exe(t, in.bin, "", "answer", in.item, "--inbox", in.inbox)
	if code != 3 || !strings.Contains(stderr, "no answer given; item "+in.item+" stays open") {
		t.Errorf("askpoint answer with no input: exit %d, stderr %q; want 3 and the item kept open", code, stderr)
	}
	out, _, _ := exe(t, in.bin, "", "inbox", "--inbox", in.inbox)
	mustContain(t, "askpoint inbox", out, "Which cost centre")
}

func TestAnswerDeclineEndsTheTaskRejected(t *testing.T) {
	t.Parallel()
	in := askIntoInbox(t, taxiReceipt)
	out, stderr := exeCode(t, 1, in.bin, "!decline not my receipt\n", "answer", in.item, "--inbox", in.inbox)
	mustContain(t, "stdout", out, "by person (erin): decline: not my receipt", "state:   TASK_STATE_REJECTED")
	mustContain(t, "stderr", stderr, "ended rejected", "not my receipt")
}

func TestAskAnswersByPolicyWithoutAPerson(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true})
	url := env.AgentURL("expense")
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(policy, []byte(`{"rules":[{"name":"default-cost-centre","when":{"field":"costCentre","caller":"alice"},"answer":"CC-4410"}],"limits":{"fields":["costCentre"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	inboxPath := filepath.Join(dir, "inbox.db")
	for _, stream := range []string{"--stream=false", "--stream"} {
		out, _ := exeCode(t, 0, bin, "", "ask", url, taxiReceipt, "--policy", policy, "--caller", "alice", "--inbox", inboxPath, stream)
		mustContain(t, "askpoint ask", out, "by policy (rule default-cost-centre): {\"costCentre\":\"CC-4410\"}",
			"state:   TASK_STATE_COMPLETED", `"costCentre":"CC-4410"`)
	}
	out, _, _ := exe(t, bin, "", "inbox", "--inbox", inboxPath, "--all")
	mustContain(t, "askpoint inbox --all", out, "is empty")
}

func TestAskAndAnswerUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tt := range []struct {
		args     []string
		code     int
		mentions string
	}{
		{[]string{"ask"}, 2, "Usage: askpoint ask"},
		{[]string{"ask", "http://127.0.0.1:1/x"}, 2, "nothing to send"},
		{[]string{"ask", "--facts", "[1]", "http://127.0.0.1:1/x", "hi"}, 2, "--facts is not a JSON object: it is an array"},
		{[]string{"ask", "--data", `"x"`, "http://127.0.0.1:1/x"}, 2, "--data is not a JSON object: it is a string"},
		{[]string{"ask", "--policy", filepath.Join(dir, "missing.json"), "http://127.0.0.1:1/x", "hi"}, 2, "missing.json"},
		{[]string{"answer"}, 2, "Usage: askpoint answer"},
		{[]string{"answer", "abc"}, 2, "not an inbox item ID"},
		{[]string{"answer", "1", "--data", "{}", "--text", "x"}, 2, "at most one of"},
		{[]string{"answer", "--inbox", filepath.Join(dir, "inbox.db"), "41"}, 1, "no such item"},
		{[]string{"inbox", "--token", "x"}, 2, "--token only applies with --listen"},
	} {
		_, stderr, code := run(t, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.mentions) {
			t.Errorf("askpoint %v: exit %d, stderr %q; want %d mentioning %q", tt.args, code, stderr, tt.code, tt.mentions)
		}
	}
}
