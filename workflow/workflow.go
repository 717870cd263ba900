// Package workflow runs several A2A agents as one task: in sequence, as a
// group chat whose manager picks the next speaker, or by handoff, where
// each participant names the next.
//
// A workflow suspends when a participant asks. Its participants' questions
// are never answered by another participant or by the manager: the
// workflow's own task moves to input-required with one request (its question
// ID is the request ID; its data part names the participant and the
// participant's task under "about"), no other participant is invoked while
// it waits, and only the caller's answer to that request is carried to the
// waiting participant. A suspended turn consumes no round. A participant may
// be allowed to be answered from the workflow's own context first
// (Participant.AutoAnswer), recorded in the history as answered by the
// workflow.
//
// A workflow is an askpoint agent ([Agent]): a run is a task, its state is
// the task's checkpoint, so a suspended workflow is rows in the store and
// survives restarts; its pending requests are its tasks in input-required
// (ListTasks). Participants are reached over A2A (local askpoint agents at
// their own URLs, remote agents anywhere) the way a relay reaches its
// sub-agent.
//
// What a participant produces flows on. Its reply is its artifacts' text
// (else its final status message's) and its data parts (its artifacts',
// else its status message's). In a sequence or a handoff the next
// participant gets one message: the reply's text as a text part, if any,
// and each of its data parts as a data part (application/json); the first
// participant gets the request's text and data parts. In a group chat each
// speaker gets the conversation so far as one text part, a line per turn:
// the speaker, then the turn's text as a JSON string and its data as JSON
// (caller: "File my taxi receipt" / expense: "Filed." {"id":"EXP-1"}), so
// that no participant's words can end its turn or read as another's
// ([ReadTranscript] reads it back). The caller's question, when a
// participant asks, quotes the participant's text the same way. A
// participant is never invoked with an empty message (ErrNoMessage). The
// run completes with a "transcript" artifact (text, and a data part with
// every turn and its data) followed by every participant's artifacts in
// the order they were produced, each with a new ID and the metadata key
// "participant" naming who produced it.
//
// A run ends the way its waiting participant does: when the caller
// declines the request, the participant (by default) rejects, and so does
// the run; a cancel of the run cancels the participant's task; when the
// run's question expires (a margin before the participant's), the run
// fails saying so and the participant's task is canceled, not left paused.
package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
)

// Mode is how a workflow picks who speaks next.
type Mode string

// The modes.
const (
	// Sequential runs each participant once, in order; each gets what the
	// one before it said: its text and its data parts.
	Sequential Mode = "sequential"
	// GroupChat lets a manager pick the next speaker (round robin unless
	// Config.Next says otherwise) until MaxRounds turns were taken or the
	// manager says stop; each speaker gets the conversation so far.
	GroupChat Mode = "group-chat"
	// Handoff starts with the first participant; each names the next one
	// in its reply (a data part {"handoff": "NAME"}); a reply that names
	// none ends the workflow.
	Handoff Mode = "handoff"
)

// Participant is an agent in a workflow.
type Participant struct {
	// Name is how the workflow names it (to the manager and to people).
	Name string
	// URL is its A2A base URL.
	URL string
	// AutoAnswer, when set, lets the workflow answer this participant's
	// questions from its own context first (client resolvers; Query.Caller
	// is the caller's principal, Query.Request the workflow's request).
	// An answer is recorded in the history as given by the workflow. Nil:
	// every question suspends the workflow and goes to the caller.
	AutoAnswer []client.Resolver
}

// Config describes a workflow.
type Config struct {
	Mode         Mode
	Participants []Participant
	// MaxRounds caps the turns of a group chat or a handoff chain (a turn
	// is a participant's finished reply; a suspended turn is not one).
	// Defaults to twice the number of participants.
	MaxRounds int
	// Next is the group chat's manager: it returns the name of the next
	// speaker, or "" to stop. Nil: round robin.
	Next func(s *State) string
	// CallbackURL is the workflow agent's own base URL as participants
	// reach it; their push notifications go to CallbackURL/wake/TASK_ID.
	CallbackURL string
	// Relay tunes how participants are reached (Dial, Margin, MaxWait,
	// SettleWithin, Now) and how their questions are put to the caller
	// (Restate, Translate, Errors); its SubAgent fields, CallbackURL and
	// Resolvers are set per participant (Participant.AutoAnswer).
	Relay relay.Config
}

