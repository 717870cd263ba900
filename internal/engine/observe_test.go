package engine

import "testing"

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
