package mcpbridge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/askpoint/askpoint/internal/text"
)

// stateVersion is the version of the requestState format: a change of
// format changes it, and an older state is refused in words.
const stateVersion = 1

// MinKeyBytes is the shortest key Config.Key may be.
const MinKeyBytes = 32

// state is what a requestState carries: which question of which task of
// which tool it answers, for whom, until when. It is signed, not
// encrypted: it holds nothing the MCP client may not see (the task and
// question IDs are the client's own).
type state struct {
	V       int    `json:"v"`
	Tool    string `json:"tool"`
	Task    string `json:"task"`
	Key     string `json:"key"`    // the question ID (or, for a text-only question, its status message ID)
	Caller  string `json:"caller"` // the MCP caller it was issued to ("" when the caller has no identity)
	Expires int64  `json:"exp"`    // Unix seconds: the question's expiry, or the issue time plus Config.MaxStateAge
	Nonce   string `json:"n"`      // makes two states for one question differ
	// Inbox marks a URL-mode round: the question is answered in the web
	// inbox, and the retry only reads the task (it sends nothing).
	Inbox bool `json:"inbox,omitempty"`
}

// seal encodes and signs s: base64url(JSON) "." base64url(HMAC-SHA256).
func seal(key []byte, s state) string {
	s.V = stateVersion
	if s.Nonce == "" {
		s.Nonce = text.RandomHex(9)
	}
	return sign(key, stateLabel, s)
}

// Labels that say what a signed value is, so that one kind cannot pass
// for another (a requestState for a task ID).
const (
	stateLabel = "askpoint mcp requestState"
	taskLabel  = "askpoint mcp taskId"
)

// sign encodes v and signs it under label.
func sign(key []byte, label string, v any) string {
	body, _ := json.Marshal(v)
	enc := base64.RawURLEncoding.EncodeToString(body)
	return enc + "." + base64.RawURLEncoding.EncodeToString(mac(key, label, enc))
}

func mac(key []byte, label, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label + "\x00"))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// verify checks raw's signature under label and decodes it into v; the
// error wraps forged and says why raw is not this server's.
func verify(key []byte, label, raw string, forged error, v any) error {
	body, sig, ok := strings.Cut(raw, ".")
	if !ok || body == "" {
		return fmt.Errorf("%w: it is not in the form this server issues", forged)
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, label, body)) {
		return fmt.Errorf("%w: its signature does not match", forged)
	}
	js, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || json.Unmarshal(js, v) != nil {
		return fmt.Errorf("%w: its body does not decode", forged)
	}
	return nil
}

// Errors of a requestState. Each is returned wrapped, with the words that
// say which state and why.
var (
	// ErrStateForged: the requestState was not issued by this bridge (its
	// signature does not match its key) or is not a requestState at all.
	ErrStateForged = errors.New("mcpbridge: the requestState was not issued by this server")
	// ErrStateExpired: the question the requestState answers has expired.
	ErrStateExpired = errors.New("mcpbridge: the requestState has expired")
	// ErrStateCaller: the requestState was issued to another MCP caller.
	ErrStateCaller = errors.New("mcpbridge: the requestState belongs to another caller")
	// ErrStateSpent: the question the requestState answers is no longer
	// open: it was answered (the state was used), or the task moved on.
	ErrStateSpent = errors.New("mcpbridge: the requestState's question is no longer open")
)

// open checks raw's signature, format, tool, caller and expiry, and
// returns what it carries.
func open(key []byte, raw, tool, caller string, now time.Time) (state, error) {
	var s state
	if err := verify(key, stateLabel, raw, ErrStateForged, &s); err != nil {
		return state{}, err
	}
	if s.Task == "" || s.Key == "" {
		return state{}, fmt.Errorf("%w: its body does not decode", ErrStateForged)
	}
	if s.V != stateVersion {
		return state{}, fmt.Errorf("%w: it is of format %d, this server reads format %d", ErrStateForged, s.V, stateVersion)
	}
	if s.Tool != tool {
		return state{}, fmt.Errorf("%w: it was issued for tool %q, not %q", ErrStateForged, s.Tool, tool)
	}
	if s.Caller != caller {
		return state{}, fmt.Errorf("%w: it was issued for question %s of task %s to a caller other than this one", ErrStateCaller, s.Key, s.Task)
	}
	if exp := time.Unix(s.Expires, 0); !now.Before(exp) {
		return state{}, fmt.Errorf("%w: question %s of task %s expired at %s", ErrStateExpired, s.Key, s.Task, exp.UTC().Format(time.RFC3339))
	}
	return s, nil
}
