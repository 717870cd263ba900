// Package conformance is the agent askpoint serves for the A2A conformance
// suites (`askpoint serve --conformance`): ACTS, the declarative suite of the
// A2A specification repository, and the older a2a-tck
// (github.com/a2aproject/a2a-tck).
//
// ACTS (its specification, section 11) says what it wants through the text
// of a message's first part: a known prefix, followed by the end of the
// text or a space, decides. The agent declares what it implements in the
// ACTS sut-behaviors document [BehaviorsYAML] (docs/acts-sut-behaviors.yaml).
//
//	tck-complete-task      complete with the status message "Hello from TCK"
//	tck-input-required     pause in input-required; the follow-up decides as a first message would
//	tck-multi-turn         pause in input-required and ask again on every follow-up until one says "done", then complete
//	tck-reject-task        rejected, with a status message
//	tck-task-failure       failed, with a status message
//	tck-auth-required      pause in auth-required, with a status message; any follow-up completes
//	tck-message-response   answer with a message "Direct message response", no task
//	tck-artifact-text      complete with a text artifact "Generated text content"
//	tck-artifact-file      complete with a raw part "tck" named output.txt, text/plain
//	tck-artifact-file-url  complete with a url part https://example.com/output.txt, output.txt, text/plain
//	tck-artifact-data      complete with a data part {"key":"value","count":42}
//	tck-long-running       working for LongRunningDelay, then complete with a text artifact
//	tck-cancel             working until canceled (at most CancelWait, then failed)
//	tck-stream-basic       working, a text artifact "Streamed content", completed
//	tck-stream-chunked     working, one artifact in two chunks ("chunk-1 ", "chunk-2"), completed
//
// The a2a-tck says what it wants through the messageId instead: when the
// first part's text names no ACTS behaviour, the longest known messageId
// prefix decides, for the first message of a task and for every follow-up
// alike (a follow-up's own messageId decides, not the first message's).
//
//	tck-complete-task             complete with the status message "Hello from TCK"
//	tck-input-required            pause in input-required; any text answers, and it asks again
//	tck-artifact-text / -file / -file-url / -data   as the ACTS behaviours of these names
//	tck-message-response          answer with a message "Direct message response", no task
//	tck-stream-001 / -003         working, a text artifact, completed
//	tck-stream-ordering-001       working, a text artifact "Ordered output", completed
//	tck-stream-002                completed at once
//	tck-stream-artifact-text      working, a text artifact "Streamed text content", completed
//	tck-stream-artifact-file      working, a raw artifact named output.txt, completed
//	tck-stream-artifact-chunked   working, one artifact in two chunks ("chunk-1 ", "chunk-2"), completed
//	tck-reject-task               rejected
//	test-resubscribe-message-id   stay working for ResubscribeDelay, then complete with a text artifact
//
// A message that names no behaviour either way completes the task at once.
package conformance

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// Name is the agent's path segment.
const Name = "conformance"

// The default delays of [Agent].
const (
	// ResubscribeDelay is how long a test-resubscribe-message-id task
	// stays working: longer than the a2a-tck's streaming timeout, so that
	// it can drop a stream and subscribe again while the task still runs.
	ResubscribeDelay = 4 * time.Second
	// LongRunningDelay is how long a tck-long-running task stays working:
	// long enough for ACTS to poll it in working, subscribe to it and set a
	// push configuration before it ends, and well inside its 6 s wait for a
	// push delivery and 15 s stream timeout.
	LongRunningDelay = 3 * time.Second
	// CancelWait bounds how long a tck-cancel task waits to be canceled,
	// so that a forgotten one does not hold a worker for ever.
	CancelWait = 5 * time.Minute
)

// BehaviorsYAML is the ACTS sut-behaviors document (ACTS specification
// section 11.1) of what this agent implements, triggered the ACTS way.
// docs/acts-sut-behaviors.yaml is a copy, for a runner's --behaviors.
//
//go:embed sut-behaviors.yaml
var BehaviorsYAML []byte

// behaviour names what a message asks for.
type behaviour string

// ACTS behaviours, by the first part's text.
const (
	completeTask    behaviour = "tck-complete-task"
	inputRequired   behaviour = "tck-input-required"
	multiTurn       behaviour = "tck-multi-turn"
	rejectTask      behaviour = "tck-reject-task"
	taskFailure     behaviour = "tck-task-failure"
	authRequired    behaviour = "tck-auth-required"
	messageResponse behaviour = "tck-message-response"
	artifactText    behaviour = "tck-artifact-text"
	artifactFile    behaviour = "tck-artifact-file"
	artifactFileURL behaviour = "tck-artifact-file-url"
	artifactData    behaviour = "tck-artifact-data"
	longRunning     behaviour = "tck-long-running"
	cancelable      behaviour = "tck-cancel"
	streamBasic     behaviour = "tck-stream-basic"
	streamChunkedV2 behaviour = "tck-stream-chunked"
)

