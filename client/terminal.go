package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// Terminal is a person answering at a terminal (or any line-based reader
// and writer): it shows the question, offers options as a numbered choice,
// prompts for the fields one by one with the schema's constraints, checks
// the answer against the question locally and prompts again for the
// fields it refused. A line "!decline REASON" or "!cancel REASON" at any
// prompt declines or cancels instead. When the input ends before an answer
// is complete, Terminal passes (nil, nil) so that the next resolver (for
// example inbox.Person) takes the question.
type Terminal struct {
	in     *bufio.Reader
	out    io.Writer
	person string
	echo   bool // write what was read, since no terminal echoes it
	now    func() time.Time
}

// NewTerminal returns a Terminal reading in and writing out; person names
// who answers (recorded in the answer's metadata; may be ""). When in is a
// file that is not a terminal (a pipe), each line read is echoed to out so
// that the transcript reads like a session.
func NewTerminal(in io.Reader, out io.Writer, person string) *Terminal {
	// Everything the agent sent is printed through the one sanitizer:
	// no control sequence reaches the person's terminal.
	t := &Terminal{in: bufio.NewReader(in), out: text.CleanWriter(out), person: person, now: time.Now}
	if f, ok := in.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice == 0 {
			t.echo = true
		}
	}
	return t
}

// errAction carries an action typed at a prompt.
type errAction struct{ action, reason string }

func (e *errAction) Error() string { return e.action }

// Resolve implements Resolver.
func (t *Terminal) Resolve(ctx context.Context, q *Query) (*Answer, error) {
	t.Show(q)
	a, err := t.prompt(ctx, q)
	var act *errAction
	switch {
	case errors.As(err, &act):
		return &Answer{Action: act.action, Reason: act.reason, By: ByPerson, Person: t.person}, nil
	case errors.Is(err, io.EOF):
		fmt.Fprintln(t.out, "(no answer given)")
		return nil, nil
	case err != nil:
		return nil, err
	}
	a.By, a.Person = ByPerson, t.person
	return a, nil
}

// Show prints the question.
func (t *Terminal) Show(q *Query) {
	w := t.out
	fmt.Fprintln(w)
	where := ""
	if q.Agent != "" {
		where = " from " + q.Agent
	}
	fmt.Fprintf(w, "Question%s (task %s):\n", where, q.TaskID)
	for _, line := range strings.Split(q.Text, "\n") {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if qq := q.Question; qq != nil {
		if qq.Attempt > 1 {
			fmt.Fprintf(w, "Your previous answer was not accepted (attempt %d of %d):\n", qq.Attempt, qq.MaxAttempts)
			for _, e := range qq.Errors {
				fmt.Fprintf(w, "  - %s\n", qq.ExplainError(e))
			}
		}
		if !qq.Expires.IsZero() {
			left := qq.Expires.Sub(t.now())
			if left <= 0 {
				fmt.Fprintf(w, "Expired %s ago (%s).\n", roundDur(-left), qq.Expires.UTC().Format(time.RFC3339))
			} else {
				fmt.Fprintf(w, "Expires in %s (%s).\n", roundDur(left), qq.Expires.UTC().Format(time.RFC3339))
			}
		}
	}
	fmt.Fprintln(w, `(Type "!decline REASON" or "!cancel REASON" at any prompt to refuse.)`)
}

// roundDur shows a duration for people: "23h59m", "4m10s", "12s".
func roundDur(d time.Duration) string {
	return HumanDuration(d)
}

// HumanDuration shows a duration for people, to the minute above an hour
// and to the second below: "23h59m", "4m10s", "12s".
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d >= time.Hour {
		d = d.Truncate(time.Minute)
		h, m := d/time.Hour, (d%time.Hour)/time.Minute
		return fmt.Sprintf("%dh%02dm", h, m)
	}
	return d.Truncate(time.Second).String()
}

// readLine reads one line; actions come back as *errAction.
func (t *Terminal) readLine(ctx context.Context, prompt string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	fmt.Fprint(t.out, prompt)
	line, err := t.in.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		fmt.Fprintln(t.out)
		return "", err
	}
	if t.echo {
		fmt.Fprintln(t.out, strings.TrimRight(line, "\r\n"))
	}
	line = strings.TrimSpace(line)
	for _, act := range []string{question.ActionDecline, question.ActionCancel} {
		if rest, ok := strings.CutPrefix(line, "!"+act); ok && (rest == "" || rest[0] == ' ') {
			return "", &errAction{action: act, reason: strings.TrimSpace(rest)}
		}
	}
	return line, nil
}

