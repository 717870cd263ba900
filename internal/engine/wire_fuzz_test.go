package engine

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// FuzzAppendersWriteWhatJSONMarshalWrites: a task built from the fuzzer's
// bytes (every kind of part, empty and nil ones, metadata and data of
// generic values and others, strings cut from the input, so with any
// unicode, invalid UTF-8, HTML characters and U+2028/9) is written by
// appendTask as json.Marshal writes it, with or without its pieces given
// as ReplyBytes, and fails where json.Marshal fails; so is each message,
// status and artifact in it.
func FuzzAppendersWriteWhatJSONMarshalWrites(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09<script>&\u2028\u2029\xff\xfeé漢"))
	f.Add(bytes.Repeat([]byte{0xff, 0x07, 0x03, 'a', '<'}, 40))
	f.Add([]byte{7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, in []byte) {
		g := &taskGen{in: in}
		task := g.task()
		want, wantErr := json.Marshal(task)
		got, err := appendTask(nil, task, nil)
		sameJSON(t, "task", got, err, want, wantErr)
		if wantErr != nil {
			return
		}
		// The pieces as a reply holds them: this node's own encodings.
		rb := &ReplyBytes{task: task}
		rb.status, _ = json.Marshal(task.Status)
		for _, m := range task.History {
			raw, _ := json.Marshal(m)
			if g.byte()%2 == 0 {
				raw = nil // not known: encoded again
			}
			rb.history = append(rb.history, raw)
		}
		if len(task.Artifacts) > 0 {
			for _, a := range task.Artifacts {
				raw, _ := json.Marshal(a)
				rb.artifacts = append(rb.artifacts, raw)
			}
		}
		got, err = appendTask(nil, task, rb)
		sameJSON(t, "task with its reply bytes", got, err, want, nil)
		for _, m := range task.History {
			want, wantErr := json.Marshal(m)
			got, err := appendMessage(nil, m, nil)
			sameJSON(t, "message", got, err, want, wantErr)
		}
		for _, a := range task.Artifacts {
			want, wantErr := json.Marshal(a)
			got, err := appendArtifact(nil, a)
			sameJSON(t, "artifact", got, err, want, wantErr)
		}
	})
}

