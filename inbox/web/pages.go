package web

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

func staticFS() fs.FS {
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		panic(err) // the directory is embedded
	}
	return sub
}

var funcs = template.FuncMap{
	"rfc3339": func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	// short is an ID's end: task IDs made one after another (UUIDv7)
	// share their start.
	"short": func(s string) string {
		if r := []rune(s); len(r) > 8 {
			return "…" + string(r[len(r)-8:])
		}
		return s
	},
	"join": strings.Join,
	"dv":   question.DisplayValue,
	"base": func() string { return "" },
	"isString": func(v any) bool {
		_, ok := v.(string)
		return ok
	},
	"deref": func(n *int) int { return *n },
}

// row is one question in the list.
type row struct {
	Item     *inbox.Item
	Link     string // the question's form
	TaskLink string // the task's history ("" for none)
	Agent    string
	Text     string
	Request  string // the start of the request that started the task
	Subject  string // the question's subject, in brief
	Holds    string // what the task holds and for how long, in brief
	Expires  time.Time
	Left     string
	Attempt  string
	About    []string
	Fields   int
	Options  []string
	Answered string // in the answered view: what became of it
}

// newRow is the list's row of an item.
func newRow(it *inbox.Item, now time.Time, maxAttempts int) row {
	r := row{Item: it, Agent: it.AgentURL, Text: it.Text, Expires: it.Expires(), About: about(it),
		Request: brief(requestText(it.Request), 140), Subject: strings.Join(subjectOf(it.Question), ", ")}
	if r.Agent == "" {
		r.Agent = "(unknown agent)"
	}
	if !r.Expires.IsZero() {
		r.Left = client.HumanDuration(r.Expires.Sub(now))
	}
	r.Attempt = attemptText(it.Question, maxAttempts)
	var held []string
	for _, h := range holdsOf(it.Question, now) {
		if h.Gone {
			held = append(held, h.Name+" (released)")
		} else {
			held = append(held, h.Name+" (for "+h.Left+")")
		}
	}
	r.Holds = strings.Join(held, ", ")
	if q := it.Question; q != nil {
		r.Fields = len(q.Fields())
		for _, o := range q.Options {
			r.Options = append(r.Options, question.FieldOption{Value: o.Value, Label: o.Label}.Text())
		}
	}
	return r
}

func (s *Server) rows(ctx context.Context, p *Person, lq listQuery) ([]row, error) {
	var items []*inbox.Item
	var err error
	if lq.View == viewAnswered {
		items, err = s.ib.List(ctx, inbox.ListOptions{All: true})
	} else {
		items, err = s.open(ctx)
	}
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []row
	for _, it := range items {
		if !p.sees(it.Caller) || (lq.View == viewAnswered && it.State == inbox.StateOpen) {
			continue
		}
		r := newRow(it, now, s.maxAttempts(it))
		r.Link, r.TaskLink = "/q/"+strconv.FormatInt(it.ID, 10), "/tasks/"+it.TaskID
		if lq.View == viewAnswered {
			r.Answered = string(it.State)
			if it.AnsweredBy != "" {
				r.Answered += " by " + it.AnsweredBy
			}
			if it.Note != "" {
				r.Answered += ": " + it.Note
			}
		}
		out = append(out, r)
	}
	return lq.apply(out), nil
}

// attemptText is "attempt N of M" ("attempt N" when neither the question
// nor its agent's card says M).
func attemptText(q *question.Question, m int) string {
	if q == nil {
		return ""
	}
	if m > 0 {
		return fmt.Sprintf("attempt %d of %d", max(q.Attempt, 1), m)
	}
	return fmt.Sprintf("attempt %d", max(q.Attempt, 1))
}

// about says whom the question is about: the caller it was asked for and
// the question's own "about".
func about(it *inbox.Item) []string {
	var out []string
	if it.Caller != "" {
		out = append(out, "for "+it.Caller)
	}
	if it.Question != nil {
		keys := make([]string, 0, len(it.Question.About))
		for k := range it.Question.About {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, question.Humanize(k)+" "+it.Question.About[k])
		}
	}
	return out
}

type page struct {
	Title  string
	Person string
	CSRF   string
	Body   any
	Live   string // what the page's script follows: "list" or "item"
	Since  string // the version tag the list was read at (Server.events)
	Notice string
}

