// Package inbox is the caller's durable inbox: the questions that wait on a
// person, kept in a local SQLite file so that nothing waits in memory. A
// client loop that cannot answer a question from context or policy hands it
// to Person, the last resolver of its chain, which records the agent, task,
// context and question here and ends the loop; a person answers later
// (askpoint answer), possibly after the client process has exited, and the
// loop resumes from the item (Resume).
//
// The inbox builds on package client (client.Continue answers a paused
// question); the client does not know of the inbox, and links no SQLite.
//
// The inbox also learns of questions from A2A push notifications
// (NewPushHandler), so a caller does not have to poll its agents.
package inbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// EnvPath names the environment variable that overrides the inbox's
// default location.
const EnvPath = "ASKPOINT_INBOX"

// State is where an item stands.
type State string

// The states of an item. Open items are the ones that wait on a person.
const (
	StateOpen     State = "open"     // waits on a person
	StateAnswered State = "answered" // an answer was sent and the agent took it
	StateClosed   State = "closed"   // the question closed without an answer from this inbox (Note says why)
)

// Sources of items.
const (
	SourceClient = "client" // deferred by a client loop's person resolver
	SourcePush   = "push"   // learned from a push notification
)

// ErrNotFound is returned when no item has the ID asked for.
var ErrNotFound = errors.New("inbox: no such item")

// ErrBadEvent is returned when an event cannot be recorded (no task ID, an
// input-required status without a message).
var ErrBadEvent = errors.New("inbox: the event cannot be recorded")

// ErrWrongAgent is returned when an event names an agent other than the
// one the inbox has for the task: a notification never changes an item's
// agent, since the agent is where a person's answer (and the caller's
// bearer token) is sent.
var ErrWrongAgent = errors.New("inbox: the inbox has this task from another agent")

// ErrNotOpen is returned when an item that must be open is answered or
// closed already.
var ErrNotOpen = errors.New("inbox: the item is no longer open")

// Item is one question that waits (or waited) on a person.
type Item struct {
	ID    int64
	State State

	AgentURL  string // where to send the answer ("" when a push did not say)
	TaskID    string
	ContextID string

	// Key identifies the question within its task: the questionId of a
	// question-extension question, else the status message's ID.
	Key string
	// Question is the machine-readable question; nil when the agent asked in
	// text only.
	Question *question.Question
	// Text is what the agent asked, for a person.
	Text string
	// Status is the agent's status message that holds the question.
	Status *a2a.Message
	// Request is the message that started the task, when known.
	Request *a2a.Message

	Caller    string // on whose behalf the client asked
	Round     int    // this question's round in the client loop (1 for the first question)
	MaxRounds int    // the loop's cap on rounds (0: the client's default)
	Source    string // SourceClient or SourcePush

	Created time.Time
	Updated time.Time

	AnsweredBy string          // who answered (answered items)
	Answer     json.RawMessage // what was sent (answered items)
	Note       string          // why the item was closed
}

// Expires is when the question stops taking answers (zero when it did not
// say).
func (it *Item) Expires() time.Time {
	if it.Question == nil {
		return time.Time{}
	}
	return it.Question.Expires
}

// Options are the question's closed set of answers, if any.
func (it *Item) Options() []question.Option {
	if it.Question == nil {
		return nil
	}
	return it.Question.Options
}

// FromStatus builds an open item from an input-required status message.
func FromStatus(agentURL, taskID, contextID string, status *a2a.Message) *Item {
	it := &Item{
		State:    StateOpen,
		AgentURL: agentURL, TaskID: taskID, ContextID: contextID,
		Status: status, Key: client.QuestionKey(status),
	}
	it.fillQuestion()
	return it
}

// fillQuestion derives Question and Text from Status.
func (it *Item) fillQuestion() {
	if it.Status == nil {
		return
	}
	if q, ok, err := question.FromMessage(it.Status); ok && err == nil {
		it.Question = q
		it.Text = q.Text
		return
	}
	var texts []string
	for _, p := range it.Status.Parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok {
			texts = append(texts, string(t))
		}
	}
	it.Text = strings.Join(texts, "\n")
}

// Inbox is a durable inbox in one SQLite file. It is safe for concurrent
// use, also by several processes on the same file.
type Inbox struct {
	db   *sql.DB
	path string
	now  func() time.Time
}

