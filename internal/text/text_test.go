package text

import (
	"bytes"
	"testing"
)

func TestCleanDropsWhatDrivesATerminalAndKeepsTheText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode ✓":            "plain text, ünïcode ✓",
		"two\nlines\tand a tab":            "two\nlines\tand a tab",
		"title\x1b]0;owned\x07 here":       "title]0;owned here",
		"\x1b[8mhidden\x1b[0m":             "[8mhidden[0m",
		"carriage\rreturn":                 "carriagereturn",
		"c1 \u009b31m csi":                 "c1 31m csi",
		"bidi \u202egnp.exe\u202c":         "bidi gnp.exe",
		"isolate \u2066x\u2069 \u200fmark": "isolate x mark",
		"del\x7f and nul\x00":              "del and nul",
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
	var b bytes.Buffer
	if n, err := CleanWriter(&b).Write([]byte("a\x1bb")); err != nil || n != 3 || b.String() != "ab" {
		t.Errorf("CleanWriter: wrote %d, %v, %q; want 3, nil, \"ab\"", n, err, b.String())
	}
}