func (s *Server) page(sess *session, title, live string, body any) page {
	return page{Title: title, Person: sess.person.Name, CSRF: s.sess.csrf(sess), Body: body, Live: live}
}

func (s *Server) listPage(w http.ResponseWriter, r *http.Request, sess *session) {
	since, _ := s.wait() // before the read: the rows are at least this new
	lq := readListQuery(r)
	all, err := s.rows(r.Context(), sess.person, listQuery{View: lq.View})
	if err != nil {
		s.fail(w, "list the inbox", err)
		return
	}
	v := listedView(all, lq)
	v.Heading, v.Intro = "Waiting on you", "Questions that agents could not answer from facts or policy. The list updates by itself."
	title := "Inbox"
	if lq.View == viewAnswered {
		v.Heading, v.Intro, title = "Answered", "Questions of this inbox that were answered, declined, withdrawn or expired.", "Answered"
	}
	p := s.page(sess, title, "list", v)
	p.Since = since
	s.render(w, http.StatusOK, "list.html", p)
}

func (s *Server) listFragment(w http.ResponseWriter, r *http.Request, sess *session) {
	rows, err := s.rows(r.Context(), sess.person, readListQuery(r))
	if err != nil {
		s.fail(w, "list the inbox", err)
		return
	}
	s.render(w, http.StatusOK, "rows", rows)
}

func (s *Server) fail(w http.ResponseWriter, what string, err error) {
	s.log.Error("web inbox: "+what, slog.Any("error", err))
	http.Error(w, "could not "+what+"; see the inbox's log", http.StatusInternalServerError)
}

// item reads the item of the path, if the person may see it.
func (s *Server) item(w http.ResponseWriter, r *http.Request, sess *session) *inbox.Item {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.Error(w, fmt.Sprintf("%q is not a question number", r.PathValue("id")), http.StatusBadRequest)
		return nil
	}
	it, err := s.ib.Get(r.Context(), id)
	if errors.Is(err, inbox.ErrNotFound) || (err == nil && !sess.person.sees(it.Caller)) {
		http.Error(w, fmt.Sprintf("there is no question %d in this inbox", id), http.StatusNotFound)
		return nil
	}
	if err != nil {
		s.fail(w, "read the question", err)
		return nil
	}
	return it
}

// form is the view of one question's form.
type form struct {
	Item     *inbox.Item
	Action   string // where the form posts
	StateURL string // where the page asks whether the question is still open
	TaskLink string // the task's history ("" for none)
	Q        *question.Question
	Text     string
	Request  string   // what started the task
	Subject  []string // what the question is about, for machines, in words
	Holds    []holdView
	Attempt  string
	About    []string
	Expires  time.Time
	Left     string
	Fields   []fieldView
	General  []string // errors that name no field
	Closed   string   // why the question no longer takes answers ("" if open)
	Next     int64    // the task's open question that replaced this one
	Justify  string
	// OwnReason is the question's own field for the person's reason
	// (question.ReasonField): the form then has no justification box of
	// its own.
	OwnReason string
	Problem   string // the agent could not be reached, ...
	Notice    string
	ReAsked   bool
	TextOnly  bool
	Typed     string
}

// fieldView is one field with what the person typed and its errors.
type fieldView struct {
	question.Field
	ID          string
	Input       string   // the form's name for it (fieldPrefix and its name)
	Value       string   // what the input holds
	Errors      []string // shown next to the field
	Rules       string   // its constraints in words
	IsOption    bool     // the question's option field: choices, and typing a value or label
	Typed       string
	OptionsJSON string // for the page's check
	Min, Max    string
	Describedby string // the IDs of what describes the input: its hint, rules, errors
	Proposed    string // what the agent proposes (the schema's default), "" for nothing
}

// The form's names for what a person enters: an agent's field is
// "field.NAME" and what is typed for an option field "typed.NAME"; the
// inbox's own (csrf, action, justification, reason, answer) have no dot,
// so no field of an agent's, whatever its name, meets them (decision
// 0130).
const (
	fieldPrefix = "field."
	typedPrefix = "typed."
)

