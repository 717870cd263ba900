package client_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The caller's loop is a library: a program that only runs it must not
// link the durable inbox's SQLite driver or gRPC. The inbox imports this
// package and package client/grpcdial adds gRPC, never the reverse.
func TestClientLinksNeitherSQLiteNorGRPC(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go command is needed to list the package's dependencies: %v", err)
		}
		t.Skipf("no go command on PATH (%v): cannot list the package's dependencies", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", ".")
	cmd.Stderr = new(strings.Builder)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, cmd.Stderr)
	}
	deps := strings.Fields(string(out))
	forbidden := []struct{ prefix, why string }{
		{"modernc.org/sqlite", "SQLite belongs to the inbox, which imports the client"},
		{"google.golang.org/grpc", "gRPC belongs to package client/grpcdial"},
		{"github.com/askpoint/askpoint/inbox", "the inbox imports the client"},
	}
	for _, f := range forbidden {
		var linked []string
		for _, dep := range deps {
			if dep == f.prefix || strings.HasPrefix(dep, f.prefix+"/") {
				linked = append(linked, dep)
			}
		}
		if len(linked) > 0 {
			t.Errorf("package client links %s (%d packages: %s ...): %s, not the reverse", f.prefix, len(linked), linked[0], f.why)
		}
	}
	t.Logf("package client links %d packages", len(deps))
}