// a2a-tck behaviours, by the messageId, beside the ACTS names it shares
// (complete-task, input-required, artifact-*, message-response, reject-task).
const (
	stream001      behaviour = "tck-stream-001"
	stream002      behaviour = "tck-stream-002"
	stream003      behaviour = "tck-stream-003"
	streamOrdering behaviour = "tck-stream-ordering-001"
	streamText     behaviour = "tck-stream-artifact-text"
	streamFile     behaviour = "tck-stream-artifact-file"
	streamChunked  behaviour = "tck-stream-artifact-chunked"
	resubscribe    behaviour = "test-resubscribe-message-id"
	completeAtOnce behaviour = ""
)

// longestFirst sorts prefixes so that tck-artifact-file-url is never taken
// for tck-artifact-file.
func longestFirst(p ...behaviour) []behaviour {
	sort.SliceStable(p, func(i, j int) bool { return len(p[i]) > len(p[j]) })
	return p
}

var (
	actsPrefixes = longestFirst(completeTask, inputRequired, multiTurn, rejectTask, taskFailure, authRequired,
		messageResponse, artifactText, artifactFile, artifactFileURL, artifactData, longRunning, cancelable,
		streamBasic, streamChunkedV2)
	tckPrefixes = longestFirst(completeTask, inputRequired, artifactText, artifactFile, artifactFileURL, artifactData,
		messageResponse, stream001, stream002, stream003, streamOrdering, streamText, streamFile,
		streamChunked, rejectTask, resubscribe)
)

// actsBehaviour is what the text of m's first part asks for: a known
// prefix followed by the end of the text or white space.
func actsBehaviour(m *a2a.Message) behaviour {
	if m == nil || len(m.Parts) == 0 || m.Parts[0] == nil {
		return completeAtOnce
	}
	text, ok := m.Parts[0].Content.(a2a.Text)
	if !ok {
		return completeAtOnce
	}
	s := strings.TrimSpace(string(text))
	for _, p := range actsPrefixes {
		if rest, ok := strings.CutPrefix(s, string(p)); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\n' || rest[0] == '\r') {
			return p
		}
	}
	return completeAtOnce
}

// tckBehaviour is what a messageId asks for, the a2a-tck way.
func tckBehaviour(messageID string) behaviour {
	for _, p := range tckPrefixes {
		if strings.HasPrefix(messageID, string(p)) {
			return p
		}
	}
	return completeAtOnce
}

// behaviourOf is what m asks for: its first part's text, else its messageId.
func behaviourOf(m *a2a.Message) behaviour {
	if b := actsBehaviour(m); b != completeAtOnce {
		return b
	}
	if m == nil {
		return completeAtOnce
	}
	return tckBehaviour(m.ID)
}

// Options are the delays of [AgentWithOptions]; a zero field takes the
// default.
type Options struct {
	ResubscribeDelay time.Duration // test-resubscribe-message-id (default ResubscribeDelay)
	LongRunningDelay time.Duration // tck-long-running (default LongRunningDelay)
	CancelWait       time.Duration // tck-cancel (default CancelWait)
}

// Agent returns the conformance agent. It implements [askpoint.Agent] and
// [askpoint.Replier].
func Agent() askpoint.Agent { return AgentWithOptions(Options{}) }

// AgentWith is [Agent] with another delay for test-resubscribe-message-id.
func AgentWith(resubscribeDelay time.Duration) askpoint.Agent {
	return AgentWithOptions(Options{ResubscribeDelay: resubscribeDelay})
}

// AgentWithOptions is [Agent] with other delays.
func AgentWithOptions(o Options) askpoint.Agent {
	if o.ResubscribeDelay <= 0 {
		o.ResubscribeDelay = ResubscribeDelay
	}
	if o.LongRunningDelay <= 0 {
		o.LongRunningDelay = LongRunningDelay
	}
	if o.CancelWait <= 0 {
		o.CancelWait = CancelWait
	}
	return agent{o}
}

type agent struct {
	o Options
}

var (
	_ askpoint.Agent   = agent{}
	_ askpoint.Replier = agent{}
)

// Reply answers tck-message-response with a message and no task.
func (agent) Reply(_ context.Context, msg *a2a.Message) (*a2a.Message, bool) {
	if behaviourOf(msg) != messageResponse {
		return nil, false
	}
	return a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart("Direct message response")), true
}

// checkpoint is what a pause keeps. MultiTurn marks a tck-multi-turn
// conversation, whose follow-ups are read by its rule ("done" ends it) and
// not as first messages; Turn counts its questions.
type checkpoint struct {
	MultiTurn bool `json:"multiTurn,omitempty"`
	Turn      int  `json:"turn,omitempty"`
}

// Start runs the first message's behaviour.
func (a agent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	return a.step(ctx, call, behaviourOf(call.Message))
}

