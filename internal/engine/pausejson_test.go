package engine

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/askpoint/askpoint/internal/api"
	"github.com/askpoint/askpoint/internal/jsontest"
	"github.com/askpoint/askpoint/store"
)

// FuzzPauseJSON: a pause state built from the fuzzer's bytes (every member
// set or not, strings with what encoding/json escapes, times zero, in
// other zones, with nanoseconds and out of the years it can write, raw
// members spaced, HTML-bearing or invalid) is written by encodePause as
// json.Marshal writes it, failing where it fails; what it wrote is read
// back by readPause into the value json.Unmarshal gives; and the
// fuzzer's bytes themselves, read as a pause state, are either left to
// json.Unmarshal (false) or read as json.Unmarshal reads them.
func FuzzPauseJSON(f *testing.F) {
	f.Add([]byte("seed"))
	f.Add([]byte(`{"kind":"options","asked":"2026-12-03T17:00:00.123Z","question":"q-1","expires":"2026-12-04T17:00:00Z","onExpiry":"fail","fresh":"q-1"}`))
	f.Add([]byte(`{"holds":[{"name":"seat","until":"2026-12-03T17:00:00Z","data":{"a":[1,2]},"released":true,"failures":2}],"reminded":1,"trace":"00-x"}`))
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30})
	f.Add([]byte{0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7, 0xf6, 0xf5, 0xf4, 0xf3, 0xf2, 0xf1, 0xf0})
	f.Fuzz(func(t *testing.T, in []byte) {
		g := &taskGen{in: in}
		p := pauseGen(g)
		want, wantErr := json.Marshal(p)
		got, err := encodePause(p)
		sameJSON(t, "pause", got, err, want, wantErr)
		if wantErr == nil {
			samePauseRead(t, want, true)
		}
		samePauseRead(t, in, false)
	})
}

// samePauseRead checks readPause against json.Unmarshal on raw; must says
// readPause has to read it (a pause as encodePause writes it).
func samePauseRead(t *testing.T, raw []byte, must bool) {
	t.Helper()
	jsontest.SameRead(t, raw, must, readPause)
}

func pauseGen(g *taskGen) *pauseState {
	p := &pauseState{}
	set := func() bool { return g.byte()%3 != 0 }
	if set() {
		p.Kind = g.str()
	}
	if set() {
		p.Asked = timeGen(g)
	}
	if set() {
		p.Question = g.str()
	}
	if set() {
		p.Expires = timeGen(g)
	}
	if set() {
		p.OnExpiry = api.ExpiryAction(g.str())
	}
	if set() {
		p.DefaultAnswer = rawGen(g)
	}
	if set() {
		p.Reminded = int(int8(g.byte()))
	}
	if set() {
		p.WakeDigest = g.str()
	}
	if set() {
		p.Fresh = g.str()
	}
	if set() {
		p.Await = g.str()
	}
	if set() {
		p.Auth = g.str()
	}
	if c := g.byte(); c%4 == 1 {
		p.Holds = []heldThing{}
	} else if c%4 >= 2 {
		for n := int(g.byte() % 3); n >= 0; n-- {
			h := heldThing{Name: g.str(), Until: timeGen(g)}
			if set() {
				h.Data = rawGen(g)
			}
			if set() {
				h.Early = timeGen(g)
			}
			if set() {
				h.Releasing = timeGen(g)
			}
			h.Released = g.byte()%2 == 1
			if set() {
				h.Failures = int(g.byte()) * 1000
			}
			p.Holds = append(p.Holds, h)
		}
	}
	if set() {
		p.Trace = g.str()
	}
	return p
}

// timeGen is a time: zero, in UTC or another zone, with or without
// nanoseconds, or in a year json.Marshal cannot write.
func timeGen(g *taskGen) time.Time {
	c := g.byte()
	if c%8 == 0 {
		return time.Time{}
	}
	t := time.Unix(int64(g.byte())<<24|int64(g.byte())<<16|int64(g.byte())<<8, int64(g.byte())*3906251)
	switch c % 8 {
	case 1:
		t = t.In(time.FixedZone("", int(int8(g.byte()))*900))
	case 2:
		t = t.AddDate(int(g.byte())*40, 0, 0) // past 9999 for some
	case 3:
		t = t.Truncate(time.Millisecond).UTC()
	default:
		t = t.UTC()
	}
	return t
}

// rawGen is a json.RawMessage: compact, spaced, HTML-bearing, beyond
// ASCII, invalid, or cut from the input.
func rawGen(g *taskGen) json.RawMessage {
	switch c := g.byte(); c % 10 {
	case 0:
		return nil
	case 1:
		return json.RawMessage(`null`)
	case 2:
		return json.RawMessage(`{"a":[1,2.5,"x"],"b":true}`)
	case 3:
		return json.RawMessage(`{ "a" : 1 }`)
	case 4:
		return json.RawMessage(`"<b>&"`)
	case 5:
		return json.RawMessage(`"é\u2028"`)
	case 6:
		return json.RawMessage(`{"a":`)
	case 7:
		return json.RawMessage(`42`)
	default:
		return json.RawMessage(g.str())
	}
}

// TestPauseJSONForms: the forms the engine writes on every pause read back
// by hand, and a few json.Unmarshal reads that readPause leaves to it.
func TestPauseJSONForms(t *testing.T) {
	asked := time.Date(2026, 12, 3, 17, 0, 0, 123e6, time.UTC)
	for _, p := range []*pauseState{
		{},
		{WakeDigest: "abc"},
		{Kind: "options", Asked: asked, Question: "q-1", Expires: asked.Add(time.Hour), OnExpiry: api.ExpireFail, Fresh: "q-1"},
		{Asked: asked, Question: "q-2", Expires: asked.Add(time.Hour), OnExpiry: api.ExpireDefault, DefaultAnswer: json.RawMessage(`{"costCentre":"CC-4410"}`),
			Reminded: 2, Holds: []heldThing{{Name: "seat", Until: asked, Data: json.RawMessage(`null`), Released: true, Failures: 3}}, Trace: "00-aa-bb-01"},
	} {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodePause(p)
		sameJSON(t, "pause", got, err, want, nil)
		samePauseRead(t, want, true)
		d, err := decodePause(&store.Task{Pause: got})
		if err != nil || !reflect.DeepEqual(d, mustUnmarshalPause(t, want)) {
			t.Fatalf("decodePause(%s) = %#v, %v", got, d, err)
		}
	}
	for _, raw := range []string{`{"Kind":"x"}`, `{"kind":"x","kind":"y"}`, `{"Reminded":1}`, `{"holds":[null]}`, `{"other":1}`} {
		var p pauseState
		if readPause([]byte(raw), &p) {
			t.Errorf("readPause read %s, which is json.Unmarshal's to read", raw)
		}
		d, err := decodePause(&store.Task{Pause: []byte(raw)})
		if err != nil || !reflect.DeepEqual(d, mustUnmarshalPause(t, []byte(raw))) {
			t.Errorf("decodePause(%s) = %#v, %v", raw, d, err)
		}
	}
}

func mustUnmarshalPause(t *testing.T, raw []byte) *pauseState {
	t.Helper()
	p := &pauseState{}
	if err := json.Unmarshal(raw, p); err != nil {
		t.Fatal(err)
	}
	return p
}
