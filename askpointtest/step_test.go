package askpointtest_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/askpointtest"
	"github.com/askpoint/askpoint/question"
)

// remembering keeps one field in its checkpoint and one it forgets (not
// encoded): after the round trip through JSON only the first is back.
type remembering struct {
	Item   string
	cached string
}

func memo(keys *[]string) askpoint.Agent {
	return askpoint.Steps[remembering, pick]{
		OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
			q := question.Question{Text: "Which size?", Schema: question.MustSchemaFor[pick]()}
			return askpoint.Ask(q, remembering{Item: "shirt", cached: "lost"}).DefaultAnswer(pick{Size: "M"}), nil
		},
		OnAnswer: func(ctx context.Context, call *askpoint.Call, cp remembering, a pick) (askpoint.Outcome, error) {
			*keys = append(*keys, call.Key)
			return askpoint.Complete(&a2a.Artifact{ID: "order", Parts: a2a.ContentParts{a2a.NewTextPart(cp.Item + " " + a.Size + " " + cp.cached)}}), nil
		},
	}
}

func artifactText(s *askpointtest.Step) string { return s.Outcome.Artifacts()[0].Parts[0].Text() }

func TestRunReadsAnswersAndResumesAsAServerDoes(t *testing.T) {
	var keys []string
	s := askpointtest.Run(t, memo(&keys), "a shirt")
	q := s.Question
	if s.State != a2a.TaskStateInputRequired || q.ID == "" || q.Expires.IsZero() || q.Attempt != 1 || q.MaxAttempts != question.DefaultMaxAttempts {
		t.Fatalf("after Run: %s %+v, want a question with its ID, expiry and attempts filled", s.State, q)
	}
	if string(s.Checkpoint) != `{"Item":"shirt"}` {
		t.Errorf("checkpoint %s, want the JSON the store keeps", s.Checkpoint)
	}
	// Text as a person types it, validated against the schema's enum.
	done := s.Answer(t, "M")
	if done.State != a2a.TaskStateCompleted || artifactText(done) != "shirt M " {
		t.Fatalf("after \"M\": %s %q, want completed with what the checkpoint kept", done.State, artifactText(done))
	}
	if done.Call.Key != done.Call.TaskID+"/"+q.ID || done.Call.Message == nil || done.Call.Request == nil {
		t.Errorf("call %+v: want the key a server gives, the answer and the request", done.Call)
	}
	// An invalid answer is re-asked, and the cap ends the task.
	re := s.Answer(t, pick{Size: "XL"})
	if re.State != a2a.TaskStateInputRequired || re.Question.Attempt != 2 || len(re.Question.Errors) != 1 || re.Question.ID == q.ID {
		t.Fatalf("re-ask %+v, want attempt 2 under a new ID with one error", re.Question)
	}
	if end := re.Answer(t, "XXL").Answer(t, map[string]any{"size": 1}); end.State != a2a.TaskStateFailed || !strings.Contains(end.Text, "No valid answer after 3 attempts") {
		t.Errorf("after three invalid answers: %s %q, want failed at the cap", end.State, end.Text)
	}
	if d := s.Decline(t, "not today"); d.State != a2a.TaskStateRejected || !strings.Contains(d.Text, "not today") {
		t.Errorf("after Decline: %s %q, want rejected with the reason", d.State, d.Text)
	}
	if x := s.Expire(t); x.State != a2a.TaskStateCompleted || !x.Call.Expired || artifactText(x) != "shirt M " {
		t.Errorf("after Expire: %s, want the default answer, the call marked expired", x.State)
	}
	if again := done.Again(t); again.Call.Key != done.Call.Key || len(keys) != 3 || keys[2] != keys[0] {
		t.Errorf("Again ran with keys %v, want the first answer's key again", keys)
	}
}

func TestRunHandsHoldsBackAndReleasesThemOnItsClock(t *testing.T) {
	var (
		mu       sync.Mutex
		released []string
	)
	clock := askpointtest.NewClock(time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC))
	spec := sizer(&released, &mu)
	s := askpointtest.Runner{Agent: spec.Agent, Now: clock.Now}.Start(t, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("a shirt")))
	if len(s.Holds) != 1 || !s.Holds[0].Until.Equal(s.Question.Expires) || !s.Question.Expires.Equal(clock.Now().Add(24*time.Hour)) {
		t.Fatalf("holds %+v, question expires %v: want the shirt held until the expiry a day from the clock", s.Holds, s.Question.Expires)
	}
	clock.Advance(t, 25*time.Hour)
	s.Release(t)
	if len(released) != 1 || released[0] != "shirt" {
		t.Fatalf("released %v, want the shirt", released)
	}
	if x := s.Expire(t); x.State != a2a.TaskStateFailed || !strings.Contains(x.Text, "No answer in time") {
		t.Errorf("after Expire: %s %q, want failed", x.State, x.Text)
	}
	if len(released) != 1 {
		t.Errorf("released %v: a released hold is not released again", released)
	}
}
