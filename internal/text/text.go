// Package text holds the small helpers for turning protocol values into
// words for people, and random identifiers, that the engine, the
// orchestrators and the command line share: one place each.
package text

import (
	"crypto/rand"
	"encoding/hex"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// StateWord names a task state for people: "completed", "input-required".
func StateWord(s a2a.TaskState) string {
	w := strings.TrimPrefix(string(s), "TASK_STATE_")
	return strings.ReplaceAll(strings.ToLower(w), "_", "-")
}

// FirstLine is s up to its first newline.
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Parts joins the text parts of parts with sep; other parts are skipped.
func Parts(parts a2a.ContentParts, sep string) string {
	var out []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(t))
		}
	}
	return strings.Join(out, sep)
}

// Of joins a message's text parts with newlines ("" for a nil message).
func Of(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	return Parts(m.Parts, "\n")
}

// RandomHex is n random bytes in hex: IDs and tokens.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
