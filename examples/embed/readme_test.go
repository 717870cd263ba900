package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every Go block of the README is a part of this program, word for word,
// so the README shows code the compiler checks.
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
	for _, b := range blocks {
		if !strings.Contains(string(program), string(b[1])) {
			first, _, _ := strings.Cut(string(b[1]), "\n")
			t.Errorf("the README's block starting %q is not in examples/embed/main.go as written", first)
		}
	}
}
