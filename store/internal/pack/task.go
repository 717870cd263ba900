package pack

import (
	"encoding/json"
	"sync"

	"github.com/askpoint/askpoint/store"
)

// How a store keeps a task's JSON (both SQL stores): a log entry's body
// packed against its task's ID, a task's JSON columns against its ID, its
// context ID and the last RefEntries entries (or the one) the write that
// set them appended. Those entries hold the task's status as the engine
// wrote it, most of its question, its new artifact, so the row keeps
// references to them instead of a second copy. The store records the
// first of them (ref_seq; none when the write appended no entry, and the
// columns are packed against nothing), so that the entries from ref_seq
// to the end of the log are always the ones the columns were packed
// against: entries are never changed or deleted apart from their task.

// RefEntries is how many of a write's last entries its task's columns
// are packed against.
const RefEntries = 2

// Row is a task's JSON columns (status, artifacts, metadata, checkpoint,
// question, input, pause) and its new entries' bodies, packed, in one
// pooled buffer; nil for an empty value.
type Row struct {
	Cols   [7][]byte
	Bodies [][]byte
	// Ref is the place among the entries, from 1, of the first the
	// columns are packed against (ref_seq less the seq before the first
	// entry); 0 when none.
	Ref int64

	buf *[]byte
}

// Release gives the buffer the packed values are in back, once the write
// that used them is done.
func (r *Row) Release() {
	if r.buf != nil && cap(*r.buf) <= maxPooled {
		bufs.Put(r.buf)
	}
	r.buf = nil
}

// maxPooled is the largest buffer kept for another task.
const maxPooled = 64 << 10

// bufs are scratch buffers: a Row's, and those the reference entries are
// unpacked into.
var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// PackRow packs t's columns and the bodies of entries, its new entries,
// into one buffer, which the values share: the caller releases it once
// its write is done.
func PackRow(t *store.Task, entries []store.LogEntry) Row {
	r := Row{Bodies: make([][]byte, len(entries))}
	bp := bufs.Get().(*[]byte)
	scratch := (*bp)[:0]
	var ends [7]int
	bodyEnds := make([]int, len(entries))
	for i, e := range entries {
		scratch = Pack(scratch, e.Body, Known{TaskID: t.ID})
		bodyEnds[i] = len(scratch)
	}
	packed := len(scratch)
	k := Known{TaskID: t.ID, ContextID: t.ContextID}
	rb := bufs.Get().(*[]byte)
	k.Ref = (*rb)[:0]
	if len(entries) > 0 {
		from := max(0, len(entries)-RefEntries)
		r.Ref = int64(from + 1)
		for _, e := range entries[from:] {
			k.Ref = append(k.Ref, e.Body...)
		}
	}
	k = k.WithIndex()
	for i, c := range [...]json.RawMessage{t.Status, t.Artifacts, t.Metadata, t.Checkpoint, t.Question, t.Input, t.Pause} {
		scratch = Pack(scratch, c, k)
		ends[i] = len(scratch)
	}
	k.Release()
	*rb = k.Ref[:0]
	bufs.Put(rb)
	out := scratch
	*bp = scratch[:0]
	r.buf = bp
	start := 0
	for i, end := range bodyEnds {
		r.Bodies[i] = nonEmpty(out[start:end:end])
		start = end
	}
	start = packed
	for i, end := range ends {
		r.Cols[i] = nonEmpty(out[start:end:end])
		start = end
	}
	return r
}

func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// UnpackColumns reads back the JSON columns of task id, in context ctx,
// from their stored values, packed against the entries from ref_seq on,
// whose stored bodies are refs. The columns share one new buffer; an
// empty one is nil.
func UnpackColumns(id, ctx string, cols []*json.RawMessage, stored [][]byte, refs ...[]byte) error {
	k := Known{TaskID: id, ContextID: ctx}
	bp := bufs.Get().(*[]byte)
	defer func() { *bp = k.Ref[:0]; bufs.Put(bp) }()
	k.Ref = (*bp)[:0]
	for _, ref := range refs {
		var err error
		if k.Ref, err = Unpack(k.Ref, ref, Known{TaskID: id}); err != nil {
			return err
		}
	}
	total := 0
	for _, c := range stored {
		n, err := Len(c, k)
		if err != nil {
			return err
		}
		total += n
	}
	out := make([]byte, 0, total)
	for i, c := range stored {
		if len(c) == 0 {
			*cols[i] = nil
			continue
		}
		start := len(out)
		var err error
		if out, err = Unpack(out, c, k); err != nil {
			return err
		}
		*cols[i] = out[start:len(out):len(out)]
	}
	return nil
}

// UnpackEntry reads back the stored body of an entry of task id into a
// new buffer; nil for NULL.
func UnpackEntry(id string, b []byte) (json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	k := Known{TaskID: id}
	n, err := Len(b, k)
	if err != nil {
		return nil, err
	}
	return Unpack(make([]byte, 0, n), b, k)
}
