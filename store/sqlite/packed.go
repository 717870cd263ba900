package sqlite

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"sync"

	"modernc.org/sqlite"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/pack"
)

// The JSON the store keeps is packed (store/internal/pack): a log entry's
// body against its task's ID, a task's JSON columns against its ID, its
// context ID and the last two entries (or the one) the write that set
// them appended, from ref_seq on. Those entries hold the task's status as
// the engine wrote it, most of its question, its new artifact, so the row
// keeps references to them instead of a second copy. A write that appends
// no entry packs the columns against nothing (ref_seq NULL); one that
// appends entries moves ref_seq to them, so the entries from ref_seq to
// the end of the log are always the ones the columns were packed
// against. Entries are never changed or deleted apart from their task.
// Packing is done by the caller's goroutine, before its write joins the
// writer's queue.

// packedTask is a task's JSON columns and its entries' bodies, packed.
type packedTask struct {
	cols   [7]any // status, artifacts, metadata, checkpoint, question, input, pause
	ref    any    // ref_seq less the seq before the first entry (nil: none)
	bodies []any  // the entries' bodies

	buf *[]byte // what cols and bodies are in, from refBufs
}

// release gives the buffer the packed values are in back, once the write
// that used them is done (Store.write has returned: the writer has run
// the write, or never will).
func (p *packedTask) release() {
	if p.buf != nil && cap(*p.buf) <= maxPooled {
		refBufs.Put(p.buf)
	}
	p.buf = nil
}

// maxPooled is the largest buffer kept for another task.
const maxPooled = 64 << 10

// refEntries is how many of a write's last entries its task's columns
// are packed against.
const refEntries = 2

// packTask packs t's columns and the bodies of entries, its new entries,
// into one buffer from refBufs, which the statements' arguments share:
// the caller releases it once its write is done.
func packTask(t *store.Task, entries []store.LogEntry) packedTask {
	p := packedTask{bodies: make([]any, len(entries))}
	bp := refBufs.Get().(*[]byte)
	scratch := (*bp)[:0]
	var ends [7]int
	bodyEnds := make([]int, len(entries))
	for i, e := range entries {
		scratch = pack.Pack(scratch, e.Body, pack.Known{TaskID: t.ID})
		bodyEnds[i] = len(scratch)
	}
	packed := len(scratch)
	k := pack.Known{TaskID: t.ID, ContextID: t.ContextID}
	rb := refBufs.Get().(*[]byte)
	k.Ref = (*rb)[:0]
	if len(entries) > 0 {
		from := max(0, len(entries)-refEntries)
		p.ref = int64(from + 1)
		for _, e := range entries[from:] {
			k.Ref = append(k.Ref, e.Body...)
		}
	}
	k = k.WithIndex()
	for i, c := range [...]json.RawMessage{t.Status, t.Artifacts, t.Metadata, t.Checkpoint, t.Question, t.Input, t.Pause} {
		scratch = pack.Pack(scratch, c, k)
		ends[i] = len(scratch)
	}
	k.Release()
	*rb = k.Ref[:0]
	refBufs.Put(rb)
	out := scratch
	*bp = scratch[:0]
	p.buf = bp
	start := 0
	for i, end := range bodyEnds {
		p.bodies[i] = value(out[start:end:end])
		start = end
	}
	start = packed
	for i, end := range ends {
		p.cols[i] = value(out[start:end:end])
		start = end
	}
	return p
}

