package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The askpoint binary is built once per test run and shared by every test
// of the package.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	binErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		// What the tests started in this process (clients, listeners, the
		// webhooks they run) ends with them; the servers are processes.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildAskpoint returns the path of ./cmd/askpoint built from this module.
func buildAskpoint(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			binErr = err
			return
		}
		root := filepath.Dir(wd) // the module root: e2e's parent
		if binDir, binErr = os.MkdirTemp("", "askpoint-e2e-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "askpoint")
		if runtime.GOOS == "windows" {
			binPath += ".exe"
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		// Only a cold build cache needs this long.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool, "build", "-o", binPath, "./cmd/askpoint")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/askpoint: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}