// Turn is one finished reply of the conversation.
type Turn struct {
	Speaker string `json:"speaker"` // "caller" for the request
	Text    string `json:"text"`
	Handoff string `json:"handoff,omitempty"`
	// Data are the data parts of the reply (of the request, for the
	// caller): what a participant produced for machines.
	Data []any `json:"data,omitempty"`
	// Artifacts are the participant's artifacts, carried up to the
	// workflow's task when it completes.
	Artifacts []*a2a.Artifact `json:"artifacts,omitempty"`
}

// State is a workflow run's checkpoint: the conversation so far and, while
// a turn is under way, where it stands. It is stored as JSON whose field
// names do not change from one version to the next (nor those of Hop's,
// see relay.Checkpoint), so a run suspended by an older version resumes
// on a newer one.
type State struct {
	Transcript []Turn `json:"transcript"`
	Rounds     int    `json:"rounds"` // finished participant turns
	// Speaker is the participant whose turn is under way ("" between
	// turns); Hop is where its task stands: its ID at the participant and
	// the question it asks, if any.
	Speaker string            `json:"speaker,omitempty"`
	Hop     *relay.Checkpoint `json:"hop,omitempty"`
	// Request is the open request to the caller while suspended.
	Request *Request `json:"request,omitempty"`
	// WakeToken is the run's wake token as a state of an older version
	// kept it, in clear; honoured until the current participant has the
	// task's own (see Resume). Empty in every state written now: the run's
	// wake token, the same for every turn's sub-task, is
	// askpoint.Call.WakeToken, derived again on every step.
	WakeToken string `json:"wakeToken,omitempty"`
}

// Request is what a suspended workflow asks its caller.
type Request struct {
	ID          string `json:"id"` // the workflow's question ID
	Participant string `json:"participant"`
	TaskID      string `json:"taskId"` // the participant's task
}

// About keys of a workflow's question: who asks, and in which task.
const (
	AboutParticipant = "participant"
	AboutTask        = "participantTask"
)

// ErrNoMessage is the error of a turn that would invoke a participant
// with nothing to say to it: the workflow fails instead of inventing a
// message.
var ErrNoMessage = errors.New("workflow: the next participant would be invoked with no message")

type workflow struct {
	cfg  Config
	hops map[string]*relay.Hop
}

// log is where the workflow's log lines go: Config.Relay.Logger, else
// slog.Default().
func (w *workflow) log() *slog.Logger {
	if w.cfg.Relay.Logger != nil {
		return w.cfg.Relay.Logger
	}
	return slog.Default()
}

// Agent returns the workflow as an askpoint agent.
func Agent(cfg Config) (askpoint.Agent, error) {
	switch cfg.Mode {
	case Sequential, GroupChat, Handoff:
	default:
		return nil, fmt.Errorf("workflow: unknown mode %q (use sequential, group-chat or handoff)", cfg.Mode)
	}
	if len(cfg.Participants) == 0 || cfg.CallbackURL == "" {
		return nil, errors.New("workflow: Participants and CallbackURL are required")
	}
	if cfg.MaxRounds <= 0 {
		cfg.MaxRounds = 2 * len(cfg.Participants)
	}
	w := &workflow{cfg: cfg, hops: map[string]*relay.Hop{}}
	for _, p := range cfg.Participants {
		if p.Name == "" || p.URL == "" || p.Name == "caller" || strings.ContainsAny(p.Name, "\"\r\n") || strings.Contains(p.Name, ": ") {
			return nil, fmt.Errorf("workflow: participant %q needs a name (not \"caller\", without a line break, a quote or \": \") and a URL", p.Name)
		}
		if w.hops[p.Name] != nil {
			return nil, fmt.Errorf("workflow: two participants are named %q", p.Name)
		}
		rc := cfg.Relay
		rc.SubAgentURL, rc.SubAgentName, rc.CallbackURL, rc.Resolvers = p.URL, p.Name, cfg.CallbackURL, p.AutoAnswer
		hop, err := relay.NewHop(rc)
		if err != nil {
			return nil, err
		}
		w.hops[p.Name] = hop
	}
	return w, nil
}