// value is a packed value as a statement argument: NULL when empty.
func value(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// refBufs are the scratch buffers the entries a task's columns are
// packed against are unpacked into: the columns copy what they need from
// them, so a buffer goes back once the row is read.
var refBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// unpackColumns reads back the JSON columns of task id, in context ctx,
// from their stored values cols, packed against the entries from ref_seq
// on, whose stored bodies are refs. The columns share one new buffer.
func unpackColumns(id, ctx string, cols []*json.RawMessage, stored [][]byte, refs ...[]byte) error {
	k := pack.Known{TaskID: id, ContextID: ctx}
	bp := refBufs.Get().(*[]byte)
	defer func() { *bp = k.Ref[:0]; refBufs.Put(bp) }()
	k.Ref = (*bp)[:0]
	for _, ref := range refs {
		var err error
		if k.Ref, err = pack.Unpack(k.Ref, ref, pack.Known{TaskID: id}); err != nil {
			return err
		}
	}
	total := 0
	for _, c := range stored {
		n, err := pack.Len(c, k)
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
		if out, err = pack.Unpack(out, c, k); err != nil {
			return err
		}
		*cols[i] = out[start:len(out):len(out)]
	}
	return nil
}

// unpackEntry reads back the stored body of an entry of task id into a
// new buffer; nil for NULL.
func unpackEntry(id string, b []byte) (json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	k := pack.Known{TaskID: id}
	n, err := pack.Len(b, k)
	if err != nil {
		return nil, err
	}
	return pack.Unpack(make([]byte, 0, n), b, k)
}

// askpoint_pack(value, task_id, context_id, ref, ref2) is pack.Pack in
// SQL, for migration 0009, which packs the rows of an existing file in
// place: value packed against the task's ID and context ID (empty for
// none) and the unpacked values ref and ref2 one after the other (NULL
// for none). NULL and empty values are NULL.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("askpoint_pack", 5, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		b := sqlBytes(args[0])
		if len(b) == 0 {
			return nil, nil
		}
		ref := append(append([]byte(nil), sqlBytes(args[3])...), sqlBytes(args[4])...)
		k := pack.Known{TaskID: string(sqlBytes(args[1])), ContextID: string(sqlBytes(args[2])), Ref: ref}
		return pack.Pack(nil, b, k), nil
	})
}

// sqlBytes is an SQL function argument's bytes: a TEXT's or a BLOB's,
// nil for anything else.
func sqlBytes(v driver.Value) []byte {
	switch v := v.(type) {
	case []byte:
		return v
	case string:
		return []byte(v)
	}
	return nil
}

// packKey is the stored form of an ID the store looks rows up by (a log
// entry's messageId, a task's request key): packed against nothing, so
// that a UUID takes 18 bytes instead of 36 and the same ID always packs
// to the same bytes; "" stays "".
func packKey(id string) any {
	if id == "" {
		return ""
	}
	return pack.Pack(make([]byte, 0, 18), []byte(id), pack.Known{})
}

// nullKey is packKey with "" stored as NULL (request_key).
func nullKey(id string) any {
	if id == "" {
		return nil
	}
	return packKey(id)
}

// unpackKey reads back a packKey value.
func unpackKey(b []byte) (string, error) {
	if len(b) == 0 {
		return "", nil
	}
	id, err := pack.Unpack(make([]byte, 0, 36), b, pack.Known{})
	return string(id), err
}

// storedRow holds the stored JSON values of one task row while it is
// read: each is scanned (storedVal) into one pooled buffer, unpacked from
// there, and the buffer goes back.
type storedRow struct {
	buf  *[]byte
	vals [9]storedVal // the seven columns, then the two entries from ref_seq on
}

func newStoredRow() *storedRow {
	r := &storedRow{buf: refBufs.Get().(*[]byte)}
	*r.buf = (*r.buf)[:0]
	for i := range r.vals {
		r.vals[i].r = r
	}
	return r
}

// release gives the buffer back; the values are not to be read after.
func (r *storedRow) release() {
	if cap(*r.buf) <= maxPooled {
		refBufs.Put(r.buf)
	}
}

// value is the stored bytes of value i.
func (r *storedRow) value(i int) []byte {
	v := r.vals[i]
	return (*r.buf)[v.off : v.off+v.n]
}

// storedVal is an sql.Scanner of one stored value into its storedRow.
type storedVal struct {
	r      *storedRow
	off, n int
}

func (v *storedVal) Scan(src any) error {
	b := *v.r.buf
	v.off = len(b)
	switch s := src.(type) {
	case nil:
	case []byte:
		b = append(b, s...)
	case string:
		b = append(b, s...)
	default:
		return fmt.Errorf("a JSON column holds a %T", src)
	}
	v.n = len(b) - v.off
	*v.r.buf = b
	return nil
}
