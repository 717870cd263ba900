// Package conformance is the agent askpoint serves for the A2A conformance
// suite (github.com/a2aproject/a2a-tck, `askpoint serve --conformance`).
//
// The suite says what it wants through the messageId of each message it
// sends: the longest known prefix decides, for the first message of a task
// and for every follow-up alike (a follow-up's own messageId decides, not
// the first message's). A messageId with no known prefix completes the task
// at once.
//
//	tck-complete-task             complete with the status message "Hello from TCK"
//	tck-input-required            pause in input-required; any text answers, and it asks again
//	tck-artifact-text             complete with a text artifact "Generated text content"
//	tck-artifact-file             complete with a raw part "tck" named output.txt, text/plain
//	tck-artifact-file-url         complete with a url part https://example.com/output.txt, output.txt, text/plain
//	tck-artifact-data             complete with a data part {"key":"value","count":42}
//	tck-message-response          answer with a message "Direct message response", no task
//	tck-stream-001 / -003         working, a text artifact, completed
//	tck-stream-ordering-001       working, a text artifact "Ordered output", completed
//	tck-stream-002                completed at once
//	tck-stream-artifact-text      working, a text artifact "Streamed text content", completed
//	tck-stream-artifact-file      working, a raw artifact named output.txt, completed
//	tck-stream-artifact-chunked   working, one artifact in two chunks ("chunk-1 ", "chunk-2"), completed
//	tck-reject-task               rejected
//	test-resubscribe-message-id   stay working for ResubscribeDelay, then complete with a text artifact
package conformance

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// Name is the agent's path segment.
const Name = "conformance"

// ResubscribeDelay is how long a test-resubscribe-message-id task stays
// working in [Agent]: longer than the suite's streaming timeout, so that it
// can drop a stream and subscribe again while the task still runs.
const ResubscribeDelay = 4 * time.Second

// behaviour names what a prefix asks for.
type behaviour string

const (
	completeTask    behaviour = "tck-complete-task"
	inputRequired   behaviour = "tck-input-required"
	artifactText    behaviour = "tck-artifact-text"
	artifactFile    behaviour = "tck-artifact-file"
	artifactFileURL behaviour = "tck-artifact-file-url"
	artifactData    behaviour = "tck-artifact-data"
	messageResponse behaviour = "tck-message-response"
	stream001       behaviour = "tck-stream-001"
	stream002       behaviour = "tck-stream-002"
	stream003       behaviour = "tck-stream-003"
	streamOrdering  behaviour = "tck-stream-ordering-001"
	streamText      behaviour = "tck-stream-artifact-text"
	streamFile      behaviour = "tck-stream-artifact-file"
	streamChunked   behaviour = "tck-stream-artifact-chunked"
	rejectTask      behaviour = "tck-reject-task"
	resubscribe     behaviour = "test-resubscribe-message-id"
	completeAtOnce  behaviour = ""
)

// prefixes are the known prefixes, longest first, so that
// tck-artifact-file-url is never taken for tck-artifact-file.
var prefixes = func() []behaviour {
	p := []behaviour{
		completeTask, inputRequired, artifactText, artifactFile, artifactFileURL, artifactData,
		messageResponse, stream001, stream002, stream003, streamOrdering, streamText, streamFile,
		streamChunked, rejectTask, resubscribe,
	}
	sort.SliceStable(p, func(i, j int) bool { return len(p[i]) > len(p[j]) })
	return p
}()

// behaviourOf is what a messageId asks for.
func behaviourOf(messageID string) behaviour {
	for _, p := range prefixes {
		if strings.HasPrefix(messageID, string(p)) {
			return p
		}
	}
	return completeAtOnce
}

// Agent returns the conformance agent. It implements [askpoint.Agent] and
// [askpoint.Replier].
func Agent() askpoint.Agent { return AgentWith(ResubscribeDelay) }

// AgentWith is [Agent] with another delay for test-resubscribe-message-id.
func AgentWith(resubscribeDelay time.Duration) askpoint.Agent {
	return agent{resubscribeDelay: resubscribeDelay}
}

type agent struct {
	resubscribeDelay time.Duration
}

var (
	_ askpoint.Agent   = agent{}
	_ askpoint.Replier = agent{}
)

// Reply answers tck-message-response with a message and no task.
func (agent) Reply(_ context.Context, msg *a2a.Message) (*a2a.Message, bool) {
	if behaviourOf(msg.ID) != messageResponse {
		return nil, false
	}
	return a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("Direct message response")), true
}

