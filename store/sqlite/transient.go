package sqlite

import (
	"errors"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/askpoint/askpoint/store"
)

func init() { store.RegisterTransient(IsTransient) }

// IsTransient reports whether err, from SQLite, may succeed when tried
// again: the database is busy or locked past the busy timeout, or its file
// cannot be written or read right now (an I/O error, a full disk, a file or
// directory made read-only, a file that cannot be opened). SQLite rolls a
// failed transaction back, so nothing of the failed write is kept, and a
// write succeeds again once the file can be written. Every other error
// (a constraint, a corrupt file, bad SQL) is permanent.
func IsTransient(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL:
		return true
	}
	return false
}
