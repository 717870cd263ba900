// Package text holds the small helpers for turning protocol values into
// words for people, and random identifiers, that the engine, the
// orchestrators and the command line share: one place each.
package text

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

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

// Clean is s fit to print on a person's terminal: control characters
// (C0 but newline and tab, DEL, C1) and the Unicode controls that reorder
// or hide text (bidirectional overrides and isolates, zero-width marks) are
// dropped. What an agent sends (questions, options, errors, URLs) is
// untrusted: raw, an ESC or OSC sequence retitles the terminal, hides text
// or fakes a link. The one sanitizer of everything askpoint prints for a
// person in a terminal; the web inbox escapes through html/template.
func Clean(s string) string {
	if !needsClean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !unsafeRune(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsClean(s string) bool {
	for _, r := range s {
		if unsafeRune(r) {
			return true
		}
	}
	return false
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	case r == utf8.RuneError:
		return true
	}
	return false
}

// CleanWriter passes what is written to w through Clean. Each Write is
// cleaned on its own (fmt writes a whole line at once).
func CleanWriter(w io.Writer) io.Writer { return cleanWriter{w} }

type cleanWriter struct{ w io.Writer }

func (c cleanWriter) Write(p []byte) (int, error) {
	s := string(p)
	if !needsClean(s) {
		return c.w.Write(p)
	}
	if _, err := io.WriteString(c.w, Clean(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// DefaultMaxIDBytes caps an identifier when no cap is given.
const DefaultMaxIDBytes = 256

// CheckID refuses an identifier longer than maxID bytes or holding a
// control character, naming the field.
func CheckID(field, id string, maxID int) error {
	if maxID <= 0 {
		maxID = DefaultMaxIDBytes
	}
	if len(id) > maxID {
		return invalidID("%s is %d bytes long; the server takes identifiers of at most %d bytes", field, len(id), maxID)
	}
	if !utf8.ValidString(id) {
		return invalidID("%s is not valid UTF-8", field)
	}
	for i, r := range id {
		if unicode.IsControl(r) {
			return invalidID("%s holds the control character U+%04X at byte %d: identifiers may not hold control characters", field, r, i)
		}
	}
	return nil
}

func invalidID(format string, args ...any) error {
	return a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf(format, args...))
}

// JSONKind names a decoded JSON value's kind for people: "a string", "a
// number", "a boolean", "an array", "an object" or "null".
func JSONKind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return "null"
}