// formInputs reads a posted form's answer: what each of the agent's fields
// holds, and what was typed for option fields, by field name.
func formInputs(v url.Values) (inputs, typed map[string]string) {
	inputs, typed = map[string]string{}, map[string]string{}
	for k, vs := range v {
		if len(vs) == 0 {
			continue
		}
		if name, ok := strings.CutPrefix(k, fieldPrefix); ok {
			inputs[name] = vs[len(vs)-1]
		} else if name, ok := strings.CutPrefix(k, typedPrefix); ok {
			typed[name] = vs[len(vs)-1]
		}
	}
	return inputs, typed
}

// parseAnswer reads the form's answer to q: a typed option stands in for
// an option field left empty. The errors are the answer's.
func parseAnswer(q *question.Question, inputs, typed map[string]string) (map[string]any, []question.FieldError) {
	for _, fd := range q.Fields() {
		if strings.TrimSpace(inputs[fd.Name]) == "" && strings.TrimSpace(typed[fd.Name]) != "" {
			inputs[fd.Name] = typed[fd.Name]
		}
	}
	return q.ParseForm(inputs)
}

// justificationOf is the decision's justification: the inbox's box, else
// the question's own reason field.
func justificationOf(q *question.Question, box string, fields map[string]any) string {
	if box != "" || q == nil {
		return box
	}
	if rf := q.ReasonField(); rf != "" {
		if s, ok := fields[rf].(string); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

func (s *Server) formView(ctx context.Context, it *inbox.Item, inputs, typed map[string]string, errs []question.FieldError) *form {
	id := strconv.FormatInt(it.ID, 10)
	f := &form{Item: it, Q: it.Question, Text: it.Text, About: about(it), Expires: it.Expires(),
		Request: requestText(it.Request), Subject: subjectOf(it.Question),
		Action: "/q/" + id, StateURL: "/q/" + id + "/state", TaskLink: "/tasks/" + it.TaskID}
	now := s.now()
	if !f.Expires.IsZero() {
		f.Left = client.HumanDuration(f.Expires.Sub(now))
	}
	f.Holds = holdsOf(it.Question, now)
	switch {
	case it.State != inbox.StateOpen:
		f.Closed = string(it.State)
		if it.Note != "" {
			f.Closed += ": " + it.Note
		}
		if it.State == inbox.StateAnswered && it.AnsweredBy != "" {
			f.Closed += " by " + it.AnsweredBy
		}
		if next, _ := s.nextOpen(ctx, it); next != nil {
			f.Next = next.ID
		}
	case !f.Expires.IsZero() && !f.Expires.After(now):
		f.Closed = "expired at " + f.Expires.UTC().Format(time.RFC3339)
	}
	q := it.Question
	if q == nil {
		f.TextOnly = true
		f.Typed = inputs[""]
		return f
	}
	fillFields(f, q, inputs, typed, errs, s.maxAttempts(it))
	return f
}

// fillFields sets the form's fields from the question: what was typed (or
// what the agent proposes), and the errors next to the fields they name
// (the agent's re-ask errors when nothing was typed yet), in words.
func fillFields(f *form, q *question.Question, inputs, typed map[string]string, errs []question.FieldError, maxAttempts int) {
	f.Attempt = attemptText(q, maxAttempts)
	f.ReAsked = q.Attempt > 1
	f.OwnReason = q.ReasonField()
	shown := errs
	if shown == nil && inputs == nil {
		shown = q.Errors // the agent's re-ask errors
	}
	byField := q.ErrorsByField(shown)
	f.General = byField[""]
	proposed := q.Proposed()
	optionField := q.OptionField()
	for i, fd := range q.Fields() {
		v := fieldView{Field: fd, ID: "f" + strconv.Itoa(i), Input: fieldPrefix + fd.Name, Rules: fd.Rules()}
		for _, e := range byField[fd.Name] {
			v.Errors = append(v.Errors, fd.Explain(e))
		}
		// A yes or no needs no typing: only other option fields take a
		// typed value or label.
		v.IsOption = fd.Name == optionField && len(q.Options) > 0 && !fd.Is("boolean")
		if inputs != nil {
			v.Value = inputs[fd.Name]
			v.Typed = typed[fd.Name]
		} else if pv, ok := proposed[fd.Name]; ok {
			v.Value = question.DisplayValue(pv)
		}
		var by []string
		if pv, ok := proposed[fd.Name]; ok {
			v.Proposed = question.DisplayValue(pv)
			for _, o := range fd.Options { // a choice is proposed by its label
				if question.DisplayValue(o.Value) == v.Proposed {
					v.Proposed = o.Text()
				}
			}
			by = append(by, v.ID+"-proposed")
		}
		if fd.Description != "" {
			by = append(by, v.ID+"-hint")
		}
		if v.Rules != "" {
			by = append(by, v.ID+"-rules")
		}
		v.Describedby = strings.Join(append(by, v.ID+"-errors"), " ")
		type opt struct {
			V string `json:"v"`
			L string `json:"l,omitempty"`
		}
		var opts []opt
		for _, o := range fd.Options {
			opts = append(opts, opt{V: question.DisplayValue(o.Value), L: o.Label})
		}
		raw, _ := json.Marshal(opts)
		v.OptionsJSON = string(raw)
		if fd.Minimum != nil {
			v.Min = strconv.FormatFloat(*fd.Minimum, 'g', -1, 64)
		}
		if fd.Maximum != nil {
			v.Max = strconv.FormatFloat(*fd.Maximum, 'g', -1, 64)
		}
		f.Fields = append(f.Fields, v)
	}
}

// nextOpen is the open item of the same task asked after it, if any.
func (s *Server) nextOpen(ctx context.Context, it *inbox.Item) (*inbox.Item, error) {
	items, err := s.ib.List(ctx, inbox.ListOptions{TaskID: it.TaskID})
	if err != nil {
		return nil, err
	}
	for _, o := range items {
		if o.ID > it.ID {
			return o, nil
		}
	}
	return nil, nil
}

func (s *Server) formPage(w http.ResponseWriter, r *http.Request, sess *session) {
	it := s.item(w, r, sess)
	if it == nil {
		return
	}
	f := s.formView(r.Context(), it, nil, nil, nil)
	f.Notice = s.sess.notice(r, sess)
	s.render(w, http.StatusOK, "form.html", s.page(sess, titleOf(it.Text), "item", f))
}

// itemState tells a form page whether its question still takes answers.
func (s *Server) itemState(w http.ResponseWriter, r *http.Request, sess *session) {
	it := s.item(w, r, sess)
	if it == nil {
		return
	}
	f := s.formView(r.Context(), it, nil, nil, nil)
	out := map[string]any{"open": f.Closed == "", "closed": f.Closed}
	if f.Next != 0 {
		out["next"] = "/q/" + strconv.FormatInt(f.Next, 10)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// checkPost is what a form's field holds, checked as the answer will be
// (fieldCheck): the page asks it for the fields with a pattern, so that
// no agent's pattern runs in the browser's backtracking engine.
func (s *Server) checkPost(w http.ResponseWriter, r *http.Request, sess *session) {
	if it := s.item(w, r, sess); it != nil {
		fieldCheck(w, r, it.Question)
	}
}

// fieldCheck answers a form's field=NAME&value=TEXT with the errors the
// answer would get for that field alone, as JSON {"errors": [...]}: the
// words of question.ParseForm, and the pattern run by Go's regexp, whose
// time grows with the text, not with the pattern's backtracking.
func fieldCheck(w http.ResponseWriter, r *http.Request, q *question.Question) {
	name, value := r.PostForm.Get("field"), strings.TrimSpace(r.PostForm.Get("value"))
	var fd *question.Field
	for _, f := range q.Fields() {
		if f.Name == name {
			fd = &f
		}
	}
	if fd == nil {
		http.Error(w, fmt.Sprintf("the question has no field %q", name), http.StatusBadRequest)
		return
	}
	var msgs []string
	switch v, err := fd.Parse(value); {
	case value == "" && fd.Required:
		msgs = append(msgs, "missing required field "+name)
	case value == "":
	case err != nil:
		msgs = append(msgs, err.Error())
	default:
		raw, err := json.Marshal(map[string]any{name: v})
		if err != nil {
			msgs = append(msgs, "the value cannot be encoded as JSON: "+err.Error())
			break
		}
		msgs = append(msgs, q.ErrorsByField(q.Validate(raw))[name]...)
	}
	errs := []string{}
	for _, m := range msgs {
		errs = append(errs, fd.Explain(m))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string][]string{"errors": errs})
}

// answerPost takes a form: an answer (checked exactly as the terminal and
// the agent check it, before anything is sent), a decline or a cancel.
func (s *Server) answerPost(w http.ResponseWriter, r *http.Request, sess *session) {
	it := s.item(w, r, sess)
	if it == nil {
		return
	}
	title := titleOf(it.Text)
	inputs, typed := formInputs(r.PostForm)
	if it.Question == nil {
		inputs[""] = r.PostForm.Get("answer")
	}
	justification := strings.TrimSpace(r.PostForm.Get("justification"))
	again := func(status int, errs []question.FieldError, problem string) {
		f := s.formView(r.Context(), it, inputs, typed, errs)
		f.Justify, f.Problem = justification, problem
		s.render(w, status, "form.html", s.page(sess, title, "item", f))
	}
	if f := s.formView(r.Context(), it, nil, nil, nil); f.Closed != "" {
		again(http.StatusConflict, nil, "This question no longer takes answers ("+f.Closed+"). Nothing was sent.")
		return
	}

	ans := client.Answer{By: client.ByPerson, Person: sess.person.Name, Via: Via, Justification: justification}
	switch act := r.PostForm.Get("action"); act {
	case question.ActionDecline, question.ActionCancel:
		ans.Action = act
		ans.Reason = strings.TrimSpace(r.PostForm.Get("reason"))
		if ans.Justification == "" {
			ans.Justification = ans.Reason
		}
	case "", "answer":
		if it.Question == nil {
			ans.Text = strings.TrimSpace(inputs[""])
			if ans.Text == "" {
				again(http.StatusUnprocessableEntity, nil, "An answer is needed.")
				return
			}
			break
		}
		fields, errs := parseAnswer(it.Question, inputs, typed)
		if len(errs) > 0 {
			again(http.StatusUnprocessableEntity, errs, "")
			return
		}
		ans.Fields = fields
		ans.Justification = justificationOf(it.Question, justification, fields)
	default:
		http.Error(w, fmt.Sprintf("unknown action %q (answer, decline or cancel)", act), http.StatusBadRequest)
		return
	}

	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.AnswerTimeout)
	defer cancel()
	resolvers := append(append([]client.Resolver(nil), s.cfg.Resolvers...), inbox.Person{Inbox: s.ib})
	opts := append(append([]client.Option(nil), s.cfg.Options...), client.WithResolvers(resolvers...))
	res, err := inbox.Resume(ctx, s.ib, it.ID, ans, opts...)
	s.look(ctx)
	var (
		invalid  *client.InvalidAnswerError
		deferred *inbox.DeferredError
		ended    *client.EndedError
	)
	switch {
	case errors.As(err, &invalid):
		again(http.StatusUnprocessableEntity, invalid.Errors, "")
	case errors.As(err, &deferred):
		// The agent asked again (a re-ask, or its next question): that
		// question takes this one's place.
		s.log.Info("web inbox: answered; the task asks again", slog.String("person", sess.person.Name), slog.Int64("item", it.ID), slog.Int64("next", deferred.Item.ID))
		http.Redirect(w, r, "/q/"+strconv.FormatInt(deferred.Item.ID, 10), http.StatusSeeOther)
	case err == nil, errors.As(err, &ended), errors.Is(err, client.ErrKeptAsking):
		s.log.Info("web inbox: answered", slog.String("person", sess.person.Name), slog.Int64("item", it.ID), slog.String("task", it.TaskID), slog.String("state", string(res.State())))
		http.Redirect(w, r, "/tasks/"+it.TaskID+"?item="+strconv.FormatInt(it.ID, 10), http.StatusSeeOther)
	case errors.Is(err, client.ErrStale):
		again(http.StatusConflict, nil, "This question no longer takes answers; nothing was sent: "+err.Error())
	default:
		s.log.Warn("web inbox: the answer could not be delivered", slog.Int64("item", it.ID), slog.Any("error", err))
		again(http.StatusBadGateway, nil, "The answer could not be delivered to the agent; the question stays open. ("+err.Error()+")")
	}
}

// historyEntry is one message of a task's history.
type historyEntry struct {
	Role     string
	Text     string
	Data     []dataView
	Question *question.Question
	Decision *question.Decision
	Verb     string // the decision in words
	Digest   string // "matches" or "differs" when the decision names a question of the history
}

// artifactView is one of the task's artifacts, readable: its text and its
// data parts as lists of keys and values.
type artifactView struct {
	Name string
	Text string
	Data []dataView
}

// taskView is a task's history: the inbox's items and, read from the agent,
// the task's messages with each answer's decision record.
type taskView struct {
	TaskID    string
	Agent     string
	Items     []*inbox.Item
	State     string
	Outcome   string // what the last decision did, in a sentence
	Declined  bool   // the last decision declined or canceled
	Status    string
	Artifacts []artifactView
	History   []historyEntry
	Problem   string
}

func (s *Server) taskPage(w http.ResponseWriter, r *http.Request, sess *session) {
	taskID := r.PathValue("task")
	items, err := s.ib.List(r.Context(), inbox.ListOptions{All: true, TaskID: taskID})
	if err != nil {
		s.fail(w, "read the task's questions", err)
		return
	}
	var mine []*inbox.Item
	for _, it := range items {
		if sess.person.sees(it.Caller) {
			mine = append(mine, it)
		}
	}
	if len(mine) == 0 {
		http.Error(w, fmt.Sprintf("this inbox has no question of task %q", taskID), http.StatusNotFound)
		return
	}
	v := taskView{TaskID: taskID, Items: mine}
	for _, it := range mine {
		if it.AgentURL != "" {
			v.Agent = it.AgentURL
		}
	}
	if v.Agent != "" {
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		if t, err := s.readTask(ctx, v.Agent, taskID); err != nil {
			s.log.Warn("web inbox: cannot read the task from its agent", slog.String("task", taskID), slog.Any("error", err))
			v.Problem = "The task could not be read from its agent: " + err.Error()
		} else {
			fillTask(&v, t)
		}
	}
	s.render(w, http.StatusOK, "task.html", s.page(sess, "Task "+taskID, "", v))
}

func (s *Server) readTask(ctx context.Context, agentURL, taskID string) (*a2a.Task, error) {
	c, err := s.cfg.Dial(ctx, agentURL)
	if err != nil {
		return nil, err
	}
	defer c.Destroy()
	return c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
}

func fillTask(v *taskView, t *a2a.Task) {
	v.State = stateName(t.Status.State)
	if t.Status.Message != nil {
		v.Status = strings.TrimSpace(text.Parts(t.Status.Message.Parts, "\n"))
	}
	for _, a := range t.Artifacts {
		v.Artifacts = append(v.Artifacts, artifactView{Name: question.Humanize(a.Name), Text: text.Parts(a.Parts, "\n"), Data: dataViews(a.Parts)})
	}
	asked := map[string]*question.Question{}
	var last *question.Decision
	lastVerb := ""
	for _, m := range t.History {
		e := historyEntry{Role: "caller", Text: text.Parts(m.Parts, "\n"), Data: dataViews(m.Parts)}
		if m.Role == a2a.MessageRoleAgent {
			e.Role = "agent"
		}
		if q, ok, err := question.FromMessage(m); ok && err == nil && m.Role == a2a.MessageRoleAgent {
			e.Question, e.Data = q, nil
			asked[q.ID] = q
		}
		if d, ok, err := question.DecisionOf(m); ok && err == nil {
			e.Decision, last = d, d
			e.Verb = verbOf(d, asked[d.QuestionID])
			lastVerb = e.Verb
			if q := asked[d.QuestionID]; q != nil {
				e.Digest = "differs from"
				if question.Digest(q) == d.QuestionDigest {
					e.Digest = "matches"
				}
			}
		}
		// The status is said once, at the top.
		if e.Role == "agent" && e.Question == nil && len(e.Data) == 0 && v.Status != "" && strings.TrimSpace(e.Text) == v.Status {
			continue
		}
		v.History = append(v.History, e)
	}
	if last != nil {
		who := cmp.Or(last.By.Name, last.By.Kind)
		switch last.Decision {
		case question.DecisionDeclined:
			v.Outcome, v.Declined = who+" declined to answer; the task is "+v.State+".", true
		case question.DecisionCanceled:
			v.Outcome, v.Declined = who+" canceled the task; it is "+v.State+".", true
		default:
			v.Outcome = who + " " + lastVerb + "; the task is " + v.State + "."
		}
	}
}

// verbOf says a decision in words: declined, canceled, answered, or, when
// the question proposed values, whether the person accepted or changed
// them.
func verbOf(d *question.Decision, q *question.Question) string {
	switch {
	case d.Decision == question.DecisionEdited:
		return "changed the agent's proposal"
	case d.Decision == question.DecisionAnswered && q != nil && len(q.Proposed()) > 0:
		return "accepted the agent's proposal"
	}
	return d.Decision
}

// stateName is a task state in a word: "completed", "input-required".
func stateName(s a2a.TaskState) string { return text.StateWord(s) }

// dataOf is a message's data parts as JSON, one a line.
func dataOf(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		if d, ok := p.Content.(a2a.Data); ok {
			raw, _ := json.Marshal(d.Value)
			out = append(out, string(raw))
		}
	}
	return strings.Join(out, "\n")
}

// queue asks for a notice to be sent once.
func (s *Server) queue(ctx context.Context, n notice) {
	done, err := s.ib.Notified(ctx, n.item.ID, n.kind)
	if err != nil || done {
		return
	}
	key := strconv.FormatInt(n.item.ID, 10) + "/" + n.kind
	s.mu.Lock()
	if s.queued[key] || s.failed[key] >= 3 { // queued already, or given up on
		s.mu.Unlock()
		return
	}
	s.queued[key] = true
	s.mu.Unlock()
	select {
	case s.mail <- n:
	default: // full: the next look queues it again
		s.mu.Lock()
		delete(s.queued, key)
		s.mu.Unlock()
	}
}

// sendMail sends queued notices to the people who see the question and
// have an address.
func (s *Server) sendMail(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-s.mail:
			key := strconv.FormatInt(n.item.ID, 10) + "/" + n.kind
			err := s.deliver(n)
			if err == nil {
				if _, err := s.ib.MarkNotified(ctx, n.item.ID, n.kind); err != nil {
					s.log.Warn("web inbox: notice sent but not recorded", slog.Int64("item", n.item.ID), slog.Any("error", err))
				}
			}
			s.mu.Lock()
			delete(s.queued, key)
			if err != nil {
				s.failed[key]++
				s.log.Warn("web inbox: notice not sent", slog.Int64("item", n.item.ID), slog.String("kind", n.kind),
					slog.Int("failures", s.failed[key]), slog.Any("error", err))
			}
			s.mu.Unlock()
		}
	}
}

