package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every Go block of the README is a part of this program, word for word,
// or of another example's code (indented as the README needs), so the
// README shows code the compiler checks.
func TestTheREADMEShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllSubmatch(readme, -1)
	if len(blocks) < 2 {
		t.Fatalf("the README has %d Go blocks, want the agent and the main", len(blocks))
	}
	others, err := filepath.Glob("../*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	var examples []string
	for _, f := range others {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, unindent(string(b)))
	}
	for _, b := range blocks {
		block := string(b[1])
		if strings.Contains(string(program), block) {
			continue
		}
		found := false
		for _, e := range examples {
			found = found || strings.Contains(e, unindent(block))
		}
		if !found {
			first, _, _ := strings.Cut(block, "\n")
			t.Errorf("the README's block starting %q is not in examples/embed/main.go, nor in another example, as written", first)
		}
	}
}

// unindent is s with each line's leading tabs removed.
func unindent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimLeft(l, "\t")
	}
	return strings.Join(lines, "\n")
}
