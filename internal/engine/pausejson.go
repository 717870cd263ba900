package engine

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/jsonscan"
	"github.com/askpoint/askpoint/internal/jsonwrite"
)

// The pause state is written and read on every pause and every resume: by
// hand, without reflection, in exactly the bytes and values encoding/json
// gives (FuzzPauseJSON holds the two together). Anything the hand-written
// code does not handle as encoding/json would goes to encoding/json.

// encodePause is json.Marshal(p).
func encodePause(p *pauseState) ([]byte, error) {
	if !plainRaw(p.DefaultAnswer) {
		return json.Marshal(p)
	}
	n := 160 + len(p.Kind) + len(p.Question) + len(p.OnExpiry) + len(p.DefaultAnswer) + len(p.WakeDigest) +
		len(p.Fresh) + len(p.Await) + len(p.Auth) + len(p.Trace)
	for i := range p.Holds {
		if !plainRaw(p.Holds[i].Data) {
			return json.Marshal(p)
		}
		n += 160 + len(p.Holds[i].Name) + len(p.Holds[i].Data)
	}
	b, err := appendPause(make([]byte, 0, n), p)
	if err != nil {
		return json.Marshal(p) // and its error
	}
	return b, nil
}

// plainRaw reports whether json.Marshal writes raw (a json.RawMessage) as
// it is: valid JSON with nothing it would compact or escape (space, '<',
// '>', '&', and any byte beyond ASCII, for U+2028 and U+2029).
func plainRaw(raw json.RawMessage) bool {
	for _, c := range raw {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '<' || c == '>' || c == '&' || c >= 0x80:
			return false
		}
	}
	return len(raw) == 0 || json.Valid(raw)
}

