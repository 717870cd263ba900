package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/askpoint/askpoint/store"
)

func init() { store.RegisterTransient(IsTransient) }

// IsTransient reports whether err, from pgx, is worth trying again: the
// server shut down or restarted (SQLSTATE 57P01, 57P02, 57P03), a
// connection failed or dropped (class 08, a refused or reset connection, a
// connection pgx closed), a serialization failure (40001), a deadlock
// (40P01), too many connections (53300) or a full disk (53100, as on
// SQLite: the write succeeds once there is room). Every other error (a
// constraint, bad SQL, a canceled context) is permanent.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The caller's context ended (pgx may say so as a network
		// timeout): trying again cannot help it.
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03",
			pe.Code == "40001", pe.Code == "40P01", pe.Code == "53300", pe.Code == "53100",
			strings.HasPrefix(pe.Code, "08"):
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	if pgconn.SafeToRetry(err) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// pgx says so in words only for a connection it closed after a failure.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") ||
		strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "connection reset")
}