func sameJSON(t *testing.T, what string, got []byte, err error, want []byte, wantErr error) {
	t.Helper()
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: error %v, json.Marshal's %v", what, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// taskGen builds values from a fuzzer's bytes; past their end it reads
// zeros.
type taskGen struct {
	in    []byte
	depth int
}

func (g *taskGen) byte() byte {
	if len(g.in) == 0 {
		return 0
	}
	c := g.in[0]
	g.in = g.in[1:]
	return c
}

// str is a string cut from the input (possibly empty), or one of a few
// with the characters encoding/json escapes.
func (g *taskGen) str() string {
	switch c := g.byte(); {
	case c < 16:
		return [...]string{"", "<b>&amp;</b>", "\u2028\u2029", "line\nnext\t\"q\"\\", "\x00\x1f\x7f", "é 漢字 🎉", "\xff\xc3",
			"ROLE_USER", "ROLE_AGENT", "ROLE_UNSPECIFIED", "TASK_STATE_COMPLETED", "TASK_STATE_UNSPECIFIED", "a", "k", "https://x.example/?a=1&b=<2>", ""}[c]
	default:
		n := int(c % 24)
		if n > len(g.in) {
			n = len(g.in)
		}
		s := string(g.in[:n])
		g.in = g.in[n:]
		return s
	}
}

func (g *taskGen) value() any {
	g.depth++
	defer func() { g.depth-- }()
	c := g.byte()
	if g.depth > 3 {
		c %= 6
	}
	switch c % 14 {
	case 0:
		return nil
	case 1:
		return g.byte()%2 == 0
	case 2:
		return g.str()
	case 3:
		return [...]float64{0, 1, -1.5, 1e-7, 1e21, 123456789.125, 5e-324, math.MaxFloat64, 1e20, 0.000001}[g.byte()%10]
	case 4:
		return float64(int8(g.byte())) / 7
	case 5:
		return math.Float64frombits(uint64(g.byte())<<56 | uint64(g.byte())<<40 | uint64(g.byte()))
	case 6, 7:
		return g.meta()
	case 8:
		var l []any
		if g.byte()%4 != 0 {
			l = []any{}
		}
		for n := g.byte() % 4; n > 0; n-- {
			l = append(l, g.value())
		}
		return l
	case 9:
		return []string{g.str(), g.str()}
	case 10:
		return map[string]string{g.str(): g.str()}
	case 11:
		return [...]any{7, int64(-3), json.Number("1.50"), struct{ B, A string }{"<", ">"}, uint8(2)}[g.byte()%5]
	case 12:
		return [...]any{json.RawMessage(`{ "b" : [1, 2] }`), json.RawMessage(`{`), math.NaN(), math.Inf(1), func() {}}[g.byte()%5]
	default:
		return time.Unix(int64(g.byte())*1e6, int64(g.byte())).UTC()
	}
}

func (g *taskGen) meta() map[string]any {
	switch g.byte() % 5 {
	case 0:
		return nil
	case 1:
		return map[string]any{}
	}
	m := map[string]any{}
	for n := 1 + g.byte()%20; n > 0; n-- {
		m[g.str()] = g.value()
	}
	return m
}

func (g *taskGen) part() *a2a.Part {
	c := g.byte()
	if c%11 == 0 {
		return nil
	}
	p := &a2a.Part{}
	switch c % 6 {
	case 0:
		// no content
	case 1:
		p.Content = a2a.Text(g.str())
	case 2:
		var raw a2a.Raw
		if g.byte()%3 != 0 {
			raw = a2a.Raw(g.str())
		}
		p.Content = raw
	case 3, 4:
		p.Content = a2a.Data{Value: g.value()}
	case 5:
		p.Content = a2a.URL(g.str())
	}
	if g.byte()%2 == 0 {
		p.Filename = g.str()
	}
	if g.byte()%2 == 0 {
		p.MediaType = g.str()
	}
	p.Metadata = g.meta()
	return p
}

func (g *taskGen) parts() a2a.ContentParts {
	c := g.byte()
	if c%7 == 0 {
		return nil
	}
	parts := a2a.ContentParts{}
	for n := c % 5; n > 0; n-- {
		parts = append(parts, g.part())
	}
	return parts
}

func (g *taskGen) strs() []string {
	switch c := g.byte() % 4; c {
	case 0:
		return nil
	case 1:
		return []string{}
	default:
		out := make([]string, c)
		for i := range out {
			out[i] = g.str()
		}
		return out
	}
}

func (g *taskGen) message() *a2a.Message {
	if g.byte()%9 == 0 {
		return nil
	}
	m := &a2a.Message{ID: g.str(), ContextID: g.str(), Extensions: g.strs(), Metadata: g.meta(), Parts: g.parts(),
		Role: a2a.MessageRole(g.str()), TaskID: a2a.TaskID(g.str())}
	for _, s := range g.strs() {
		m.ReferenceTasks = append(m.ReferenceTasks, a2a.TaskID(s))
	}
	if g.byte()%5 == 0 {
		m.ReferenceTasks = []a2a.TaskID{}
	}
	return m
}

func (g *taskGen) task() *a2a.Task {
	t := &a2a.Task{ID: a2a.TaskID(g.str()), ContextID: g.str(), Metadata: g.meta()}
	t.Status = a2a.TaskStatus{State: a2a.TaskState(g.str()), Message: g.message()}
	switch g.byte() % 4 {
	case 1:
		ts := time.Date(2026, 12, 3, 12, 0, 0, int(g.byte())*1e6, time.UTC)
		t.Status.Timestamp = &ts
	case 2:
		ts := time.Unix(int64(g.byte())<<30, int64(g.byte())).In(time.FixedZone("z", int(int8(g.byte()))*900))
		t.Status.Timestamp = &ts
	case 3:
		ts := time.Date(10000+int(g.byte()), 1, 1, 0, 0, 0, 0, time.UTC) // outside RFC 3339: both fail
		t.Status.Timestamp = &ts
	}
	for n := g.byte() % 4; n > 0; n-- {
		t.History = append(t.History, g.message())
	}
	if g.byte()%5 == 0 {
		t.History = []*a2a.Message{}
	}
	for n := g.byte() % 3; n > 0; n-- {
		if g.byte()%6 == 0 {
			t.Artifacts = append(t.Artifacts, nil)
			continue
		}
		t.Artifacts = append(t.Artifacts, &a2a.Artifact{ID: a2a.ArtifactID(g.str()), Description: g.str(), Extensions: g.strs(),
			Metadata: g.meta(), Name: g.str(), Parts: g.parts()})
	}
	return t
}