// DefaultPath is where the inbox lives unless told otherwise: $ASKPOINT_INBOX
// when set, else inbox.db in the askpoint directory of the user's
// configuration directory (e.g. ~/.config/askpoint/inbox.db).
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("inbox: no default location (%v); set %s or pass a path", err, EnvPath)
	}
	return filepath.Join(dir, "askpoint", "inbox.db"), nil
}

const params = "_pragma=busy_timeout(10000)" +
	"&_pragma=journal_mode(WAL)" +
	"&_pragma=synchronous(FULL)" +
	"&_txlock=immediate"

const schema = `
CREATE TABLE IF NOT EXISTS items (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	state       TEXT    NOT NULL,
	agent_url   TEXT    NOT NULL DEFAULT '',
	task_id     TEXT    NOT NULL,
	context_id  TEXT    NOT NULL DEFAULT '',
	question_key TEXT   NOT NULL,
	text        TEXT    NOT NULL DEFAULT '',
	status      TEXT    NOT NULL DEFAULT '',
	request     TEXT    NOT NULL DEFAULT '',
	caller      TEXT    NOT NULL DEFAULT '',
	round       INTEGER NOT NULL DEFAULT 0,
	max_rounds  INTEGER NOT NULL DEFAULT 0,
	source      TEXT    NOT NULL DEFAULT '',
	expires     TEXT    NOT NULL DEFAULT '',
	created     TEXT    NOT NULL,
	updated     TEXT    NOT NULL,
	answered_by TEXT    NOT NULL DEFAULT '',
	answer      TEXT    NOT NULL DEFAULT '',
	note        TEXT    NOT NULL DEFAULT '',
	UNIQUE (task_id, question_key)
);
CREATE INDEX IF NOT EXISTS items_open ON items (state, id);
CREATE INDEX IF NOT EXISTS items_task ON items (task_id, state);
CREATE TABLE IF NOT EXISTS notices (
	item_id INTEGER NOT NULL,
	kind    TEXT    NOT NULL,
	sent    TEXT    NOT NULL,
	PRIMARY KEY (item_id, kind)
);
`

// Open opens (creating if need be, with its directory) the inbox file at
// path.
func Open(ctx context.Context, path string) (*Inbox, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("inbox: open %q: need the path of a database file", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("inbox: open %q: %w", path, err)
		}
	}
	// Questions may hold personal data: a new inbox is readable by its
	// owner only.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("inbox: open %q: %w", path, err)
	}
	f.Close()
	db, err := sql.Open("sqlite", fileURI(path)+"?"+params)
	if err != nil {
		return nil, fmt.Errorf("inbox: open %q: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("inbox: open %q: %w", path, err)
	}
	return &Inbox{db: db, path: path, now: time.Now}, nil
}

// Path is the inbox file's path.
func (ib *Inbox) Path() string { return ib.path }

// Close closes the file.
func (ib *Inbox) Close() error { return ib.db.Close() }