func (s *Server) deliver(n notice) error {
	it := n.item
	link := s.cfg.PublicURL + "/q/" + strconv.FormatInt(it.ID, 10)
	subject := "Question from " + orUnknown(it.AgentURL) + ": " + text.FirstLine(it.Text)
	var b strings.Builder
	if n.rem != nil {
		subject = "Reminder: " + subject
		fmt.Fprintf(&b, "Reminder %d of %d: this question still waits on an answer.\n\n", n.rem.N, n.rem.Of)
	}
	b.WriteString(it.Text)
	b.WriteString("\n\n")
	if e := it.Expires(); !e.IsZero() {
		fmt.Fprintf(&b, "It expires at %s (in %s).\n", e.UTC().Format(time.RFC1123), client.HumanDuration(e.Sub(s.now())))
	}
	if a := attemptText(it.Question, s.maxAttempts(it)); a != "" && it.Question.Attempt > 1 {
		fmt.Fprintf(&b, "This is %s.\n", a)
	}
	fmt.Fprintf(&b, "Answer it here: %s\n", link)
	var errs []error
	for _, p := range s.cfg.People {
		if p.Email == "" || !p.sees(it.Caller) {
			continue
		}
		body := b.String() + s.emailLinks(it, &p) + fmt.Sprintf("\nAgent: %s\nTask: %s\n", orUnknown(it.AgentURL), it.TaskID)
		if err := s.cfg.Mailer.Send(Mail{To: p.Email, Subject: subject, Body: body}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown agent"
	}
	return s
}

// holdView is one thing the task holds while the question is open.
type holdView struct {
	Name  string
	Until time.Time
	Left  string // how long it is held for, while it is
	Gone  bool   // its time passed: it was released, or is being
}

// holdsOf says what the task holds while q is open, and until when.
func holdsOf(q *question.Question, now time.Time) []holdView {
	if q == nil {
		return nil
	}
	var out []holdView
	for _, h := range q.Holds {
		v := holdView{Name: h.Name, Until: h.Until}
		if h.Until.After(now) {
			v.Left = client.HumanDuration(h.Until.Sub(now))
		} else {
			v.Gone = true
		}
		out = append(out, v)
	}
	return out
}
