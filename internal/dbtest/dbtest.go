// Package dbtest gives tests a real PostgreSQL database, isolated per test.
//
// The database is the one TEST_DATABASE_URL names, e.g.
//
//	TEST_DATABASE_URL='postgres://postgres@127.0.0.1:5432/test?sslmode=disable' go test ./...
//
// Without it the tests that need PostgreSQL skip, and say how to run them;
// under CI (the CI environment variable is set) they fail instead: the
// Postgres suite never skips quietly in CI.
//
// Each test gets a schema of its own with a random name (Schema), dropped
// when the test ends, so tests and packages run in parallel on one
// database without seeing each other's rows.
package dbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvVar names the environment variable that holds the test database's URL.
const EnvVar = "TEST_DATABASE_URL"

// ExampleURL is a URL that works with the PostgreSQL of .ci/run and of the
// development machines (trust auth on 127.0.0.1).
const ExampleURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// schemaPrefix starts the name of every schema Schema creates.
const schemaPrefix = "askpoint_test_"

// PostgresURL returns the URL in TEST_DATABASE_URL. When it is unset the
// test is skipped with a message that says how to run it, or, when the CI
// environment variable is set, fails.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(EnvVar)
	if u != "" {
		return u
	}
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s must be set in CI: the Postgres suite never skips in CI (.ci/run sets it after starting PostgreSQL, e.g. %s)", EnvVar, ExampleURL)
	}
	sayOnce()
	tb.Skipf("needs PostgreSQL: %s is not set; run with %s='%s' go test ./... (PostgreSQL 15 on 127.0.0.1:5432 with trust auth; start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start)", EnvVar, EnvVar, ExampleURL)
	return ""
}

// Schema creates a new, empty schema with a random name in the test
// database, drops it (with everything in it) when the test ends, and
// returns the database URL with search_path set to it: a store opened on
// that URL keeps its tables there. It skips or fails as PostgresURL does.
func Schema(tb testing.TB) string {
	tb.Helper()
	base, name := SchemaName(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("dbtest: connect to %s: %v", EnvVar, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("dbtest: create schema %s: %v", name, err)
	}
	return WithSearchPath(tb, base, name)
}

// SchemaName returns the test database's URL and a new random schema name
// without creating the schema (for tests of code that creates it), and
// drops the schema, if it exists then, when the test ends. It skips or
// fails as PostgresURL does.
func SchemaName(tb testing.TB) (baseURL, name string) {
	tb.Helper()
	base := PostgresURL(tb)
	name = newSchemaName()
	sweepOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Fatalf("dbtest: connect to %s: %v", EnvVar, err)
		}
		defer conn.Close(ctx)
		sweep(ctx, tb, conn)
	})
	tb.Cleanup(func() {
		// t.Context is already canceled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("dbtest: drop schema %s: connect: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Errorf("dbtest: drop schema %s: %v", name, err)
		}
	})
	return base, name
}

// WithSearchPath returns the database URL u with its search_path set to
// schema.
func WithSearchPath(tb testing.TB, u, schema string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("dbtest: %s does not parse as a URL: %v", EnvVar, err)
	}
	q := p.Query()
	q.Set("search_path", schema)
	p.RawQuery = q.Encode()
	return p.String()
}

// newSchemaName is schemaPrefix, the unix time and 8 random hex digits; the
// time lets sweep find schemas that crashed test runs left behind.
func newSchemaName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s%d_%s", schemaPrefix, time.Now().Unix(), hex.EncodeToString(b[:]))
}

var sweepOnce sync.Once

// sweep drops the test schemas older than an hour: left by test binaries
// that were killed before their cleanups ran.
func sweep(ctx context.Context, tb testing.TB, conn *pgx.Conn) {
	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE starts_with(nspname, $1)`, schemaPrefix)
	if err != nil {
		tb.Logf("dbtest: list old test schemas: %v", err)
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Logf("dbtest: list old test schemas: %v", err)
		return
	}
	cutoff := time.Now().Add(-time.Hour).Unix()
	for _, name := range names {
		stamp, _, _ := strings.Cut(strings.TrimPrefix(name, schemaPrefix), "_")
		if sec, err := strconv.ParseInt(stamp, 10, 64); err != nil || sec >= cutoff {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			tb.Logf("dbtest: drop old test schema %s: %v", name, err)
		}
	}
}

// sayOnce prints one line where a person running go test ./... sees it:
// go test shows a passing package's output only with -v, so the skips
// would go unnoticed. The line goes to the terminal, once per go test
// run (the go command is the test binaries' parent), not to the test's
// output; without a terminal (CI fails instead of skipping) nothing is
// printed.
func sayOnce() {
	skipOnce.Do(func() {
		marker := fmt.Sprintf("%s/askpoint-pgskip-%d", os.TempDir(), os.Getppid())
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return // another package of this run said it
		}
		f.Close()
		tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer tty.Close()
		fmt.Fprintf(tty, "askpoint: the PostgreSQL tests skip: %s is not set (e.g. %s='%s' go test ./...)\n", EnvVar, EnvVar, ExampleURL)
	})
}

var skipOnce sync.Once