// appendPause appends p as json.Marshal writes it, its raw members taken
// as plainRaw says they are.
func appendPause(b []byte, p *pauseState) ([]byte, error) {
	b = append(b, '{')
	first := true
	name := func(n string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, n...)
	}
	var err error
	str := func(n, v string) {
		if v != "" {
			name(n)
			b = jsonwrite.String(b, v)
		}
	}
	stamp := func(n string, t time.Time, always bool) {
		if err != nil || (!always && t.IsZero()) {
			return
		}
		name(n)
		b, err = appendTime(b, t)
	}
	str(`"kind":`, p.Kind)
	stamp(`"asked":`, p.Asked, false)
	str(`"question":`, p.Question)
	stamp(`"expires":`, p.Expires, false)
	str(`"onExpiry":`, string(p.OnExpiry))
	if len(p.DefaultAnswer) > 0 {
		name(`"defaultAnswer":`)
		b = append(b, p.DefaultAnswer...)
	}
	if p.Reminded != 0 {
		name(`"reminded":`)
		b = strconv.AppendInt(b, int64(p.Reminded), 10)
	}
	str(`"wakeDigest":`, p.WakeDigest)
	str(`"fresh":`, p.Fresh)
	str(`"await":`, p.Await)
	str(`"auth":`, p.Auth)
	if len(p.Holds) > 0 {
		name(`"holds":[`)
		for i := range p.Holds {
			h := &p.Holds[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonwrite.String(append(b, `{"name":`...), h.Name)
			first = false
			stamp(`"until":`, h.Until, true)
			if len(h.Data) > 0 {
				name(`"data":`)
				b = append(b, h.Data...)
			}
			stamp(`"early":`, h.Early, false)
			stamp(`"releasing":`, h.Releasing, false)
			if h.Released {
				name(`"released":true`)
			}
			if h.Failures != 0 {
				name(`"failures":`)
				b = strconv.AppendInt(b, int64(h.Failures), 10)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	str(`"trace":`, p.Trace)
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendTime appends t as time.Time.MarshalJSON writes it (an error for a
// year it cannot write).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, err
	}
	return append(b, '"'), nil
}

// pauseNames and holdNames are pauseState's and heldThing's members, in
// the order of their readers' cases.
var (
	pauseNames = []string{"kind", "asked", "question", "expires", "onExpiry", "defaultAnswer", "reminded",
		"wakeDigest", "fresh", "await", "auth", "holds", "trace"}
	holdNames = []string{"name", "until", "data", "early", "releasing", "released", "failures"}
)

// readPause reads raw into p (a zero pauseState) as json.Unmarshal does,
// for the form encodePause writes: each member named as written, once.
// It reports false for anything else, which json.Unmarshal then decodes.
func readPause(raw []byte, p *pauseState) bool {
	r := jsonscan.NewReader(raw)
	ok := r.Members(pauseNames, func(i int) bool {
		switch i {
		case 0:
			return readStringOrNull(&r, &p.Kind)
		case 1:
			return readTime(&r, &p.Asked)
		case 2:
			return readStringOrNull(&r, &p.Question)
		case 3:
			return readTime(&r, &p.Expires)
		case 4:
			s := string(p.OnExpiry)
			ok := readStringOrNull(&r, &s)
			p.OnExpiry = api.ExpiryAction(s)
			return ok
		case 5:
			return readRaw(&r, &p.DefaultAnswer)
		case 6:
			return readInt(&r, &p.Reminded)
		case 7:
			return readStringOrNull(&r, &p.WakeDigest)
		case 8:
			return readStringOrNull(&r, &p.Fresh)
		case 9:
			return readStringOrNull(&r, &p.Await)
		case 10:
			return readStringOrNull(&r, &p.Auth)
		case 11:
			if r.Null() {
				p.Holds = nil
				return true
			}
			p.Holds = []heldThing{}
			return r.Array(func() bool {
				if r.Peek() != '{' {
					return false // null, or another kind: json.Unmarshal's
				}
				p.Holds = append(p.Holds, heldThing{})
				return readHold(&r, &p.Holds[len(p.Holds)-1])
			})
		default:
			return readStringOrNull(&r, &p.Trace)
		}
	})
	return ok && r.End()
}

func readHold(r *jsonscan.Reader, h *heldThing) bool {
	return r.Members(holdNames, func(i int) bool {
		switch i {
		case 0:
			return readStringOrNull(r, &h.Name)
		case 1:
			return readTime(r, &h.Until)
		case 2:
			return readRaw(r, &h.Data)
		case 3:
			return readTime(r, &h.Early)
		case 4:
			return readTime(r, &h.Releasing)
		case 5:
			if r.Null() {
				return true
			}
			switch r.Peek() {
			case 't':
				h.Released = true
			case 'f':
				h.Released = false
			default:
				return false
			}
			raw, ok := r.Raw()
			return ok && (string(raw) == "true" || string(raw) == "false")
		default:
			return readInt(r, &h.Failures)
		}
	})
}

// readTime reads a time as time.Time.UnmarshalJSON does, a null leaving
// it as it is.
func readTime(r *jsonscan.Reader, t *time.Time) bool {
	if r.Null() {
		return true
	}
	q, ok := r.Quoted()
	return ok && t.UnmarshalJSON(q) == nil
}

// readRaw reads a value into a json.RawMessage as json.Unmarshal does: a
// copy of its bytes (null among them).
func readRaw(r *jsonscan.Reader, m *json.RawMessage) bool {
	raw, ok := r.Raw()
	if !ok {
		return false
	}
	*m = append((*m)[:0], raw...)
	return true
}

// readInt reads an integer as json.Unmarshal reads it into an int, a null
// leaving it as it is; anything else (a fraction, an exponent, an
// overflow) is json.Unmarshal's to refuse.
func readInt(r *jsonscan.Reader, n *int) bool {
	if r.Null() {
		return true
	}
	raw, ok := r.Raw()
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(string(raw), 10, strconv.IntSize)
	if err != nil {
		return false
	}
	*n = int(v)
	return true
}
