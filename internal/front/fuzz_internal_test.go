package front

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/engine"
)

// FuzzCheckParts: the front check of a message never panics, and whatever
// it lets through the SDK decodes into a message whose every part has
// content, so the engine never sees a part it cannot read.
func FuzzCheckParts(f *testing.F) {
	for _, seed := range []string{
		`{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}`,
		`{"messageId":"m","parts":[{"data":{"questionId":"q","costCentre":"CC-4410"},"mediaType":"application/json"}]}`,
		`{"messageId":"m","parts":[{"raw":"aGk=","filename":"a.txt"}]}`,
		`{"messageId":"m","parts":[{"url":"https://example.com/a"}]}`,
		`{"messageId":"m","parts":[{}]}`,
		`{"messageId":"m","parts":[{"text":"a","data":1}]}`,
		`{"messageId":"","parts":[]}`,
		`{"parts":null}`,
		`[]`, `null`, `"x"`, `{"messageId":"m","parts":[{"text":null}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // refused before: the front checks a message only in a body that is JSON
		}
		if err := checkParts("message", raw, 64); err != nil {
			return
		}
		var m a2a.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			// The SDK refuses it with its own parse or params error; the
			// engine never sees it.
			return
		}
		if m.ID == "" || len(m.Parts) == 0 {
			t.Fatalf("checkParts accepted %s: messageId %q, %d parts", raw, m.ID, len(m.Parts))
		}
		for i, p := range m.Parts {
			if p == nil || p.Content == nil {
				t.Fatalf("checkParts accepted %s whose part %d has no content", raw, i)
			}
		}
		if err := engine.ValidateMessage(&a2a.SendMessageRequest{Message: &m}, 64); err != nil && m.Role != a2a.MessageRoleAgent {
			t.Fatalf("checkParts accepted %s but the engine refuses it: %v", raw, err)
		}
	})
}
