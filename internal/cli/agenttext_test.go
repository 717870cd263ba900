//go:build unix

package cli_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// hostileOption is an option value that runs a command when pasted into
// a shell inside single quotes.
const hostileOption = "a' $(touch PWNED) '"

// hostileAgent asks a question whose text, options and field names carry
// terminal control sequences and shell syntax.
func hostileAgent() askpoint.Agent {
	return askpoint.Steps[struct{}, map[string]any]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			return askpoint.Ask(question.Question{
				Text:    "Pick one\x1b]0;owned-title\x07 \x1b[8mhidden\x1b[0m \u202eevil\u202c",
				Schema:  json.RawMessage(`{"type":"object","required":["choice"],"properties":{"choice":{"type":"string"}}}`),
				Options: []question.Option{{Value: hostileOption, Label: "first\x1b[2J"}, {Value: "b", Label: "second"}},
			}, struct{}{}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, _ struct{}, a map[string]any) (askpoint.Outcome, error) {
			return askpoint.Reject("no"), nil
		},
	}
}

var answerLine = regexp.MustCompile(`(?m)^answer:  (askpoint send .*)$`)

// Issue 23, finding 3: agent text must neither run shell commands when a
// person pastes a suggested command nor drive the person's terminal.
func TestAgentTextNeitherRunsCommandsNorDrivesTheTerminal(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	env := apitest.Start(t, apitest.Options{Quiet: true, Agents: []askpoint.AgentSpec{
		{Name: "hostile", Agent: hostileAgent(), Card: a2a.AgentCard{Name: "Hostile", Description: "Sends control sequences."}},
	}})
	url := env.AgentURL("hostile")
	dir := t.TempDir()
	inboxPath := filepath.Join(dir, "inbox.db")

	noControls := func(what, out string) {
		t.Helper()
		for _, r := range out {
			if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == '\u202e' {
				t.Errorf("%s prints control character %U:\n%q", what, r, out)
				return
			}
		}
	}

	out, stderr, code := exe(t, bin, "", "send", url, "go")
	if code != 0 {
		t.Fatalf("askpoint send: exit %d: %s", code, stderr)
	}
	noControls("askpoint send", out)
	m := answerLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("askpoint send prints no answer line:\n%s", out)
	}
	// Paste the suggested line into a shell where askpoint only prints
	// its arguments.
	script := `askpoint() { for a in "$@"; do printf '%s\n' "$a"; done; }; ` + m[1]
	sh := exec.CommandContext(t.Context(), "sh", "-c", script)
	sh.Dir = dir
	got, err := sh.Output()
	if err != nil {
		t.Fatalf("sh -c %q: %v", m[1], err)
	}
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Fatalf("pasting %q ran the agent's command", m[1])
	}
	args := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
	if len(args) != 6 || args[0] != "send" || args[1] != "--task" || args[3] != "--data" || args[5] != url {
		t.Fatalf("the pasted line gave askpoint %q; want send --task ID --data JSON URL", args)
	}
	var data map[string]any
	if err := json.Unmarshal([]byte(args[4]), &data); err != nil || data["choice"] != hostileOption {
		t.Errorf("--data %q (%v); want JSON with choice %q", args[4], err, hostileOption)
	}

	out, _, code = exe(t, bin, "", "ask", url, "go", "--inbox", inboxPath)
	if code != 3 {
		t.Fatalf("askpoint ask: exit %d", code)
	}
	noControls("askpoint ask", out)
	out, _, _ = exe(t, bin, "", "inbox", "--inbox", inboxPath)
	noControls("askpoint inbox", out)
	mustContain(t, "askpoint inbox", out, "Pick one")
	out, stderr, _ = exe(t, bin, "2\n", "answer", "1", "--inbox", inboxPath)
	noControls("askpoint answer", out+stderr)
	mustContain(t, "askpoint answer", out, "Pick one", "hidden")
}
