package sqlite

import (
	"database/sql/driver"
	"encoding/json"

	"modernc.org/sqlite"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/pack"
)

// The JSON the store keeps is packed (store/internal/pack): a log entry's
// body against its task's ID, a task's JSON columns against its ID, its
// context ID and one entry of its log, ref_seq, the newest status entry
// the write that set them appended (else its newest entry). That entry
// holds the task's status as the engine wrote it, and most of its
// question, so the row keeps a reference to them instead of a second
// copy; a write that appends no entry packs the columns against nothing
// (ref_seq NULL). Entries are never changed or deleted apart from their
// task, so ref_seq always names an entry that is there. Packing is done
// by the caller's goroutine, before its write joins the writer's queue.

// packedTask is a task's JSON columns and its entries' bodies, packed.
type packedTask struct {
	cols   [7]any // status, artifacts, metadata, checkpoint, question, input, pause
	ref    any    // ref_seq less the seq before the first entry (nil: none)
	bodies []any  // the entries' bodies
}

// refEntry is the index in entries of the entry a task's columns are
// packed against: the newest status entry, else the newest entry; -1
// when there are none.
func refEntry(entries []store.LogEntry) int {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Kind == store.KindStatus {
			return i
		}
	}
	return len(entries) - 1
}

// packTask packs t's columns and the bodies of entries, its new entries.
func packTask(t *store.Task, entries []store.LogEntry) packedTask {
	var p packedTask
	p.bodies = make([]any, len(entries))
	for i, e := range entries {
		p.bodies[i] = packValue(e.Body, pack.Known{TaskID: t.ID})
	}
	k := pack.Known{TaskID: t.ID, ContextID: t.ContextID}
	if i := refEntry(entries); i >= 0 && len(entries[i].Body) > 0 {
		k.Ref = entries[i].Body
		p.ref = int64(i + 1)
	}
	for i, c := range [...]json.RawMessage{t.Status, t.Artifacts, t.Metadata, t.Checkpoint, t.Question, t.Input, t.Pause} {
		p.cols[i] = packValue(c, k)
	}
	return p
}

// packValue is a packed column's value: NULL when empty.
func packValue(b []byte, k pack.Known) any {
	if len(b) == 0 {
		return nil
	}
	return pack.Pack(make([]byte, 0, len(b)/2), b, k)
}

// unpacker reads back the JSON columns of one task row.
type unpacker struct{ k pack.Known }

// newUnpacker unpacks the columns of task id, in context ctx, whose
// ref_seq entry's stored body is ref (nil: none).
func newUnpacker(id, ctx string, ref []byte) (unpacker, error) {
	u := unpacker{pack.Known{TaskID: id, ContextID: ctx}}
	if len(ref) > 0 {
		body, err := pack.Unpack(make([]byte, 0, 2*len(ref)), ref, pack.Known{TaskID: id})
		if err != nil {
			return u, err
		}
		u.k.Ref = body
	}
	return u, nil
}

// col unpacks one column; nil for NULL.
func (u unpacker) col(b []byte) (json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	out, err := pack.Unpack(make([]byte, 0, 2*len(b)), b, u.k)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// unpackEntry reads back the stored body of an entry of task id; nil for
// NULL.
func unpackEntry(id string, b []byte) (json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	out, err := pack.Unpack(make([]byte, 0, 2*len(b)), b, pack.Known{TaskID: id})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// askpoint_pack(value, task_id, context_id, ref) is pack.Pack in SQL, for
// migration 0009, which packs the rows of an existing file in place: value
// packed against the task's ID and context ID (” for none) and ref, an
// unpacked value (NULL for none). NULL and empty values are NULL.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("askpoint_pack", 4, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		b := sqlBytes(args[0])
		if len(b) == 0 {
			return nil, nil
		}
		k := pack.Known{TaskID: string(sqlBytes(args[1])), ContextID: string(sqlBytes(args[2])), Ref: sqlBytes(args[3])}
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
