package conformance

import (
	"bytes"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// The sut-behaviors document declares exactly the ACTS behaviours the
// agent reads from a first part's text, and docs/ holds the same bytes.
func TestBehaviorsDocumentDeclaresExactlyTheACTSBehaviours(t *testing.T) {
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- prefix: "([^"]+)"`).FindAllSubmatch(BehaviorsYAML, -1) {
		declared = append(declared, string(m[1]))
	}
	var implemented []string
	for _, p := range actsPrefixes {
		implemented = append(implemented, string(p))
	}
	slices.Sort(declared)
	slices.Sort(implemented)
	if !slices.Equal(declared, implemented) {
		t.Errorf("sut-behaviors.yaml declares %q, the agent implements %q", declared, implemented)
	}
	if !bytes.Contains(BehaviorsYAML, []byte(`acts_version: "1.0"`)) {
		t.Errorf("sut-behaviors.yaml has no acts_version \"1.0\"")
	}
	docs, err := os.ReadFile("../../docs/acts-sut-behaviors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(docs, BehaviorsYAML) {
		t.Errorf("docs/acts-sut-behaviors.yaml differs from examples/conformance/sut-behaviors.yaml: copy it again")
	}
}

func TestFirstPartTextDecidesBeforeTheMessageID(t *testing.T) {
	for _, tc := range []struct {
		text, id string
		want     behaviour
	}{
		{"tck-artifact-file-url document", "x", artifactFileURL},
		{"tck-artifact-file document", "x", artifactFile},
		{"tck-multi-turn", "x", multiTurn},
		{"tck-cancel\tstart", "x", cancelable},
		{"tck-cancellation", "x", completeAtOnce},
		{"TCK prerequisite", "tck-input-required-1", inputRequired},
		{"tck-complete-task", "tck-input-required-1", completeTask},
		{"hello", "tck-artifact-file-url-1", artifactFileURL},
		{"hello", "tck-stream-basic-1", completeAtOnce}, // ACTS names are read from the text only
	} {
		m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(tc.text))
		m.ID = tc.id
		if got := behaviourOf(m); got != tc.want {
			t.Errorf("text %q, messageId %q: %q, want %q", tc.text, tc.id, got, tc.want)
		}
	}
}
