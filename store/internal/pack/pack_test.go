package pack

import (
	"bytes"
	"testing"
)

const (
	taskID   = "01a237dd-8632-715d-b491-c9a18877031f"
	ctxID    = "01a237dd-8632-7174-8e2b-5c8650fd4ec0"
	entry    = `{"contextId":"` + ctxID + `","status":{"message":{"messageId":"01a237dd-8632-7cfb-a5cb-48c5e2bd904c","contextId":"` + ctxID + `","extensions":["https://askpoint.dev/ext/question/v1"],"parts":[{"text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420."},{"data":{"answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"expires":"2026-12-03T17:46:34.419Z","options":[{"value":"CC-4410"},{"value":"CC-4420"}],"questionId":"q-0-e0a53cf87a9d"},"mediaType":"application/json"}],"role":"ROLE_AGENT","taskId":"` + taskID + `"},"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-12-02T17:46:34.418283764Z"},"taskId":"` + taskID + `"}`
	question = `{"questionId":"q-0-e0a53cf87a9d","text":"Which cost centre should this expense be charged to? CC-4410 or CC-4420.","expires":"2026-12-03T17:46:34.419Z","answerSchema":{"properties":{"costCentre":{"pattern":"^CC-[0-9]{4}$","type":"string"}},"required":["costCentre"],"type":"object"},"options":[{"value":"CC-4410"},{"value":"CC-4420"}],"attempt":1,"maxAttempts":3}`
)

func roundTrip(t testing.TB, b []byte, k Known) []byte {
	t.Helper()
	p := Pack(nil, b, k)
	// Through an Index, the same value comes back (the runs found may
	// differ).
	ki := k.WithIndex()
	pi := Pack(nil, b, ki)
	ki.Release()
	if got, err := Unpack(nil, pi, k); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("Unpack(Pack(%q)) through an Index = %q, %v", b, got, err)
	}
	got, err := Unpack(nil, p, k)
	if err != nil {
		t.Fatalf("Unpack(Pack(%q)): %v", b, err)
	}
	if !bytes.Equal(got, b) {
		t.Fatalf("Unpack(Pack(%q)) = %q", b, got)
	}
	if n, err := Len(p, k); err != nil || n != len(b) {
		t.Fatalf("Len(Pack(%q)) = %d, %v, want %d", b, n, err, len(b))
	}
	return p
}

func TestPackShrinksTheWorkedExample(t *testing.T) {
	k := Known{TaskID: taskID, ContextID: ctxID}
	e := roundTrip(t, []byte(entry), k)
	if len(e) > len(entry)/2 {
		t.Errorf("the status entry packs to %d of %d bytes, want at most half", len(e), len(entry))
	}
	// The status and the question copy the entry they came from.
	k.Ref = []byte(entry)
	status := entry[len(`{"contextId":"`+ctxID+`",`)+len(`"status":`) : len(entry)-len(`,"taskId":"`+taskID+`"}`)]
	if s := roundTrip(t, []byte(status), k); len(s) > 8 {
		t.Errorf("the status packs to %d bytes (%x), want a reference of at most 8", len(s), s)
	}
	if q := roundTrip(t, []byte(question), k); len(q) > 60 {
		t.Errorf("the question packs to %d of %d bytes, want at most 60", len(q), len(question))
	}
}

func TestPackKeepsWhatItCannotPack(t *testing.T) {
	for _, b := range []string{"", "\x00", "\x01{}", "a\nb", "plain", "\x00\x01", "0000-00-00T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00.10Z", "1969-12-31T23:59:59Z"} {
		roundTrip(t, []byte(b), Known{})
	}
	// A value written before packing reads back as it is.
	if got, err := Unpack(nil, []byte(entry), Known{}); err != nil || string(got) != entry {
		t.Errorf("Unpack of an unpacked value = %q, %v", got, err)
	}
}

func TestUnpackRefusesCorruptValues(t *testing.T) {
	for _, p := range []string{"\x01\x04abc", "\x01\x05\x10\x10", "\x01\x06\xff", "\x01\x07", "\x01\x07\x02"} {
		if _, err := Unpack(nil, []byte(p), Known{Ref: []byte("short")}); err == nil {
			t.Errorf("Unpack(%q) = nil error, want ErrCorrupt", p)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte(entry), []byte(question), taskID, ctxID)
	f.Add([]byte(question), []byte(entry), "", "")
	f.Add([]byte("2026-12-02T17:46:34.418283764Z 2026-12-03T17:46:34Z"), []byte(nil), "x", "y")
	f.Add([]byte("\x01\x02\x03"), []byte("\x01"), "\x01", "")
	f.Fuzz(func(t *testing.T, b, ref []byte, task, ctx string) {
		k := Known{TaskID: task, ContextID: ctx, Ref: ref}
		roundTrip(t, b, k)
		// Unpack and Len never panic on any input, and agree.
		got, err := Unpack(nil, b, k)
		n, lerr := Len(b, k)
		if (err == nil) != (lerr == nil) || err == nil && n != len(got) {
			t.Fatalf("Unpack(%q) = %d bytes, %v; Len = %d, %v", b, len(got), err, n, lerr)
		}
	})
}

func BenchmarkPack(b *testing.B) {
	k := Known{TaskID: taskID, ContextID: ctxID, Ref: []byte(entry)}
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		ki := k.WithIndex()
		buf = Pack(buf[:0], []byte(question), ki)
		ki.Release()
		buf = Pack(buf[:0], []byte(entry), Known{TaskID: taskID})
	}
}

func BenchmarkUnpack(b *testing.B) {
	k := Known{TaskID: taskID, ContextID: ctxID, Ref: []byte(entry)}
	q := Pack(nil, []byte(question), k)
	e := Pack(nil, []byte(entry), Known{TaskID: taskID})
	b.ReportAllocs()
	var buf []byte
	for b.Loop() {
		buf, _ = Unpack(buf[:0], q, k)
		buf, _ = Unpack(buf[:0], e, Known{TaskID: taskID})
	}
}

// hasControl finds a control byte at every place of a word and after the
// words, and no byte of 0x20 or above is one (0x80 and up included).
func TestHasControlSeesEveryByte(t *testing.T) {
	for n := 0; n <= 19; n++ {
		b := bytes.Repeat([]byte{0x20}, n)
		if hasControl(b) {
			t.Fatalf("hasControl(%d spaces) = true", n)
		}
		for i := range b {
			for _, c := range []byte{0x00, 0x01, 0x1f} {
				b[i] = c
				if !hasControl(b) {
					t.Fatalf("hasControl misses %#x at %d of %d", c, i, n)
				}
			}
			for _, c := range []byte{0x20, 0x7f, 0x80, 0x9f, 0xa0, 0xff} {
				b[i] = c
				if hasControl(b) {
					t.Fatalf("hasControl takes %#x at %d of %d for a control byte", c, i, n)
				}
			}
		}
	}
}