// Add records an open question. An item for the same task and question
// key is not added twice: the existing one is returned (with an empty agent
// URL, request or caller filled in from it), and created is false.
// Open items of the same task that ask another question are closed: a
// task has one open question at a time.
func (ib *Inbox) Add(ctx context.Context, it *Item) (stored *Item, created bool, err error) {
	if it.TaskID == "" {
		return nil, false, fmt.Errorf("%w: an item needs a task ID", ErrBadEvent)
	}
	if it.Key == "" {
		it.Key = client.QuestionKey(it.Status)
	}
	if it.Key == "" {
		return nil, false, fmt.Errorf("%w: an item needs a question key (a questionId, or a status message with a messageId)", ErrBadEvent)
	}
	status, err := marshalOrEmpty(it.Status)
	if err != nil {
		return nil, false, err
	}
	request, err := marshalOrEmpty(it.Request)
	if err != nil {
		return nil, false, err
	}
	if it.Status != nil && it.Text == "" && it.Question == nil {
		it.fillQuestion()
	}
	expires := ""
	if e := it.Expires(); !e.IsZero() {
		expires = e.UTC().Format(time.RFC3339Nano)
	}
	now := ib.now().UTC().Format(time.RFC3339Nano)
	source := it.Source
	if source == "" {
		source = SourceClient
	}

	tx, err := ib.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("inbox: add: %w", err)
	}
	defer tx.Rollback()
	var id int64
	err = tx.QueryRowContext(ctx, `SELECT id FROM items WHERE task_id = ? AND question_key = ?`, it.TaskID, it.Key).Scan(&id)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// A new question: the task's older open questions no longer take answers.
		if _, err := tx.ExecContext(ctx,
			`UPDATE items SET state = ?, note = ?, updated = ? WHERE task_id = ? AND state = ?`,
			StateClosed, "the task asked another question", now, it.TaskID, StateOpen); err != nil {
			return nil, false, fmt.Errorf("inbox: add: %w", err)
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO items
			(state, agent_url, task_id, context_id, question_key, text, status, request, caller, round, max_rounds, source, expires, created, updated)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			StateOpen, it.AgentURL, it.TaskID, it.ContextID, it.Key, it.Text, status, request, it.Caller,
			it.Round, it.MaxRounds, source, expires, now, now)
		if err != nil {
			return nil, false, fmt.Errorf("inbox: add: %w", err)
		}
		if id, err = res.LastInsertId(); err != nil {
			return nil, false, fmt.Errorf("inbox: add: %w", err)
		}
		created = true
	case err != nil:
		return nil, false, fmt.Errorf("inbox: add: %w", err)
	default:
		// Known already (a push and the client loop both saw it): fill in
		// what the first record lacked, and leave its state alone.
		if _, err := tx.ExecContext(ctx, `UPDATE items SET
			agent_url  = CASE WHEN agent_url = '' THEN ? ELSE agent_url END,
			context_id = CASE WHEN context_id = '' THEN ? ELSE context_id END,
			request    = CASE WHEN request = '' THEN ? ELSE request END,
			caller     = CASE WHEN caller = '' THEN ? ELSE caller END,
			round      = CASE WHEN round = 0 THEN ? ELSE round END,
			max_rounds = CASE WHEN max_rounds = 0 THEN ? ELSE max_rounds END,
			updated    = ?
			WHERE id = ?`,
			it.AgentURL, it.ContextID, request, it.Caller, it.Round, it.MaxRounds, now, id); err != nil {
			return nil, false, fmt.Errorf("inbox: add: %w", err)
		}
	}
	stored, err = scanItem(tx.QueryRowContext(ctx, `SELECT `+columns+` FROM items WHERE id = ?`, id))
	if err != nil {
		return nil, false, fmt.Errorf("inbox: add: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("inbox: add: %w", err)
	}
	return stored, created, nil
}

// Get returns the item with the given ID, or an error wrapping ErrNotFound.
func (ib *Inbox) Get(ctx context.Context, id int64) (*Item, error) {
	it, err := scanItem(ib.db.QueryRowContext(ctx, `SELECT `+columns+` FROM items WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %d (askpoint inbox lists the open ones)", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("inbox: get %d: %w", id, err)
	}
	return it, nil
}

// ListOptions filter List.
type ListOptions struct {
	All    bool   // also answered and closed items
	TaskID string // only this task's items
	// ByTask orders items by the first item of their task, then by ID, so
	// that a task's next question (a re-ask) takes the place of the last.
	ByTask bool
}

// List returns items oldest first: the open ones, or all with All.
func (ib *Inbox) List(ctx context.Context, opts ListOptions) ([]*Item, error) {
	q := `SELECT ` + columns + ` FROM items WHERE 1 = 1`
	var args []any
	if !opts.All {
		q += ` AND state = ?`
		args = append(args, StateOpen)
	}
	if opts.TaskID != "" {
		q += ` AND task_id = ?`
		args = append(args, opts.TaskID)
	}
	if opts.ByTask {
		q += ` ORDER BY (SELECT MIN(f.id) FROM items f WHERE f.task_id = items.task_id), id`
	} else {
		q += ` ORDER BY id`
	}
	rows, err := ib.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("inbox: list: %w", err)
	}
	defer rows.Close()
	var out []*Item
	for rows.Next() {
		it, err := scanItem(rows)
		if err != nil {
			return nil, fmt.Errorf("inbox: list: %w", err)
		}
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("inbox: list: %w", err)
	}
	return out, nil
}

// Version changes whenever an item is added or changes state, also by
// another process on the same file; watchers compare it to learn of
// changes.
func (ib *Inbox) Version(ctx context.Context) (string, error) {
	var (
		n, maxID int64
		updated  string
	)
	err := ib.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MAX(id), 0), COALESCE(MAX(updated), '') FROM items`).Scan(&n, &maxID, &updated)
	if err != nil {
		return "", fmt.Errorf("inbox: version: %w", err)
	}
	return fmt.Sprintf("%d.%d.%s", n, maxID, updated), nil
}

// Notified says whether a notice of kind (e.g. "new", "reminder-1") was
// recorded for item id.
func (ib *Inbox) Notified(ctx context.Context, id int64, kind string) (bool, error) {
	var one int
	err := ib.db.QueryRowContext(ctx, `SELECT 1 FROM notices WHERE item_id = ? AND kind = ?`, id, kind).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("inbox: notices of item %d: %w", id, err)
	}
	return true, nil
}

