package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/apitest"
)

const (
	startTimeout = 30 * time.Second
	npmTimeout   = 3 * time.Minute // only a first `npm ci` needs this long
	nodeTimeout  = 60 * time.Second
	stopTimeout  = 10 * time.Second
	sdkPackage   = "@a2a-js/sdk"
	jsScript     = "expense.mjs"
)

// okLine is what the node script prints for each passing run: the expense
// agent's runs, then the planning workflow's ("ok planning ...").
var okLine = regexp.MustCompile(`^ok ((?:planning )?(?:jsonrpc|rest) (?:blocking|streaming)) task=\S+ expense=EXP-[0-9A-F]+$`)

func TestJavaScriptSDK(t *testing.T) {
	node, npm := requireTool(t, "node"), requireTool(t, "npm")
	if out, err := exec.Command(node, "--version").Output(); err == nil {
		t.Logf("node %s", strings.TrimSpace(string(out)))
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	jsDir := filepath.Join(root, "e2e", "js")
	ensureNodeModules(t, npm, jsDir, sdkPackage)

	bin := buildAskpoint(t)
	base := startServe(t, bin, filepath.Join(t.TempDir(), "askpoint.db"))
	t.Logf("askpoint serve at %s", base)

	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, jsScript, base)
	cmd.Dir = jsDir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("node stderr:\n%s", stderr.String())
	}
	t.Logf("node stdout:\n%s", stdout.String())
	if ctx.Err() != nil {
		t.Fatalf("node %s did not finish within %v", jsScript, nodeTimeout)
	}
	if err != nil {
		t.Fatalf("node %s: %v (the JavaScript SDK run failed; see its stderr above)", jsScript, err)
	}

	// The expense agent, then the planning workflow as an agent (the JS SDK
	// is its caller; the expense agent's question suspends it).
	want := []string{
		"jsonrpc blocking", "jsonrpc streaming", "rest blocking", "rest streaming",
		"planning jsonrpc blocking", "planning jsonrpc streaming", "planning rest blocking", "planning rest streaming",
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("node printed %d lines, want %d ok lines (%s)", len(lines), len(want), strings.Join(want, ", "))
	}
	for i, line := range lines {
		m := okLine.FindStringSubmatch(line)
		if m == nil || m[1] != want[i] {
			t.Errorf("line %d = %q, want \"ok %s task=... expense=EXP-...\"", i+1, line, want[i])
		}
	}
}

// requireTool finds name on PATH. When it is missing the test skips, except
// under CI (the CI environment variable is set), where it fails: CI must
// never skip this test quietly.
func requireTool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := name + " is not on PATH: the JavaScript SDK interoperability test needs node (v20 or later) and npm"
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this is a failure, not a skip): %v", msg, err)
	}
	t.Skipf("%s; skipping (%v)", msg, err)
	return ""
}

// ensureNodeModules runs `npm ci` in dir unless node_modules already holds
// the version of the SDK package sdk that package.json pins.
func ensureNodeModules(t *testing.T, npm, dir, sdk string) {
	t.Helper()
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &pkg)
	want := pkg.Dependencies[sdk]
	if want == "" {
		t.Fatalf("%s/package.json does not depend on %s", dir, sdk)
	}
	installed := filepath.Join(dir, "node_modules", filepath.FromSlash(sdk), "package.json")
	if data, err := os.ReadFile(installed); err == nil {
		var got struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(data, &got) == nil && got.Version == want {
			return
		}
	}
	t.Logf("installing %s %s: npm ci in %s", sdk, want, dir)
	ctx, cancel := context.WithTimeout(t.Context(), npmTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// startServe runs `askpoint serve` on 127.0.0.1 with a port the kernel
// picks, waits for its "listening on" line and returns that URL. The server
// is stopped by its PID when the test ends: SIGTERM, then SIGKILL if it has
// not exited within stopTimeout.
func startServe(t *testing.T, bin, db string) string {
	t.Helper()
	return startListening(t, bin, "askpoint: listening on ", "serve", "--addr", "127.0.0.1:0", "--db", db)
}

// startListening runs the askpoint command args, waits for the line of
// its standard output that starts with prefix and returns the rest of it,
// and stops the process as startServe does.
func startListening(t *testing.T, bin, prefix string, args ...string) string {
	t.Helper()
	name := "askpoint " + args[0]
	out := &lineWatcher{prefix: prefix, found: make(chan string, 1)}
	errOut := &apitest.SyncBuffer{}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	pid := cmd.Process.Pid
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				t.Errorf("SIGTERM %s (pid %d): %v; killing it", name, pid, err)
				_ = cmd.Process.Kill()
			}
			select {
			case <-exited:
			case <-time.After(stopTimeout):
				t.Errorf("%s (pid %d) did not stop within %v of SIGTERM; killing it", name, pid, stopTimeout)
				_ = cmd.Process.Kill()
				<-exited
			}
		}
		if waitErr != nil {
			t.Logf("%s (pid %d) exited: %v", name, pid, waitErr)
		}
		if t.Failed() {
			t.Logf("%s stdout:\n%s", name, out.String())
			t.Logf("%s stderr:\n%s", name, errOut.String())
		}
	})

	select {
	case found := <-out.found:
		return found
	case <-exited:
		t.Fatalf("%s exited before listening: %v\nstdout:\n%s\nstderr:\n%s", name, waitErr, out.String(), errOut.String())
	case <-time.After(startTimeout):
		t.Fatalf("%s printed no %q line within %v\nstdout:\n%s\nstderr:\n%s", name, out.prefix, startTimeout, out.String(), errOut.String())
	}
	return ""
}

// lineWatcher keeps what a process writes and sends, once, the rest of the
// first complete line that starts with prefix.
type lineWatcher struct {
	prefix string
	found  chan string

	mu   sync.Mutex
	buf  bytes.Buffer
	scan int // bytes of buf already looked at
	done bool
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for !w.done {
		rest := w.buf.Bytes()[w.scan:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(rest[:i]), "\r")
		w.scan += i + 1
		if after, ok := strings.CutPrefix(line, w.prefix); ok {
			w.done = true
			w.found <- strings.TrimSpace(after)
		}
	}
	return len(p), nil
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