// Resume runs the follow-up: a tck-multi-turn conversation goes on until a
// follow-up says "done"; any other pause is ended by the follow-up's own
// behaviour, read as a first message's would be.
func (a agent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	var cp checkpoint
	if len(r.Checkpoint) > 0 {
		if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
			return askpoint.Outcome{}, fmt.Errorf("conformance: checkpoint %s: %w", r.Checkpoint, err)
		}
	}
	if cp.MultiTurn {
		if strings.EqualFold(firstText(call.Message), "done") {
			return askpoint.Complete(textArtifact(fmt.Sprintf("Conversation complete after %d questions", cp.Turn))).
				WithMessage("Multi-turn conversation complete"), nil
		}
		return askTurn(cp.Turn + 1), nil
	}
	if r.Auth != nil {
		return askpoint.Complete().WithMessage("Authorized: the task is complete"), nil
	}
	return a.step(ctx, call, behaviourOf(call.Message))
}

// firstText is the trimmed text of m's first part ("" when it has none).
func firstText(m *a2a.Message) string {
	if m == nil || len(m.Parts) == 0 || m.Parts[0] == nil {
		return ""
	}
	t, _ := m.Parts[0].Content.(a2a.Text)
	return strings.TrimSpace(string(t))
}

// answerSchema takes any text as the answer.
const answerSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`

// askTurn is question n of a tck-multi-turn conversation.
func askTurn(n int) askpoint.Outcome {
	text := "The conformance agent needs more input: send any text to go on, or \"done\" to finish."
	if n > 1 {
		text = fmt.Sprintf("Question %d: send more input, or \"done\" to finish.", n)
	}
	return askpoint.Ask(question.Question{Text: text, Schema: []byte(answerSchema)}, checkpoint{MultiTurn: true, Turn: n})
}

func (ag agent) step(ctx context.Context, call *askpoint.Call, b behaviour) (askpoint.Outcome, error) {
	switch b {
	case completeTask, messageResponse:
		// tck-message-response reaches a step only as a follow-up to a
		// task, which has to carry on as a task.
		return askpoint.Complete().WithMessage("Hello from TCK"), nil
	case inputRequired:
		return askpoint.Ask(question.Question{
			Text:   "The conformance agent needs input: send any text to answer.",
			Schema: []byte(answerSchema),
		}, checkpoint{}), nil
	case multiTurn:
		return askTurn(1), nil
	case rejectTask:
		return askpoint.Reject("The conformance agent rejects this task, as tck-reject-task asks."), nil
	case taskFailure:
		return askpoint.Fail("The conformance agent failed this task, as tck-task-failure asks."), nil
	case authRequired:
		return askpoint.RequireAuth("The conformance agent needs authorization to go on, as tck-auth-required asks: send any message once you have it.", checkpoint{}), nil
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
	case longRunning:
		if err := call.Progress(ctx, "Working on a long-running task."); err != nil {
			return askpoint.Outcome{}, err
		}
		if err := wait(ctx, ag.o.LongRunningDelay); err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Complete(textArtifact("Long-running result")), nil
	case cancelable:
		if err := call.Progress(ctx, "Working until canceled."); err != nil {
			return askpoint.Outcome{}, err
		}
		if err := wait(ctx, ag.o.CancelWait); err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Fail(fmt.Sprintf("tck-cancel: the task was not canceled within %s", ag.o.CancelWait)), nil
	case streamBasic, stream001, stream003, streamOrdering, streamText, streamFile:
		a := map[behaviour]*a2a.Artifact{
			streamBasic:    textArtifact("Streamed content"),
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
	case streamChunked, streamChunkedV2:
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
	case resubscribe:
		if err := wait(ctx, ag.o.ResubscribeDelay); err != nil {
			return askpoint.Outcome{}, err
		}
		return askpoint.Complete(textArtifact("Resubscribed output")), nil
	default: // stream002, completeAtOnce
		return askpoint.Complete(), nil
	}
}

// wait returns after d, or ctx's error when the task is canceled first.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
		Description: "Behaves as the A2A conformance suites ask: ACTS through the first part's text, the a2a-tck through the messageId.",
		Version:     "1.0.0",
		// Every part media type is taken: the suite sends a raw part of
		// an unknown media type and expects it to be accepted (CORE-SEND-003).
		DefaultInputModes:  []string{"*/*"},
		DefaultOutputModes: []string{"text/plain", "application/json"},
		Skills: []a2a.AgentSkill{{
			ID:          "tck",
			Name:        "Conformance behaviours",
			Description: "Completes, pauses, fails, rejects, streams artifacts or replies with a message, as the message's first text (ACTS) or its messageId prefix (a2a-tck) says.",
			Tags:        []string{"conformance", "tck", "acts"},
			Examples:    []string{"tck-multi-turn start", "tck-long-running start", "messageId tck-input-required-…"},
		}},
	}
}