// Start runs the first message's behaviour.
func (a agent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	return a.step(ctx, call)
}

// Resume runs the follow-up's behaviour: its own messageId decides.
func (a agent) Resume(ctx context.Context, call *askpoint.Call, _ *askpoint.Resumption) (askpoint.Outcome, error) {
	return a.step(ctx, call)
}

// checkpoint is what an input-required pause keeps: nothing the next step
// needs, since the follow-up's messageId decides.
type checkpoint struct{}

// answerSchema takes any text as the answer.
const answerSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

func (ag agent) step(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	id := ""
	if call.Message != nil {
		id = call.Message.ID
	}
	switch b := behaviourOf(id); b {
	case completeTask, messageResponse:
		// tck-message-response reaches a step only as a follow-up to a
		// task, which has to carry on as a task.
		return askpoint.Complete().WithMessage("Hello from TCK"), nil
	case inputRequired:
		return askpoint.Ask(question.Question{
			Text:   "The conformance agent needs input: send any text to answer.",
			Schema: []byte(answerSchema),
		}, checkpoint{}), nil
	case artifactText:
		return askpoint.Complete(textArtifact("Generated text content")), nil
	case artifactFile:
		return askpoint.Complete(fileArtifact()), nil
	case artifactFileURL:
		p := a2a.NewFileURLPart("https://example.com/output.txt", "text/plain")
		p.Filename = "output.txt"
		return askpoint.Complete(artifact(p)), nil
	case artifactData:
		p := a2a.NewDataPart(map[string]any{"key": "value", "count": 42})
		p.MediaType = "application/json"
		return askpoint.Complete(artifact(p)), nil
	case stream001, stream003, streamOrdering, streamText, streamFile:
		a := map[behaviour]*a2a.Artifact{
			stream001:      textArtifact("Stream hello from TCK"),
			stream003:      textArtifact("Stream task lifecycle"),
			streamOrdering: textArtifact("Ordered output"),
			streamText:     textArtifact("Streamed text content"),
			streamFile:     fileArtifact(),
		}[b]
		if err := call.AddArtifact(ctx, a); err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Complete(), nil
	case streamChunked:
		id := a2a.NewArtifactID()
		first := &a2a.Artifact{ID: id, Name: "chunked", Parts: a2a.ContentParts{a2a.NewTextPart("chunk-1 ")}}
		if err := call.AppendArtifact(ctx, first, false); err != nil {
			return askpoint.Outcome{}, err
		}
		last := &a2a.Artifact{ID: id, Name: "chunked", Parts: a2a.ContentParts{a2a.NewTextPart("chunk-2")}}
		if err := call.AppendArtifact(ctx, last, true); err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Complete(), nil
	case rejectTask:
		return askpoint.Reject("rejected"), nil
	case resubscribe:
		select {
		case <-time.After(ag.resubscribeDelay):
		case <-ctx.Done():
			return askpoint.Outcome{}, ctx.Err()
		}
		return askpoint.Complete(textArtifact("Resubscribed output")), nil
	default: // stream002, completeAtOnce
		return askpoint.Complete(), nil
	}
}

func artifact(parts ...*a2a.Part) *a2a.Artifact {
	return &a2a.Artifact{ID: a2a.NewArtifactID(), Name: "output", Parts: parts}
}

func textArtifact(text string) *a2a.Artifact {
	return artifact(a2a.NewTextPart(text))
}

func fileArtifact() *a2a.Artifact {
	p := a2a.NewRawPart([]byte("tck")) // "dGNr" on the wire
	p.Filename = "output.txt"
	p.MediaType = "text/plain"
	return artifact(p)
}

// Card is the conformance agent's card. The server adds the interfaces
// (JSON-RPC and HTTP+JSON, protocolVersion 1.0), streaming and the question
// extension (not required).
func Card() a2a.AgentCard {
	return a2a.AgentCard{
		Name:        "askpoint conformance agent",
		Description: "Behaves as the A2A conformance suite (a2a-tck) asks through each message's messageId prefix.",
		Version:     "1.0.0",
		// Every part media type is taken: the suite sends a raw part of
		// an unknown media type and expects it to be accepted (CORE-SEND-003).
		DefaultInputModes:  []string{"*/*"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{{
			ID:          "tck",
			Name:        "Conformance behaviours",
			Description: "Completes, pauses, rejects, streams artifacts or replies with a message, as the messageId prefix says.",
			Tags:        []string{"conformance", "tck"},
			Examples:    []string{"messageId tck-complete-task-…", "messageId tck-input-required-…"},
		}},
	}
}