// Start begins the conversation with the caller's request.
func (w *workflow) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	st := &State{Transcript: []Turn{{Speaker: "caller", Text: text.Parts(call.Request.Parts, "\n"), Data: dataOf(call.Request.Parts)}}}
	return w.advance(ctx, call, st)
}

// Resume carries the caller's answer to the waiting participant, or acts on
// a participant's notification.
func (w *workflow) Resume(ctx context.Context, call *askpoint.Call, res *askpoint.Resumption) (askpoint.Outcome, error) {
	var st State
	if err := json.Unmarshal(res.Checkpoint, &st); err != nil {
		return askpoint.Outcome{}, fmt.Errorf("workflow: read state: %w", err)
	}
	// A state of an older version kept the run's token in clear: the
	// waiting participant is moved onto the task's own token, and the
	// state forgets the old one (it keeps it only while the participant
	// refuses).
	if p := w.hops[st.Speaker]; p != nil && st.Hop != nil && st.Hop.Token != "" {
		p.Adopt(ctx, call, st.Hop)
	}
	if st.Hop == nil || st.Hop.Token == "" {
		st.WakeToken = ""
	}
	speaker, hop := st.Speaker, st.Hop
	out, err := w.resume(ctx, call, res, &st)
	if err != nil {
		w.log().Warn("workflow: step failed", slog.String("participant", speaker), slog.Any("err", err))
		out, err = askpoint.Fail(fmt.Sprintf("The workflow lost touch with %s, so it stopped.", speaker)), nil
	}
	if (out.Kind() == askpoint.OutcomeFail || out.Kind() == askpoint.OutcomeReject) && hop != nil && w.hops[speaker] != nil {
		// The participant's task was handed back with the resume: the run
		// ends, so it cancels it (best effort; it may have ended).
		_ = w.hops[speaker].CancelSubTask(context.WithoutCancel(ctx), hop)
	}
	return out, err
}

func (w *workflow) resume(ctx context.Context, call *askpoint.Call, res *askpoint.Resumption, stp *State) (askpoint.Outcome, error) {
	st := *stp
	hop := w.hops[st.Speaker]
	if hop == nil || st.Hop == nil {
		return askpoint.Fail(fmt.Sprintf("The workflow's state names participant %q, which it does not have.", st.Speaker)), nil
	}
	if res.Answer != nil && res.Event == nil && st.Request != nil && st.Hop.SubQuestion != nil {
		// The caller's answer to the open request: the only thing that
		// is ever bound to the waiting participant's task.
		ans := &client.Answer{By: "caller"}
		if a := res.Answer.Action; a != "" {
			ans.Action, ans.Reason = a, res.Answer.Reason
		} else {
			fields := map[string]any{}
			if err := json.Unmarshal(res.Answer.Fields, &fields); err != nil {
				return askpoint.Outcome{}, err
			}
			checked, errs := hop.Check(ctx, call, st.Hop, fields)
			if len(errs) > 0 {
				// Refused before it reaches the participant: the caller's
				// attempts count, and run out.
				q, ok := hop.Refuse(st.Hop, errs)
				if !ok {
					return askpoint.Fail(fmt.Sprintf("No valid answer for %s after %d attempts. Last errors: %s", st.Speaker, q.Attempt-1, question.ErrorsText(errs))), nil
				}
				return w.suspend(ctx, call, &st, hop, &q)
			}
			ans.Fields = checked
		}
		st.Request = nil
		sub, err := hop.Answer(ctx, call, st.Hop, ans, call.Key)
		if errors.Is(err, a2a.ErrInvalidParams) || errors.Is(err, a2a.ErrUnsupportedOperation) {
			// The participant's task moved on before the answer reached
			// it: it decides as it stands.
			sub, err = hop.Get(ctx, st.Hop)
		}
		if err != nil {
			return askpoint.Outcome{}, err
		}
		return w.turn(ctx, call, &st, hop, sub)
	}
	sub, err := hop.Get(ctx, st.Hop)
	if err != nil {
		return askpoint.Outcome{}, err
	}
	return w.turn(ctx, call, &st, hop, sub)
}

