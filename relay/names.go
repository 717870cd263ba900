package relay

import (
	"context"
	"regexp"
	"strings"

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

// fieldNames maps the fields of a translated answer to the caller's
// fields they came from: a sub field whose value is the value of exactly
// one caller field, under another name, is that field renamed. Fields
// that kept their name need no entry.
func fieldNames(given, translated map[string]any) map[string]string {
	out := map[string]string{}
	for sub, v := range translated {
		if gv, same := given[sub]; same && question.SameValue(gv, v) {
			continue
		}
		from := ""
		for own, gv := range given {
			if question.SameValue(gv, v) {
				if from != "" {
					from = ""
					break // two caller fields hold it: say nothing
				}
				from = own
			}
		}
		if from != "" {
			out[sub] = from
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// ownErrors says the sub-agent's errors for q in the relay's terms:
// Config.Errors when set, else the field names mapped back (cp.Names).
func (r *relay) ownErrors(ctx context.Context, call *askpoint.Call, cp *Checkpoint, q *question.Question, errs []question.FieldError) []question.FieldError {
	if len(errs) == 0 {
		return nil
	}
	if r.cfg.Errors != nil {
		return r.cfg.Errors(ctx, call, q, append([]question.FieldError(nil), errs...))
	}
	if len(cp.Names) == 0 {
		return errs
	}
	out := make([]question.FieldError, 0, len(errs))
	for _, e := range errs {
		first, rest := splitPointer(e.Pointer)
		if own, ok := cp.Names[first]; ok {
			e.Pointer = "/" + escape(own) + rest
			e.Message = renameWord(e.Message, first, own)
		}
		out = append(out, e)
	}
	return out
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

// renameWord replaces from by to in msg where from stands as a word.
func renameWord(msg, from, to string) string {
	re, err := regexp.Compile(`(^|[^\pL\pN_])` + regexp.QuoteMeta(from) + `($|[^\pL\pN_])`)
	if err != nil {
		return msg
	}
	return re.ReplaceAllString(msg, "${1}"+strings.ReplaceAll(to, "$", "$$")+"${2}")
}
