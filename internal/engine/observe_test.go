package engine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRawStringReadsOnlyTheFirstKey(t *testing.T) {
	for _, c := range []struct {
		raw, key, want string
		ok             bool
	}{
		{`{"questionId":"q-1-ab","text":"x"}`, "questionId", "q-1-ab", true},
		{`{"kind":"costCentre+date","asked":"2026"}`, "kind", "costCentre+date", true},
		{`{"asked":"2026","holds":[{"data":{"kind":"x"}}]}`, "kind", "", false},
		{`{"kind":"a\"b"}`, "kind", "", false},
		{`{"kind":1}`, "kind", "", false},
		{``, "kind", "", false},
	} {
		got := rawString([]byte(c.raw), c.key)
		if (got != nil) != c.ok || string(got) != c.want {
			t.Errorf("rawString(%s, %q) = %q, want %q (found %v)", c.raw, c.key, got, c.want, c.ok)
		}
	}
}

func TestQuestionKindIsTheSortedRequiredFields(t *testing.T) {
	for raw, want := range map[string]string{
		`{"questionId":"q","answerSchema":{"type":"object","required":["date","costCentre"]}}`: "costCentre+date",
		`{"questionId":"q","answerSchema":{"type":"object"}}`:                                  "any",
		`not json`: "any",
	} {
		if got := QuestionKind([]byte(raw)); got != want {
			t.Errorf("QuestionKind(%s) = %q, want %q", raw, got, want)
		}
	}
}

// A question kind longer than its bound is cut on a character's first
// byte: a cut inside a character made an invalid label, and the metrics
// library panicked on it (a relayed sub-agent's field names are the
// sub-agent's to choose).
func TestAQuestionKindIsCutOnACharacterBoundary(t *testing.T) {
	long := strings.Repeat("a", maxKindBytes-1) + "éé" // é is two bytes: the 80th byte is inside the first
	raw := `{"questionId":"q","answerSchema":{"type":"object","required":["` + long + `"]}}`
	got := QuestionKind([]byte(raw))
	if !utf8.ValidString(got) || len(got) > maxKindBytes {
		t.Fatalf("QuestionKind = %q (%d bytes, valid UTF-8 %v), want at most %d bytes of valid UTF-8", got, len(got), utf8.ValidString(got), maxKindBytes)
	}
	if got != strings.Repeat("a", maxKindBytes-1) {
		t.Errorf("QuestionKind = %q, want the name cut before the character that crosses byte %d", got, maxKindBytes)
	}
}
