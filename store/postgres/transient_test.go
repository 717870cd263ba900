package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
)

// TestTransientErrors: the SQLSTATEs of a restart, a dropped connection, a
// serialization failure, a deadlock, too many connections and a full disk
// are transient, wrapped or not;
// constraint and syntax errors, and the store's own sentinels, are not.
func TestTransientErrors(t *testing.T) {
	for _, tc := range []struct {
		code string
		want bool
	}{
		{"57P01", true}, {"57P02", true}, {"57P03", true}, {"40001", true}, {"40P01", true},
		{"08006", true}, {"08001", true}, {"08003", true}, {"53100", true}, {"53300", true},
		{"23505", false}, {"42601", false}, {"22P02", false}, {"42P01", false},
	} {
		err := fmt.Errorf("postgres: GetTask %q: %w", "t1", &pgconn.PgError{Code: tc.code, Message: "x"})
		if got := postgres.IsTransient(err); got != tc.want {
			t.Errorf("IsTransient(SQLSTATE %s) = %v, want %v", tc.code, got, tc.want)
		}
		if got := store.IsTransient(err); got != tc.want {
			t.Errorf("store.IsTransient(SQLSTATE %s) = %v, want %v", tc.code, got, tc.want)
		}
	}
	for _, err := range []error{store.ErrConflict, store.ErrNotFound, store.ErrExists, context.Canceled, errors.New("bad input")} {
		if store.IsTransient(err) {
			t.Errorf("store.IsTransient(%v) = true, want false", err)
		}
	}
	if !store.IsTransient(fmt.Errorf("wrapped: %w", store.ErrTransient)) {
		t.Error("store.IsTransient(wrapped ErrTransient) = false")
	}
	// A refused connection (nothing listens on port 1).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pgx.Connect(ctx, "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2")
	if err == nil || !store.IsTransient(err) {
		t.Errorf("a refused connection: err %v, transient %v; want transient", err, store.IsTransient(err))
	}
	// A query whose context ends, by its deadline or canceled: not
	// transient, though pgx may end it with a deadline on the connection
	// (a network timeout).
	url := dbtest.PostgresURL(t)
	for _, withDeadline := range []bool{true, false} {
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		if withDeadline {
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
		} else {
			time.AfterFunc(50*time.Millisecond, cancel)
		}
		_, err = conn.Exec(ctx, "SELECT pg_sleep(5)")
		cancel()
		conn.Close(context.Background())
		if err == nil || store.IsTransient(err) {
			t.Errorf("a query whose context ended (deadline %v): err %v, transient %v; want an error, not transient", withDeadline, err, store.IsTransient(err))
		}
	}
}
