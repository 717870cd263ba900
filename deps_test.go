package askpoint_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The parts of a server (the engine, the fronts, the port, the types they
// share, telemetry) never import the root package: the root builds them
// from the one Config and its agent types, which live in internal/api
// (docs/decisions/0084), and telemetry plugs into Config.Observer. Only
// the command (internal/cli) and the test harnesses build servers through
// the root. Test files are not counted: a part's tests may run a server.
func TestNoPartOfTheServerImportsTheRoot(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go command is needed to list the packages' imports: %v", err)
		}
		t.Skipf("no go command on PATH (%v): cannot list the packages' imports", err)
	}
	cmd := exec.Command(goCmd, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./internal/...", "./telemetry/...")
	cmd.Stderr = new(strings.Builder)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, cmd.Stderr)
	}
	const root = "github.com/askpoint/askpoint"
	// What builds servers: the command and the test harnesses.
	builders := map[string]bool{root + "/internal/cli": true, root + "/internal/apitest": true, root + "/internal/bench": true}
	parts := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || builders[fields[0]] {
			continue
		}
		parts++
		for _, imp := range fields[1:] {
			if imp == root {
				t.Errorf("%s imports the root package %s: a part of the server must take what it needs from internal/api", fields[0], root)
			}
		}
	}
	if parts < 6 {
		t.Fatalf("only %d packages listed, want the engine, the fronts, the port, api, auth and telemetry at least", parts)
	}
}