// Wakes implements askpoint.Waker: only news about the current
// participant's task resumes the workflow.
func (w *workflow) Wakes(checkpoint json.RawMessage, event json.RawMessage) bool {
	var st State
	if json.Unmarshal(checkpoint, &st) != nil || st.Hop == nil {
		return false
	}
	hop := w.hops[st.Speaker]
	return hop != nil && hop.Wakes(st.Hop, event)
}

// advance starts turns until one suspends, waits or the workflow ends.
func (w *workflow) advance(ctx context.Context, call *askpoint.Call, st *State) (askpoint.Outcome, error) {
	for {
		next, done := w.nextSpeaker(st)
		if done {
			return w.finish(st), nil
		}
		if w.hops[next] == nil {
			return askpoint.Fail(fmt.Sprintf("The workflow was handed to %q, which is not one of its participants.", next)), nil
		}
		parts := w.messageFor(st)
		if len(parts) == 0 {
			return askpoint.Fail(fmt.Sprintf("%v: %s would get nothing to answer.", ErrNoMessage, next)), nil
		}
		hop := w.hops[next]
		// One wake token for the whole run (the task's, Call.WakeToken):
		// a participant's late notifications (after its turn, or after the
		// run ended) then reach a task that knows the token and are dropped
		// as stale (Wakes checks the sub-task) or answered late, instead of
		// being refused as unknown and retried by the participant's server.
		// Only a state of an older version that its participant would not
		// move off its own token keeps that token for the next turns.
		hopCP := &relay.Checkpoint{Token: st.WakeToken}
		st.Speaker, st.Hop, st.Request = next, hopCP, nil
		key := fmt.Sprintf("%s/turn-%d", call.Key, len(st.Transcript))
		sub, err := hop.Send(ctx, call, st.Hop, &a2a.Message{Parts: parts}, key)
		if err != nil {
			w.log().Warn("workflow: a participant did not take its turn", slog.String("participant", next), slog.Any("err", err))
			return askpoint.Fail(fmt.Sprintf("%s could not be reached, so the workflow stopped.", next)), nil
		}
		out, finished, err := w.settle(ctx, call, st, hop, sub)
		if err != nil || !finished {
			return out, err
		}
	}
}

// turn handles the current participant's sub-task and, when its turn is
// finished, goes on with the next.
func (w *workflow) turn(ctx context.Context, call *askpoint.Call, st *State, hop *relay.Hop, sub *a2a.Task) (askpoint.Outcome, error) {
	out, finished, err := w.settle(ctx, call, st, hop, sub)
	if err != nil || !finished {
		return out, err
	}
	return w.advance(ctx, call, st)
}