func (t *Terminal) prompt(ctx context.Context, q *Query) (*Answer, error) {
	if q.Question == nil {
		for {
			line, err := t.readLine(ctx, "Your answer> ")
			if err != nil {
				return nil, err
			}
			if line != "" {
				return &Answer{Text: line}, nil
			}
			fmt.Fprintln(t.out, "An answer is needed (or !decline / !cancel).")
		}
	}
	qq := q.Question
	// The same fields, read with the same Field.Parse and checked with the
	// same Validate, as the web inbox's form.
	fields := qq.Fields()
	answer := map[string]any{}
	todo := make([]string, 0, len(fields))
	for _, f := range fields {
		todo = append(todo, f.Name)
	}
	for {
		for _, name := range todo {
			f := fieldNamed(fields, name)
			var (
				v   any
				set bool
				err error
			)
			if f.Kind == question.KindChoice {
				title := "Options"
				if f.Name != qq.OptionField() {
					title = chooseTitle(f)
				} else if len(fields) > 1 {
					title = "Options for " + f.Caption()
				}
				v, set, err = t.choose(ctx, f, title)
			} else {
				v, set, err = t.field(ctx, f)
			}
			if err != nil {
				return nil, err
			}
			if set {
				answer[name] = v
			} else {
				delete(answer, name)
			}
		}
		errs := validateFields(qq, answer)
		if len(errs) == 0 {
			return &Answer{Fields: answer}, nil
		}
		fmt.Fprintln(t.out, "That answer would not be accepted:")
		again := map[string]bool{}
		for _, e := range errs {
			fmt.Fprintf(t.out, "  - %s\n", qq.ExplainError(e))
			name := topField(e.Pointer)
			if name == "" || !containsField(fields, name) {
				for _, f := range fields {
					again[f.Name] = true
				}
				continue
			}
			again[name] = true
		}
		var next []string
		for _, name := range todo {
			if again[name] {
				next = append(next, name)
			}
		}
		if len(next) == 0 {
			next = todo
		}
		todo = next
	}
}

// choose offers a choice field's options as a numbered choice; an option's
// value or label is taken too. set is false when an optional choice is
// left empty.
func (t *Terminal) choose(ctx context.Context, f Field, title string) (v any, set bool, err error) {
	fmt.Fprintf(t.out, "%s:\n", title)
	for i, o := range f.Options {
		// The label, with the value when it says something the label does
		// not: "CC-4410 — Engineering", "Yes, pay" for true.
		fmt.Fprintf(t.out, "  %d) %s\n", i+1, question.OptionText(question.Option{Value: o.Value, Label: o.Label}))
	}
	for {
		line, err := t.readLine(ctx, fmt.Sprintf("Choose 1-%d> ", len(f.Options)))
		if err != nil {
			return nil, false, err
		}
		if line == "" && !f.Required {
			return nil, false, nil
		}
		if n, err := strconv.Atoi(line); err == nil {
			if n >= 1 && n <= len(f.Options) {
				return f.Options[n-1].Value, true, nil
			}
		} else if v, ok := f.Choose(line); ok {
			return v, true, nil
		}
		// The same words as the web form's: Field.Parse's error, explained.
		_, perr := f.Parse(line)
		fmt.Fprintf(t.out, "%s: %s, or type its number, 1 to %d.\n", f.Caption(), f.Explain(perr.Error()), len(f.Options))
	}
}

// chooseTitle heads the choice of a field other than the question's
// option field: its name and description.
func chooseTitle(f Field) string {
	return "Options for " + f.Caption() + aside(f)
}

// aside is what follows a field's caption in a prompt: its description
// and, when it may be left empty, how.
func aside(f Field) string {
	s := ""
	if f.Description != "" {
		s += " — " + f.Description
	}
	if !f.Required {
		s += " (optional: leave empty to skip)"
	}
	return s
}

// field prompts for one field until the input parses as its type. set is
// false when an optional field is left empty.
func (t *Terminal) field(ctx context.Context, f Field) (v any, set bool, err error) {
	// The words of the web inbox's form: caption, rules, description.
	prompt := f.Caption()
	if r := f.Rules(); r != "" {
		prompt += " (" + r + ")"
	}
	prompt += aside(f) + "> "
	for {
		line, err := t.readLine(ctx, prompt)
		if err != nil {
			return nil, false, err
		}
		if line == "" {
			if !f.Required {
				return nil, false, nil
			}
			fmt.Fprintf(t.out, "%s: %s\n", f.Caption(), f.Explain("missing required field "+f.Name))
			continue
		}
		v, perr := f.Parse(line)
		if perr != nil {
			fmt.Fprintf(t.out, "%s: %s\n", f.Caption(), f.Explain(perr.Error()))
			continue
		}
		return v, true, nil
	}
}

func topField(ptr string) string {
	if ptr == "" {
		return ""
	}
	tok := strings.SplitN(strings.TrimPrefix(ptr, "/"), "/", 2)[0]
	tok = strings.ReplaceAll(tok, "~1", "/")
	return strings.ReplaceAll(tok, "~0", "~")
}

func containsField(fs []Field, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

func fieldNamed(fs []Field, name string) Field {
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	return Field{Name: name}
}
