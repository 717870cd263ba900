//go:build unix

package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/apitest"
)

// The CLI's side of the edge (issue 16), on the real binary.

func TestServeRefusesReservedPrincipalNames(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "a.db")
	_, stderr, code := exe(t, bin, "", "serve", "--addr", "127.0.0.1:0", "--db", db, "--token", "askpoint-internal=0123456789abcdef0123")
	if code != 2 || !strings.Contains(stderr, "reserved") {
		t.Fatalf("serve --token askpoint-internal=…: exit %d, stderr %q; want 2 saying the name is reserved", code, stderr)
	}
}

func TestServeErrorsHaveOnePrefixAndTokenHelpSaysTheMinimum(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "a.db")
	_, stderr, code := exe(t, bin, "", "serve", "--addr", "127.0.0.1:0", "--db", db, "--token", "alice=short")
	if code == 0 || strings.Contains(stderr, "askpoint serve: askpoint:") || !strings.Contains(stderr, "16") {
		t.Errorf("serve with a short token: exit %d, stderr %q; want one prefix and the minimum length", code, stderr)
	}
	_, help, code := exe(t, bin, "", "serve", "--help")
	if code != 0 {
		t.Errorf("serve --help: exit %d, want 0", code)
	}
	if !regexp.MustCompile(`(?s)-token.*at least 16 characters`).MatchString(help) {
		t.Errorf("serve --help does not say the token's minimum length:\n%s", help)
	}
	if _, _, code := exe(t, bin, "", "send", "--help"); code != 0 {
		t.Errorf("send --help: exit %d, want 0", code)
	}
}

func TestServeOnEveryInterfacePrintsURLsACallerCanUse(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "a.db")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "0.0.0.0:0", "--db", db, "--token", "alice=alice-token-0123456789")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.HasPrefix(sc.Text(), "askpoint: try:") {
			break
		}
	}
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "[::]") || strings.Contains(all, "http://0.0.0.0") || !strings.Contains(all, "listening on http://127.0.0.1:") {
		t.Errorf("serve --addr 0.0.0.0:0 printed URLs no client can dial:\n%s", all)
	}
}

func TestSendCarriesABearerTokenAndAPushURL(t *testing.T) {
	const token = "alice-token-0123456789"
	hook := apitest.NewWebhook(t)
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		c.Tokens = map[string]string{token: "alice"}
		c.WebhookHosts = []string{hook.Host()}
	}})
	url := env.AgentURL("expense")
	if _, stderr, code := run(t, "send", url, taxiReceipt); code == 0 || !strings.Contains(stderr, "bearer token") || !strings.Contains(stderr, "--token") {
		t.Fatalf("send without a token: exit %d, stderr %q; want refused, saying how to give send a token", code, stderr)
	}
	out, stderr, code := run(t, "send", "--token", token, "--push-url", hook.URL(), url, taxiReceipt)
	if code != 0 || !strings.Contains(out, "TASK_STATE_INPUT_REQUIRED") {
		t.Fatalf("send --token: exit %d\n%s\n%s", code, out, stderr)
	}
	id := a2a.TaskID(taskLine.FindStringSubmatch(out)[1])
	apitest.Eventually(t, "the push URL hears of the question", 30*time.Second, func() bool { return len(hook.For(id)) > 0 })
	t.Setenv("ASKPOINT_TOKEN", token)
	if out, stderr, code := run(t, "send", "--task", string(id), "--data", `{"costCentre":"CC-4410"}`, url); code != 0 || !strings.Contains(out, "TASK_STATE_COMPLETED") {
		t.Fatalf("send with $ASKPOINT_TOKEN: exit %d\n%s\n%s", code, out, stderr)
	}
}

func TestInboxListenRequiresATokenAndJSON(t *testing.T) {
	bin := buildAskpoint(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "inbox", "--listen", "127.0.0.1:0", "--agent", "http://127.0.0.1:9/agent", "--inbox", filepath.Join(t.TempDir(), "inbox.db"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errOut, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	first, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	m := listeningLine.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q", first)
	}
	target := m[1]
	tokLine, err := bufio.NewReader(errOut).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	tm := regexp.MustCompile(`push token .*: ([0-9a-f]{32})`).FindStringSubmatch(tokLine)
	if tm == nil {
		t.Fatalf("inbox --listen without --token printed %q; want a generated token", tokLine)
	}
	token := tm[1]
	body := `{"task":{"id":"t1","contextId":"c1","status":{"state":"TASK_STATE_INPUT_REQUIRED"}}}`
	post := func(ct, tok string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, target+"?agent=http://evil.example/a", bytes.NewReader([]byte(body)))
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		if tok != "" {
			req.Header.Set(inbox.TokenHeader, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("application/json", ""); code != http.StatusUnauthorized {
		t.Errorf("notification without the token: %d, want 401", code)
	}
	if code := post("", token); code != http.StatusUnsupportedMediaType {
		t.Errorf("notification without a content type (a web page's no-cors POST): %d, want 415", code)
	}
	if code := post("text/plain", token); code != http.StatusUnsupportedMediaType {
		t.Errorf("notification as text/plain: %d, want 415", code)
	}
}

// /metrics takes no token: serve says so when asked to listen beyond
// loopback (192.0.2.1, a documentation address no interface has, so the
// listen fails after the warning and nothing listens beyond loopback), and
// says nothing on loopback.
func TestServeWarnsOfMetricsBeyondLoopback(t *testing.T) {
	bin := buildAskpoint(t)
	_, stderr, code := exe(t, bin, "", "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "a.db"), "--metrics-addr", "192.0.2.1:0")
	if code == 0 || !strings.Contains(stderr, "is not a loopback address and /metrics takes no token") {
		t.Errorf("--metrics-addr 192.0.2.1:0: exit %d, stderr %q; want the warning (then the failed listen)", code, stderr)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "b.db"), "--metrics-addr", "127.0.0.1:0")
	var errs strings.Builder
	cmd.Stderr = &errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "askpoint: try:") {
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	if strings.Contains(errs.String(), "takes no token") {
		t.Errorf("--metrics-addr 127.0.0.1:0 warned:\n%s", errs.String())
	}
}
