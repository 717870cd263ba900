package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/askpoint/askpoint/question"
)

// Terminal is a person answering at a terminal (or any line-based reader
// and writer): it shows the question, offers options as a numbered choice,
// prompts for the fields one by one with the schema's constraints, checks
// the answer against the question locally and prompts again for the
// fields it refused. A line "!decline REASON" or "!cancel REASON" at any
// prompt declines or cancels instead. When the input ends before an answer
// is complete, Terminal passes (nil, nil) so that the next resolver (for
// example Person, the inbox) takes the question.
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
	t := &Terminal{in: bufio.NewReader(in), out: out, person: person, now: time.Now}
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
				at := strings.TrimPrefix(e.Pointer, "/")
				if at == "" {
					fmt.Fprintf(w, "  - %s\n", e.Message)
				} else {
					fmt.Fprintf(w, "  - %s: %s\n", at, e.Message)
				}
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
	fields := q.Fields()
	optionField := qq.OptionField()
	answer := map[string]any{}
	todo := make([]string, 0, len(fields))
	for _, f := range fields {
		todo = append(todo, f.Name)
	}
	if optionField != "" && !containsField(fields, optionField) {
		todo = append([]string{optionField}, todo...)
	}
	for {
		for _, name := range todo {
			if name == optionField && len(qq.Options) > 0 {
				v, err := t.choose(ctx, qq, name, len(todo) > 1)
				if err != nil {
					return nil, err
				}
				answer[name] = v
				continue
			}
			f := fieldNamed(fields, name)
			v, set, err := t.field(ctx, f)
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
			name := topField(e.Pointer)
			if name == "" || !containsField(fields, name) && name != optionField {
				fmt.Fprintf(t.out, "  - %s\n", e.Message)
				for _, f := range fields {
					again[f.Name] = true
				}
				continue
			}
			fmt.Fprintf(t.out, "  - %s: %s\n", strings.TrimPrefix(e.Pointer, "/"), e.Message)
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

// choose offers the options for field as a numbered choice; a line may
// also name an option the way a text answer may (its value, its label, yes
// or no for true and false, how its label begins).
func (t *Terminal) choose(ctx context.Context, q *question.Question, field string, several bool) (any, error) {
	if several {
		fmt.Fprintf(t.out, "Options for %s:\n", field)
	} else {
		fmt.Fprintln(t.out, "Options:")
	}
	for i, o := range q.Options {
		fmt.Fprintf(t.out, "  %d) %s\n", i+1, question.OptionText(o))
	}
	for {
		line, err := t.readLine(ctx, fmt.Sprintf("Choose 1-%d> ", len(q.Options)))
		if err != nil {
			return nil, err
		}
		if n, err := strconv.Atoi(line); err == nil && n >= 1 && n <= len(q.Options) {
			return q.Options[n-1].Value, nil
		}
		if v, ok := question.MatchOption(q.Options, line); ok {
			return v, nil
		}
		fmt.Fprintf(t.out, "Choose a number from 1 to %d.\n", len(q.Options))
	}
}

// field prompts for one field until the input parses as its type. set is
// false when an optional field is left empty.
func (t *Terminal) field(ctx context.Context, f Field) (v any, set bool, err error) {
	prompt := f.Name
	if c := f.Constraints(); c != "" {
		prompt += " (" + c + ")"
	}
	if f.Description != "" {
		prompt += " — " + f.Description
	}
	prompt += "> "
	for {
		line, err := t.readLine(ctx, prompt)
		if err != nil {
			return nil, false, err
		}
		if line == "" {
			if !f.Required {
				return nil, false, nil
			}
			fmt.Fprintf(t.out, "%s is required.\n", f.Name)
			continue
		}
		v, perr := parseValue(f, line)
		if perr != nil {
			fmt.Fprintf(t.out, "%s: %v\n", f.Name, perr)
			continue
		}
		return v, true, nil
	}
}

// parseValue reads a line as a value of the field's type.
func parseValue(f Field, line string) (any, error) {
	if len(f.Enum) > 0 {
		for _, e := range f.Enum {
			if s, ok := e.(string); ok && strings.EqualFold(s, line) {
				return s, nil
			}
		}
	}
	if len(f.Types) == 0 {
		var v any
		if json.Unmarshal([]byte(line), &v) == nil {
			return v, nil
		}
		return line, nil
	}
	for _, typ := range []string{"integer", "number", "boolean", "object", "array", "null", "string"} {
		if !f.is(typ) {
			continue
		}
		switch typ {
		case "integer":
			if n, err := strconv.ParseInt(line, 10, 64); err == nil {
				return n, nil
			}
		case "number":
			if n, err := strconv.ParseFloat(strings.ReplaceAll(line, ",", "."), 64); err == nil {
				return n, nil
			}
		case "boolean":
			switch strings.ToLower(line) {
			case "y", "yes", "true":
				return true, nil
			case "n", "no", "false":
				return false, nil
			}
		case "object", "array":
			var v any
			if json.Unmarshal([]byte(line), &v) == nil {
				return v, nil
			}
		case "null":
			if line == "null" {
				return nil, nil
			}
		case "string":
			return line, nil
		}
	}
	return nil, fmt.Errorf("expected %s", strings.Join(f.Types, " or "))
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