// settle decides what the participant's sub-task means: a finished turn
// (finished true, the reply in the transcript), a suspension, a wait, or
// the workflow's end.
func (w *workflow) settle(ctx context.Context, call *askpoint.Call, st *State, hop *relay.Hop, sub *a2a.Task) (askpoint.Outcome, bool, error) {
	var asked string // the participant's question the open request relays, if any
	if st.Request != nil && st.Hop.SubQuestion != nil {
		asked = st.Hop.SubQuestion.ID
	}
	sub, q, err := hop.Settle(ctx, call, st.Hop, sub, "workflow", func(ans *client.Answer) string {
		return fmt.Sprintf("The workflow answered %s's question from its own context: %s", st.Speaker, jsonText(ans.Fields))
	})
	if errors.Is(err, relay.ErrUnreadableQuestion) {
		return askpoint.Fail(fmt.Sprintf("%s asked something the workflow cannot relay (no machine-readable question).", st.Speaker)), false, nil
	}
	if err != nil {
		return askpoint.Outcome{}, false, err
	}
	switch sub.Status.State {
	case a2a.TaskStateCompleted:
		turn := Turn{Speaker: st.Speaker, Text: replyText(sub), Handoff: handoffOf(sub), Data: replyData(sub), Artifacts: sub.Artifacts}
		st.Transcript = append(st.Transcript, turn)
		st.Rounds++
		st.Speaker, st.Hop, st.Request = "", nil, nil
		return askpoint.Outcome{}, true, nil
	case a2a.TaskStateRejected:
		// A participant that refuses (its caller declined its question,
		// or it will not do the turn) makes the run a refusal too.
		return askpoint.Reject(fmt.Sprintf("The workflow stopped at %s's turn. %s", st.Speaker, hop.Ended(sub))), false, nil
	case a2a.TaskStateFailed, a2a.TaskStateCanceled:
		return askpoint.Fail(fmt.Sprintf("The workflow stopped at %s's turn. %s", st.Speaker, hop.Ended(sub))), false, nil
	case a2a.TaskStateAuthRequired:
		return askpoint.Fail(fmt.Sprintf("The workflow stopped at %s's turn: it needs a credential.", st.Speaker)), false, nil
	case a2a.TaskStateInputRequired:
		if asked == q.ID {
			// Woken by news that was not news (a late notification): the
			// same request stays open, under the same ID.
			out, err := w.suspendAs(ctx, call, st, hop, q, st.Request.ID)
			return out, false, err
		}
		out, err := w.suspend(ctx, call, st, hop, q)
		return out, false, err
	default: // submitted, working
		st.Request = nil
		return askpoint.Await(fmt.Sprintf("Waiting for %s.", st.Speaker), st, relay.WakeToken(call, st.Hop), w.now().Add(w.maxWait())).
			Hold(hop.Hold(st.Hop)), false, nil
	}
}

// suspend asks the caller the participant's question: one request, named
// by its question ID.
func (w *workflow) suspend(ctx context.Context, call *askpoint.Call, st *State, hop *relay.Hop, q *question.Question) (askpoint.Outcome, error) {
	return w.suspendAs(ctx, call, st, hop, q, newRequestID())
}

// suspendAs is suspend with the request ID given.
func (w *workflow) suspendAs(ctx context.Context, call *askpoint.Call, st *State, hop *relay.Hop, q *question.Question, id string) (askpoint.Outcome, error) {
	own, err := hop.Question(ctx, call, st.Hop, q)
	if err != nil {
		return askpoint.Outcome{}, err
	}
	own.ID = id
	// The participant's words are quoted on one line, as in the
	// transcript: nothing in them reads as the workflow's, or as a turn.
	own.Text = fmt.Sprintf("%s asks: %s", st.Speaker, quote(own.Text))
	own.About = map[string]string{AboutParticipant: st.Speaker, AboutTask: string(st.Hop.SubTaskID)}
	st.Request = &Request{ID: own.ID, Participant: st.Speaker, TaskID: string(st.Hop.SubTaskID)}
	// The participant's task is held while the caller thinks: if the run
	// ends without an answer, it is canceled.
	return askpoint.Ask(own, st).WakeOn(relay.WakeToken(call, st.Hop)).Hold(hop.Hold(st.Hop)), nil
}

// Release implements askpoint.Releaser: it cancels the participant's task
// a suspended run held when the run ended without the caller's answer.
func (w *workflow) Release(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
	var data struct {
		Agent string `json:"agent"`
	}
	_ = json.Unmarshal(h.Data, &data)
	hop := w.hops[data.Agent]
	if hop == nil {
		return nil // a participant the workflow no longer has
	}
	return hop.Release(ctx, call, h)
}

