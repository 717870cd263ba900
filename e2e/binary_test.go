package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// buildAskpointForCrash builds ./cmd/askpoint into a temporary directory of
// t and returns the binary's path. It is the build used by crash_test.go.
func buildAskpointForCrash(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd) // the module root: e2e's parent
	bin := filepath.Join(t.TempDir(), "askpoint")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "build", "-o", bin, "./cmd/askpoint")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/askpoint: %v\n%s", err, out)
	}
	return bin
}
