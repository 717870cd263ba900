package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
)

// How questions fared, read back from the store: askpoint stats --db
// replays the tasks' logs instead of counting at commit (observe.go). The
// log already holds every fact the observer counts, in the entries commit
// wrote:
//   - an ask is a status entry (input-required) whose message carries the
//     question's data part; while a question is open, another such entry
//     is a re-ask (handler.answer replaced it after an invalid answer);
//   - a caller's message while a question is open is followed, in the
//     same write, by what it did: a working status (it resumed the task:
//     answered, or declined when its data part says so), a re-ask, a
//     canceled status (the cancel action) or a failed one (attempts used
//     up);
//   - a status with no message before it closes the question otherwise:
//     at or after its expiry it is the expiry (fail, cancel, or the
//     default answer's working status), else a cancel (CancelTask) or an
//     end (a wake's resume).
// Reminders are entries of their own kind and change nothing.

// QuestionFate is how one pause's question fared, as the observer counts
// it: Asked at the pause's first question, the re-asks of the pause, and
// how and when it closed (End "" while it is still open).
type QuestionFate struct {
	TaskID, Agent, Kind string
	Asked               time.Time
	Reasks              int
	End                 api.QuestionEnd
	At                  time.Time // when it closed
}

// Waited is how long after the pause's first question it closed.
func (f QuestionFate) Waited() time.Duration { return f.At.Sub(f.Asked) }

// QuestionLogKinds are the log entry kinds QuestionLog reads.
var QuestionLogKinds = []store.Kind{store.KindMessage, store.KindStatus}

// QuestionLog replays task logs, fed entry by entry in store.ScanLogs
// order (one task's entries together, oldest first), into the fate of
// every question they asked. It keeps only the task being read.
type QuestionLog struct {
	emit  func(QuestionFate)
	task  string
	open  *QuestionFate
	q     *question.Question // the open question, as last asked
	reply *store.LogEntry    // the caller's message since it was asked
}

// NewQuestionLog returns a QuestionLog that calls emit with each
// question's fate, open ones included (when their task's entries end).
func NewQuestionLog(emit func(QuestionFate)) *QuestionLog {
	return &QuestionLog{emit: emit}
}

// Entry reads the next entry of task taskID, served by agent. An entry
// that does not decode is an error naming the task and the entry.
func (l *QuestionLog) Entry(taskID, agent string, e store.LogEntry) error {
	if taskID != l.task {
		l.Flush()
		l.task = taskID
	}
	switch e.Kind {
	case store.KindMessage:
		if l.open != nil {
			l.reply = &e
		}
		return nil
	case store.KindStatus:
	default:
		return nil
	}
	var ev a2a.TaskStatusUpdateEvent
	if err := json.Unmarshal(e.Body, &ev); err != nil {
		return fmt.Errorf("task %s, log entry %d: decode the status: %w", taskID, e.Seq, err)
	}
	state := ev.Status.State
	if state == a2a.TaskStateInputRequired {
		q, ok, err := question.FromMessage(ev.Status.Message)
		if err != nil || !ok {
			return nil // input-required without a question: nothing asked
		}
		if l.open != nil {
			if q.ID != l.q.ID {
				l.open.Reasks++
				l.q, l.reply = q, nil
			}
			return nil
		}
		l.open = &QuestionFate{TaskID: taskID, Agent: agent, Kind: schemaKind(q.Schema), Asked: e.At}
		l.q, l.reply = q, nil
		return nil
	}
	if l.open == nil {
		return nil
	}
	f := l.open
	f.At = e.At
	switch {
	case l.reply != nil && state == a2a.TaskStateWorking:
		f.End = api.QuestionAnswered
		if l.declined(l.reply) {
			f.End = api.QuestionDeclined
		}
	case l.reply != nil && state == a2a.TaskStateCanceled:
		f.End = api.QuestionCanceled
	case l.reply != nil:
		f.End = api.QuestionEnded
	case !l.q.Expires.IsZero() && !e.At.Before(l.q.Expires.Truncate(time.Millisecond)):
		f.End = api.QuestionExpired
	case state == a2a.TaskStateCanceled:
		f.End = api.QuestionCanceled
	default:
		f.End = api.QuestionEnded
	}
	l.emit(*f)
	l.open, l.q, l.reply = nil, nil, nil
	return nil
}

// declined reports whether the caller's message that resumed the open
// question declined it, read as the engine read it (question.Parse).
func (l *QuestionLog) declined(e *store.LogEntry) bool {
	var m a2a.Message
	if json.Unmarshal(e.Body, &m) != nil {
		return false
	}
	ans, _, err := question.Parse(&m, l.q, math.MaxInt)
	return err == nil && ans != nil && ans.Action == question.ActionDecline
}

// Flush ends the task being read: its question still open, if any, is
// emitted with End "". Call it once after the last entry.
func (l *QuestionLog) Flush() {
	if l.open != nil {
		l.emit(*l.open)
	}
	l.task, l.open, l.q, l.reply = "", nil, nil, nil
}