// nextSpeaker picks who speaks next; done when the workflow is over.
func (w *workflow) nextSpeaker(st *State) (string, bool) {
	ps := w.cfg.Participants
	switch w.cfg.Mode {
	case Sequential:
		if st.Rounds >= len(ps) {
			return "", true
		}
		return ps[st.Rounds].Name, false
	case Handoff:
		if st.Rounds >= w.cfg.MaxRounds {
			return "", true
		}
		if st.Rounds == 0 {
			return ps[0].Name, false
		}
		next := st.Transcript[len(st.Transcript)-1].Handoff
		return next, next == ""
	default: // group chat
		if st.Rounds >= w.cfg.MaxRounds {
			return "", true
		}
		if w.cfg.Next != nil {
			next := w.cfg.Next(st)
			return next, next == ""
		}
		return ps[st.Rounds%len(ps)].Name, false
	}
}

// messageFor is what the next speaker gets. In a sequence or a handoff:
// what the one before said, its text as a text part and each of its data
// parts (from its artifacts; from the request for the first speaker) as a
// data part. In a group chat: the conversation so far as one text part, a
// line per turn (transcriptText), a turn's data written as JSON on its
// line, so that a reply with data only is in the transcript too. Empty
// when there is nothing to say.
func (w *workflow) messageFor(st *State) a2a.ContentParts {
	var parts a2a.ContentParts
	if w.cfg.Mode != GroupChat {
		last := st.Transcript[len(st.Transcript)-1]
		if strings.TrimSpace(last.Text) != "" {
			parts = append(parts, a2a.NewTextPart(last.Text))
		}
		for _, d := range last.Data {
			p := a2a.NewDataPart(d)
			p.MediaType = question.MediaTypeJSON
			parts = append(parts, p)
		}
		return parts
	}
	if text := transcriptText(st.Transcript); strings.TrimSpace(text) != "" {
		parts = append(parts, a2a.NewTextPart(text))
	}
	return parts
}

