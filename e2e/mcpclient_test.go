package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const mcpSDKPackage = "@modelcontextprotocol/client"

// mcpOKLines are what e2e/mcpjs/mcp.mjs prints for its three runs.
var mcpOKLines = []*regexp.Regexp{
	regexp.MustCompile(`^ok modern wrong-then-right expense=EXP-[0-9A-F]+ date=2027-03-02$`),
	regexp.MustCompile(`^ok modern decline TASK_STATE_REJECTED$`),
	regexp.MustCompile(`^ok legacy elicitation expense=EXP-[0-9A-F]+ date=2027-03-03$`),
}

// The official MCP TypeScript client (@modelcontextprotocol/client 2.x)
// walks the expense agent's question through askpoint mcp: at revision
// 2026-07-28 a date the form cannot check is refused before it reaches the
// agent and a right one files the expense; a decline rejects the task; at
// 2025-11-25 the same question comes as elicitation/create.
func TestMCPTypeScriptClient(t *testing.T) {
	node, npm := requireTool(t, "node"), requireTool(t, "npm")
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	jsDir := filepath.Join(root, "e2e", "mcpjs")
	ensureNodeModules(t, npm, jsDir, mcpSDKPackage)

	bin := buildAskpoint(t)
	base := startServe(t, bin, filepath.Join(t.TempDir(), "askpoint.db"))
	endpoint := startListening(t, bin, "serving MCP on ", "mcp", "--listen", "127.0.0.1:0",
		"--agent", base+"/expense", "--key-file", filepath.Join(t.TempDir(), "mcp.key"))

	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "mcp.mjs", endpoint)
	cmd.Dir = jsDir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if stderr.Len() > 0 {
		t.Logf("node stderr:\n%s", stderr.String())
	}
	if err != nil {
		t.Fatalf("node mcp.mjs %s: %v\nstdout:\n%s", endpoint, err, stdout.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != len(mcpOKLines) {
		t.Fatalf("node printed %d lines, want %d:\n%s", len(lines), len(mcpOKLines), stdout.String())
	}
	for i, re := range mcpOKLines {
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i+1, lines[i], re)
		}
	}
}
