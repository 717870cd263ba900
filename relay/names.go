package relay

import (
	"context"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// cloneFields copies an answer's top level, so that a Translate that edits
// its argument leaves the caller's answer as it was.
func cloneFields(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// translate is Config.Translate on the caller's answer fields for cp's
// open sub-question, with the trace of where each field it sends down came
// from kept in cp (Names, Mapped) for the sub-agent's errors about them.
// Without Translate the fields go down as they are and cp keeps no trace.
func (r *relay) translate(ctx context.Context, call *askpoint.Call, cp *Checkpoint, fields map[string]any) (map[string]any, error) {
	cp.Names, cp.Mapped = nil, nil
	if r.cfg.Translate == nil {
		return fields, nil
	}
	sent, err := r.cfg.Translate(ctx, call, cp.SubQuestion, cloneFields(fields))
	if err != nil {
		return nil, err
	}
	cp.Names, cp.Mapped = trace(fields, sent)
	return sent, nil
}

// trace says where each field of a translated answer (sent) came from in
// the caller's answer (given). names: a field that carries a caller's
// field's value as it is, under its name or another (the one caller field
// that holds that value). mapped: a field whose value Translate changed,
// to the caller's field it came from when the relay can tell (a caller's
// field of the same name; else the one caller's field and the one sent
// field left over), else to "".
func trace(given, sent map[string]any) (names, mapped map[string]string) {
	names, mapped = map[string]string{}, map[string]string{}
	used := map[string]bool{}
	var left []string
	for sub, v := range sent {
		if gv, same := given[sub]; same && question.SameValue(gv, v) {
			names[sub], used[sub] = sub, true
			continue
		}
		from, n := "", 0
		for own, gv := range given {
			if question.SameValue(gv, v) {
				from, n = own, n+1
			}
		}
		switch {
		case n == 1:
			names[sub], used[from] = from, true
		case n > 1:
			mapped[sub] = "" // two caller fields hold it: say nothing of either
		default:
			left = append(left, sub)
		}
	}
	var rest []string
	for _, sub := range left {
		if _, same := given[sub]; same {
			mapped[sub], used[sub] = sub, true
		} else {
			rest = append(rest, sub)
		}
	}
	var unused []string
	for own := range given {
		if !used[own] {
			unused = append(unused, own)
		}
	}
	for _, sub := range rest {
		mapped[sub] = ""
		if len(rest) == 1 && len(unused) == 1 {
			mapped[sub] = unused[0]
		}
	}
	if len(names) == 0 {
		names = nil
	}
	if len(mapped) == 0 {
		mapped = nil
	}
	return names, mapped
}

// ownErrors says the errors of the sub-agent's question q in the terms of
// the relay's own question for it: Config.Errors when set; else, when the
// caller's answer was translated (cp.Names, cp.Mapped), each error by
// where its field came from. At a field that carried a caller's value as
// it is, and takes the same values as the caller's field, the error is the
// sub-agent's, with the fields named as the caller named them. At a field
// whose value Translate changed, or that takes other values than the
// caller's field (its message would list them), the error is that the
// sub-agent did not accept the caller's field; anywhere else (a field the
// caller did not give, the whole answer), that it did not accept the
// answer. The sub-agent's own names and values do not reach the caller.
func (r *relay) ownErrors(ctx context.Context, call *askpoint.Call, cp *Checkpoint, q, own *question.Question) []question.FieldError {
	errs := q.Errors
	if len(errs) == 0 {
		return nil
	}
	if r.cfg.Errors != nil {
		return r.cfg.Errors(ctx, call, q, append([]question.FieldError(nil), errs...))
	}
	if len(cp.Names) == 0 && len(cp.Mapped) == 0 {
		return errs // not translated: the caller's terms are the sub-agent's
	}
	subFields, ownFields := fieldsByName(q), fieldsByName(own)
	rename := renamer(cp)
	name := capitalize(r.cfg.SubAgentName)
	out := make([]question.FieldError, 0, len(errs))
	seen := map[question.FieldError]bool{}
	for _, e := range errs {
		first, rest := splitPointer(e.Pointer)
		from, carried := cp.Names[first]
		if !carried {
			from = cp.Mapped[first]
		}
		switch {
		case e.Pointer == "" || from == "":
			e = question.FieldError{Message: name + " did not accept that answer."}
		case carried && sameChoices(subFields[first], ownFields[from]):
			e.Pointer = "/" + escape(from) + rest
			e.Message = rename(e.Message)
		default:
			e = question.FieldError{Pointer: "/" + escape(from), Message: name + " did not accept that " + from + "."}
		}
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	return out
}

// fieldsByName lists q's answer fields by name.
func fieldsByName(q *question.Question) map[string]question.Field {
	out := map[string]question.Field{}
	for _, f := range q.Fields() {
		out[f.Name] = f
	}
	return out
}

// sameChoices reports whether two fields take the same closed set of
// values, or both any value.
func sameChoices(a, b question.Field) bool {
	if len(a.Options) != len(b.Options) {
		return false
	}
	for _, ao := range a.Options {
		if !slices.ContainsFunc(b.Options, func(bo question.FieldOption) bool { return question.SameValue(ao.Value, bo.Value) }) {
			return false
		}
	}
	return true
}

// renamer renames, in a message, every field the relay sent down under a
// name of its own to the caller's name for it, where the name stands as a
// word (not inside another), all in one pass.
func renamer(cp *Checkpoint) func(string) string {
	to := map[string]string{}
	for sub, own := range cp.Names {
		if own != sub {
			to[sub] = own
		}
	}
	for sub, own := range cp.Mapped {
		if own != "" && own != sub {
			to[sub] = own
		}
	}
	words := make([]string, 0, len(to))
	for w := range to {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b string) int { return len(b) - len(a) }) // the longest first
	return func(msg string) string {
		var b strings.Builder
		for i := 0; i < len(msg); {
			if i == 0 || !wordRune(msg[:i], true) {
				if w := wordAt(msg[i:], words); w != "" {
					b.WriteString(to[w])
					i += len(w)
					continue
				}
			}
			_, n := utf8.DecodeRuneInString(msg[i:])
			b.WriteString(msg[i : i+n])
			i += n
		}
		return b.String()
	}
}

// wordAt is the first of words that s begins with as a whole word.
func wordAt(s string, words []string) string {
	for _, w := range words {
		if strings.HasPrefix(s, w) && (len(s) == len(w) || !wordRune(s[len(w):], false)) {
			return w
		}
	}
	return ""
}

// wordRune reports whether the last (last) or first rune of s is a
// letter, a digit or an underscore.
func wordRune(s string, last bool) bool {
	var r rune
	if last {
		r, _ = utf8.DecodeLastRuneInString(s)
	} else {
		r, _ = utf8.DecodeRuneInString(s)
	}
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// splitPointer splits a JSON pointer into its first reference token
// (unescaped) and the rest as written.
func splitPointer(ptr string) (first, rest string) {
	if !strings.HasPrefix(ptr, "/") {
		return "", ptr
	}
	tok, after, found := strings.Cut(ptr[1:], "/")
	if found {
		rest = "/" + after
	}
	tok = strings.ReplaceAll(tok, "~1", "/")
	return strings.ReplaceAll(tok, "~0", "~"), rest
}

func escape(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	return strings.ReplaceAll(tok, "/", "~1")
}
