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
	if len(p.DefaultAnswer) > 0 && !jsonwrite.RawAsIs(p.DefaultAnswer) {
		return json.Marshal(p)
	}
	n := 160 + len(p.Kind) + len(p.Question) + len(p.OnExpiry) + len(p.DefaultAnswer) + len(p.WakeDigest) +
		len(p.Fresh) + len(p.Await) + len(p.Auth) + len(p.Trace)
	for i := range p.Holds {
		if d := p.Holds[i].Data; len(d) > 0 && !jsonwrite.RawAsIs(d) {
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

// appendPause appends p as json.Marshal writes it, its raw members taken
// as jsonwrite.RawAsIs says they are.
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
		b, err = jsonwrite.Time(b, t)
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
			return r.StringOrNull(&p.Kind)
		case 1:
			return r.Time(&p.Asked)
		case 2:
			return r.StringOrNull(&p.Question)
		case 3:
			return r.Time(&p.Expires)
		case 4:
			s := string(p.OnExpiry)
			ok := r.StringOrNull(&s)
			p.OnExpiry = api.ExpiryAction(s)
			return ok
		case 5:
			return r.RawMessage(&p.DefaultAnswer)
		case 6:
			return r.Int(&p.Reminded)
		case 7:
			return r.StringOrNull(&p.WakeDigest)
		case 8:
			return r.StringOrNull(&p.Fresh)
		case 9:
			return r.StringOrNull(&p.Await)
		case 10:
			return r.StringOrNull(&p.Auth)
		case 11:
			return jsonscan.Objects(&r, &p.Holds, func(h *heldThing) bool { return readHold(&r, h) })
		default:
			return r.StringOrNull(&p.Trace)
		}
	})
	return ok && r.End()
}

func readHold(r *jsonscan.Reader, h *heldThing) bool {
	return r.Members(holdNames, func(i int) bool {
		switch i {
		case 0:
			return r.StringOrNull(&h.Name)
		case 1:
			return r.Time(&h.Until)
		case 2:
			return r.RawMessage(&h.Data)
		case 3:
			return r.Time(&h.Early)
		case 4:
			return r.Time(&h.Releasing)
		case 5:
			return r.Bool(&h.Released)
		default:
			return r.Int(&h.Failures)
		}
	})
}
