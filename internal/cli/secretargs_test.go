//go:build unix

package cli_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/apitest"
)

// exeEnv is exe with extra environment variables.
func exeEnv(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	code := 0
	stderr := ""
	if ee, ok := err.(*exec.ExitError); ok {
		code, stderr = ee.ExitCode(), string(ee.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), stderr, code
}

// Issue 23, finding 8: secrets given on the command line are visible to
// every local user in the process list. Each has an environment or file
// alternative; a tokens file others can read is warned about; a secret is
// never echoed in an error.
func TestSecretsHaveAlternativesToArgumentsAndAreNeverEchoed(t *testing.T) {
	t.Parallel()
	bin := buildAskpoint(t)
	dir := t.TempDir()

	// A malformed --token (no '=') is refused without showing it.
	_, stderr, code := exe(t, bin, "", "serve", "--token", "alice-secret-without-a-principal")
	if code != 2 || strings.Contains(stderr, "alice-secret-without-a-principal") {
		t.Errorf("serve --token MALFORMED: exit %d, stderr %q; want 2 and the token not shown", code, stderr)
	}

	// Tokens from the environment count as tokens: a non-loopback address
	// is then allowed, and the run gets as far as the next bad flag.
	_, stderr, code = exeEnv(t, bin, []string{`ASKPOINT_TOKENS={"alice":"tok-from-env-0123"}`}, "serve", "--addr", "0.0.0.0:0", "--streams", "bogus")
	if code != 2 || !strings.Contains(stderr, `--streams "bogus"`) {
		t.Errorf("serve with $ASKPOINT_TOKENS: exit %d, stderr %q; want the tokens taken (the --streams error, not the loopback one)", code, stderr)
	}

	// A tokens file others may read is warned about.
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, []byte(`{"alice":"tok-from-file-0123"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ = exe(t, bin, "", "serve", "--tokens", tokens, "--streams", "bogus")
	if !strings.Contains(stderr, "readable by group or others") || strings.Contains(stderr, "tok-from-file-0123") {
		t.Errorf("serve --tokens with mode 0644: stderr %q; want a warning, and no token shown", stderr)
	}
	if err := os.Chmod(tokens, 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ = exe(t, bin, "", "serve", "--tokens", tokens, "--streams", "bogus")
	if strings.Contains(stderr, "readable by group or others") {
		t.Errorf("serve --tokens with mode 0600 warned: %q", stderr)
	}

	// A PostgreSQL URL's password is not shown when the connection fails.
	_, stderr, code = exe(t, bin, "", "serve", "--db", "postgres://postgres:pw-in-url-0123@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if code == 0 || strings.Contains(stderr, "pw-in-url-0123") {
		t.Errorf("serve --db URL-WITH-PASSWORD: exit %d, stderr %q; want a failure without the password", code, stderr)
	}

	// The push listener's token from a file, and the caller's bearer token
	// from a file.
	pushToken := filepath.Join(dir, "push-token")
	if err := os.WriteFile(pushToken, []byte("push-token-from-file-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := apitest.Start(t, apitest.Options{Quiet: true})
	agentURL := env.AgentURL("expense")
	inboxPath := filepath.Join(dir, "inbox.db")
	l := startListener(t, bin, "--inbox", inboxPath, "--token-file", pushToken, "--agent", agentURL)
	c := env.Client(t, "expense", a2a.TransportProtocolJSONRPC)
	res, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(taxiReceipt))})
	if err != nil {
		t.Fatal(err)
	}
	target := l.url + "?agent=" + url.QueryEscape(agentURL)
	if code := push(t, target, "push-token-from-file-0123", res.(*a2a.Task)); code != 204 {
		t.Errorf("push with the token from --token-file: %d, want 204", code)
	}
	bearerFile := filepath.Join(dir, "bearer")
	if err := os.WriteFile(bearerFile, []byte("bearer-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := exe(t, bin, "", "ask", agentURL, taxiReceipt, "--inbox", inboxPath, "--token-file", bearerFile)
	if code != 3 {
		t.Errorf("ask --token-file: exit %d\n%s\n%s", code, out, stderr)
	}
}
