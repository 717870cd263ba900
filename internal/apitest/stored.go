package apitest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// StoredBytes is everything the server's database holds, as a test reads
// it to check what is and is not stored: the SQLite file and its
// write-ahead log as they are on disk, or, on PostgreSQL, every row of every
// table of the store's schema as JSON text.
func (e *Env) StoredBytes(t testing.TB) []byte {
	t.Helper()
	if e.PostgresURL == "" {
		var out []byte
		for _, p := range []string{e.DBPath, e.DBPath + "-wal"} {
			b, err := os.ReadFile(p)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("read %s: %v", p, err)
			}
			out = append(out, b...)
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, e.PostgresURL)
	if err != nil {
		t.Fatalf("connect to the server's PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatalf("list the store's tables: %v", err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("list the store's tables: %d, %v", len(tables), err)
	}
	var out bytes.Buffer
	for _, name := range tables {
		var dump string
		q := `SELECT coalesce(string_agg(row_to_json(x)::text, E'\n'), '') FROM ` + pgx.Identifier{name}.Sanitize() + ` x`
		if err := conn.QueryRow(ctx, q).Scan(&dump); err != nil {
			t.Fatalf("read table %s: %v", name, err)
		}
		out.WriteString(dump)
		out.WriteByte('\n')
	}
	return out.Bytes()
}
