package sqlite

import (
	"database/sql/driver"
	"fmt"
	"sync"

	"modernc.org/sqlite"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/pack"
)

// The JSON the store keeps is packed as pack.PackRow says: a log entry's
// body against its task's ID, a task's JSON columns against its ID, its
// context ID and the last two entries (or the one) the write that set
// them appended, from ref_seq on. Packing is done by the caller's
// goroutine, before its write joins the writer's queue.

// packedTask is a task's JSON columns and its entries' bodies, packed, as
// statement arguments (NULL for an empty value).
type packedTask struct {
	cols   [7]any // status, artifacts, metadata, checkpoint, question, input, pause
	ref    any    // ref_seq less the seq before the first entry (nil: none)
	bodies []any  // the entries' bodies

	row pack.Row
}

// release gives the buffer the packed values are in back, once the write
// that used them is done (Store.write has returned: the writer has run
// the write, or never will).
func (p *packedTask) release() { p.row.Release() }

// maxPooled is the largest buffer kept for another task.
const maxPooled = 64 << 10

// packTask packs t's columns and the bodies of entries, its new entries
// (pack.PackRow): the caller releases it once its write is done.
func packTask(t *store.Task, entries []store.LogEntry) packedTask {
	p := packedTask{row: pack.PackRow(t, entries), bodies: make([]any, len(entries))}
	for i, b := range p.row.Bodies {
		p.bodies[i] = value(b)
	}
	for i, c := range p.row.Cols {
		p.cols[i] = value(c)
	}
	if p.row.Ref > 0 {
		p.ref = p.row.Ref
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

// refBufs are the scratch buffers a task row's stored values are read
// into (storedRow).
var refBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// unpackColumns is pack.UnpackColumns; unpackEntry pack.UnpackEntry.
var (
	unpackColumns = pack.UnpackColumns
	unpackEntry   = pack.UnpackEntry
)

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