// transcriptText is the conversation, a line per turn with something in
// it: the speaker, a colon and a space, the turn's text as a JSON string,
// then each of its data values as JSON, space-separated. A turn's text and
// data are JSON on its own line, so nothing a participant says (a line
// break, "caller: ...") can end its turn or begin another's.
func transcriptText(turns []Turn) string {
	var b strings.Builder
	for _, t := range turns {
		text := strings.TrimSpace(t.Text)
		if text == "" && len(t.Data) == 0 {
			continue
		}
		b.WriteString(t.Speaker)
		b.WriteString(": ")
		b.WriteString(quote(text))
		for _, d := range t.Data {
			b.WriteByte(' ')
			b.WriteString(jsonText(d))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ReadTranscript reads the conversation of a group chat as the workflow
// writes it (the text part a speaker is given, the text of the transcript
// artifact), a turn per line: each turn's speaker, text and data. A
// participant written in Go reads who said what with it instead of
// matching lines. A line that is not a turn is an error.
func ReadTranscript(conversation string) ([]Turn, error) {
	var turns []Turn
	for i, line := range strings.Split(conversation, "\n") {
		if line == "" {
			continue
		}
		speaker, rest, ok := strings.Cut(line, ": ")
		if !ok || speaker == "" || strings.ContainsAny(speaker, `"`) {
			return nil, fmt.Errorf("workflow: transcript line %d is not a turn (speaker: \"text\")", i+1)
		}
		dec := json.NewDecoder(strings.NewReader(rest))
		dec.UseNumber()
		var text string
		if err := dec.Decode(&text); err != nil {
			return nil, fmt.Errorf("workflow: transcript line %d: %s's text is not a JSON string: %v", i+1, speaker, err)
		}
		turn := Turn{Speaker: speaker, Text: text}
		for dec.More() {
			var d any
			if err := dec.Decode(&d); err != nil {
				return nil, fmt.Errorf("workflow: transcript line %d: %s's data: %v", i+1, speaker, err)
			}
			turn.Data = append(turn.Data, d)
		}
		turns = append(turns, turn)
	}
	return turns, nil
}

// finish completes the workflow: its transcript as an artifact, and the
// participants' artifacts after it, in the order they were produced, each
// with a new ID and the metadata key "participant" naming who produced it.
func (w *workflow) finish(st *State) askpoint.Outcome {
	raw, _ := json.Marshal(st.Transcript)
	var transcript []map[string]any
	_ = json.Unmarshal(raw, &transcript)
	for _, t := range transcript {
		delete(t, "artifacts") // they follow as artifacts of their own
	}
	art := &a2a.Artifact{ID: a2a.NewArtifactID(), Name: "transcript", Parts: a2a.ContentParts{
		a2a.NewTextPart(transcriptText(st.Transcript)), a2a.NewDataPart(map[string]any{"transcript": transcript, "rounds": st.Rounds}),
	}}
	arts := []*a2a.Artifact{art}
	for _, t := range st.Transcript {
		for _, a := range t.Artifacts {
			if a == nil {
				continue
			}
			up := *a
			up.ID = a2a.NewArtifactID()
			up.Metadata = map[string]any{}
			for k, v := range a.Metadata {
				up.Metadata[k] = v
			}
			up.Metadata["participant"] = t.Speaker
			arts = append(arts, &up)
		}
	}
	turns := "turns"
	if st.Rounds == 1 {
		turns = "turn"
	}
	return askpoint.Complete(arts...).WithMessage(fmt.Sprintf("The workflow finished after %d %s.", st.Rounds, turns))
}

func (w *workflow) now() time.Time {
	if w.cfg.Relay.Now != nil {
		return w.cfg.Relay.Now()
	}
	return time.Now()
}

func (w *workflow) maxWait() time.Duration {
	if w.cfg.Relay.MaxWait > 0 {
		return w.cfg.Relay.MaxWait
	}
	return 24 * time.Hour
}

// replyText is a finished sub-task's reply: its artifacts' text, else its
// status message's.
func replyText(t *a2a.Task) string {
	var out []string
	for _, a := range t.Artifacts {
		if s := text.Parts(a.Parts, "\n"); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 && t.Status.Message != nil {
		out = append(out, text.Parts(t.Status.Message.Parts, "\n"))
	}
	return strings.Join(out, "\n")
}

// replyData is a finished sub-task's data parts: its artifacts', else its
// status message's. A handoff's {"handoff": NAME} is the workflow's, not
// data for the next participant.
func replyData(t *a2a.Task) []any {
	var out []any
	for _, a := range t.Artifacts {
		out = append(out, dataOf(a.Parts)...)
	}
	if len(out) == 0 && t.Status.Message != nil {
		out = dataOf(t.Status.Message.Parts)
	}
	kept := out[:0]
	for _, d := range out {
		if m, ok := d.(map[string]any); ok && len(m) == 1 {
			if _, isHandoff := m["handoff"]; isHandoff {
				continue
			}
		}
		kept = append(kept, d)
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}

// dataOf lists the values of data parts.
func dataOf(parts a2a.ContentParts) []any {
	var out []any
	for _, p := range parts {
		if p == nil {
			continue
		}
		if d, ok := p.Content.(a2a.Data); ok {
			out = append(out, d.Value)
		}
	}
	return out
}

// handoffOf reads {"handoff": "NAME"} from a finished sub-task's artifacts.
func handoffOf(t *a2a.Task) string {
	for _, a := range t.Artifacts {
		for _, p := range a.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if m, ok := d.Value.(map[string]any); ok {
					if s, ok := m["handoff"].(string); ok {
						return s
					}
				}
			}
		}
	}
	return ""
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "req-" + hex.EncodeToString(b[:])
}

func jsonText(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// quote is s as a JSON string, on one line, with &, < and > as they are.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