// MarkNotified records that a notice of kind went out for item id, so that
// it goes out once even across restarts. first is false when it was
// recorded already.
func (ib *Inbox) MarkNotified(ctx context.Context, id int64, kind string) (first bool, err error) {
	res, err := ib.db.ExecContext(ctx, `INSERT OR IGNORE INTO notices (item_id, kind, sent) VALUES (?, ?, ?)`,
		id, kind, ib.now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return false, fmt.Errorf("inbox: record a notice of item %d: %w", id, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// MarkAnswered records that the open item id was answered by who with
// answer (what was sent). It fails with ErrNotOpen when the item is no
// longer open.
func (ib *Inbox) MarkAnswered(ctx context.Context, id int64, by string, answer json.RawMessage) error {
	return ib.finish(ctx, id, StateAnswered, by, answer, "")
}

// Dismiss closes the open item id without an answer from this inbox; note
// says why (the task moved on, ended, the question expired, ...). It fails
// with ErrNotOpen when the item is no longer open.
func (ib *Inbox) Dismiss(ctx context.Context, id int64, note string) error {
	return ib.finish(ctx, id, StateClosed, "", nil, note)
}

func (ib *Inbox) finish(ctx context.Context, id int64, state State, by string, answer json.RawMessage, note string) error {
	now := ib.now().UTC().Format(time.RFC3339Nano)
	res, err := ib.db.ExecContext(ctx,
		`UPDATE items SET state = ?, answered_by = ?, answer = ?, note = ?, updated = ? WHERE id = ? AND state = ?`,
		state, by, string(answer), note, now, id, StateOpen)
	if err != nil {
		return fmt.Errorf("inbox: item %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	it, err := ib.Get(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("%w: item %d is %s", ErrNotOpen, id, it.StateText())
}

// StateText says where an item stands in words, for messages to people:
// "open", "answered already (by alice)", "closed: expired".
func (it *Item) StateText() string {
	switch it.State {
	case StateAnswered:
		if it.AnsweredBy != "" {
			return "answered already (by " + it.AnsweredBy + ")"
		}
		return "answered already"
	case StateClosed:
		if it.Note != "" {
			return "closed: " + it.Note
		}
		return "closed"
	}
	return string(it.State)
}

// Observe updates the inbox from what an agent reported about a task (a
// push notification, a poll): a task in input-required adds its question
// (and closes the task's older open questions); a task in any other state
// closes the task's open items, since their questions no longer take
// answers. Items are matched by (agent, task): agentURL may be "", and then
// the agent the inbox already has for the task is the one; an event that
// names another agent than the inbox has for the task changes nothing and
// gets an error wrapping ErrWrongAgent. Observe returns the item added or found for an
// input-required task (created says which), nil otherwise. An event that
// cannot be recorded gets an error wrapping ErrBadEvent.
func (ib *Inbox) Observe(ctx context.Context, agentURL string, ev a2a.Event) (it *Item, created bool, err error) {
	var (
		taskID, contextID string
		status            a2a.TaskStatus
	)
	switch v := ev.(type) {
	case *a2a.Task:
		taskID, contextID, status = string(v.ID), v.ContextID, v.Status
	case *a2a.TaskStatusUpdateEvent:
		taskID, contextID, status = string(v.TaskID), v.ContextID, v.Status
	default:
		return nil, false, nil
	}
	if taskID == "" {
		return nil, false, fmt.Errorf("%w: it names no task", ErrBadEvent)
	}
	// Items are matched by (agent, task): the agent an item has is the
	// one it keeps, and an event naming another is refused.
	known, err := ib.agentsForTask(ctx, taskID)
	if err != nil {
		return nil, false, fmt.Errorf("inbox: observe: %w", err)
	}
	switch {
	case agentURL == "" && len(known) == 1:
		agentURL = known[0]
	case agentURL == "" && len(known) > 1:
		return nil, false, fmt.Errorf("%w: task %s is known from %d agents and the event names none", ErrBadEvent, taskID, len(known))
	case agentURL != "" && len(known) > 0 && !slices.Contains(known, agentURL):
		return nil, false, fmt.Errorf("%w: task %s is from %s, not %s", ErrWrongAgent, taskID, known[0], agentURL)
	}
	if status.State != a2a.TaskStateInputRequired {
		if status.State == a2a.TaskStateAuthRequired {
			return nil, false, nil
		}
		now := ib.now().UTC().Format(time.RFC3339Nano)
		_, err := ib.db.ExecContext(ctx,
			`UPDATE items SET state = ?, note = ?, updated = ? WHERE task_id = ? AND agent_url = ? AND state = ?`,
			StateClosed, "the task is now "+text.StateWord(status.State), now, taskID, agentURL, StateOpen)
		if err != nil {
			return nil, false, fmt.Errorf("inbox: observe: %w", err)
		}
		return nil, false, nil
	}
	if status.Message == nil {
		return nil, false, fmt.Errorf("%w: task %s is input-required without a status message, so there is no question to record", ErrBadEvent, taskID)
	}
	it = FromStatus(agentURL, taskID, contextID, status.Message)
	it.Source = SourcePush
	prev, err := ib.latestForTask(ctx, agentURL, taskID)
	if err != nil {
		return nil, false, fmt.Errorf("inbox: observe: %w", err)
	}
	if prev != nil && prev.Key != it.Key {
		// Carry the loop's bookkeeping over to the task's next question.
		it.Request, it.Caller, it.MaxRounds = prev.Request, prev.Caller, prev.MaxRounds
		if prev.Round > 0 {
			it.Round = prev.Round + 1
		}
	}
	return ib.Add(ctx, it)
}

// agentsForTask lists the agents the inbox has items of taskID from.
func (ib *Inbox) agentsForTask(ctx context.Context, taskID string) ([]string, error) {
	rows, err := ib.db.QueryContext(ctx, `SELECT DISTINCT agent_url FROM items WHERE task_id = ? AND agent_url <> '' ORDER BY agent_url`, taskID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (ib *Inbox) latestForTask(ctx context.Context, agentURL, taskID string) (*Item, error) {
	it, err := scanItem(ib.db.QueryRowContext(ctx,
		`SELECT `+columns+` FROM items WHERE task_id = ? AND agent_url = ? ORDER BY id DESC LIMIT 1`, taskID, agentURL))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return it, err
}

const columns = `id, state, agent_url, task_id, context_id, question_key, text, status, request, caller,
	round, max_rounds, source, created, updated, answered_by, answer, note`

type scanner interface{ Scan(dest ...any) error }

func scanItem(s scanner) (*Item, error) {
	var (
		it                             Item
		state, status, request, answer string
		created, updated               string
	)
	if err := s.Scan(&it.ID, &state, &it.AgentURL, &it.TaskID, &it.ContextID, &it.Key, &it.Text, &status, &request, &it.Caller,
		&it.Round, &it.MaxRounds, &it.Source, &created, &updated, &it.AnsweredBy, &answer, &it.Note); err != nil {
		return nil, err
	}
	it.State = State(state)
	if status != "" {
		var m a2a.Message
		if err := json.Unmarshal([]byte(status), &m); err != nil {
			return nil, fmt.Errorf("item %d: status message: %w", it.ID, err)
		}
		it.Status = &m
		text := it.Text
		it.fillQuestion()
		if it.Text == "" {
			it.Text = text
		}
	}
	if request != "" {
		var m a2a.Message
		if err := json.Unmarshal([]byte(request), &m); err != nil {
			return nil, fmt.Errorf("item %d: request: %w", it.ID, err)
		}
		it.Request = &m
	}
	if answer != "" {
		it.Answer = json.RawMessage(answer)
	}
	it.Created, _ = time.Parse(time.RFC3339Nano, created)
	it.Updated, _ = time.Parse(time.RFC3339Nano, updated)
	return &it, nil
}

func marshalOrEmpty(m *a2a.Message) (string, error) {
	if m == nil {
		return "", nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("inbox: encode message: %w", err)
	}
	return string(raw), nil
}

// fileURI turns a file name into an SQLite URI filename, escaping the
// characters that would otherwise start a query, a fragment or an escape.
func fileURI(path string) string {
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	p := r.Replace(path)
	if strings.HasPrefix(path, "/") {
		return "file://" + p
	}
	return "file:" + p
}
