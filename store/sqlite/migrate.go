package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"strings"
	"time"

	"github.com/askpoint/askpoint/store/internal/migration"
)

// migrationFiles holds the schema migrations, named NNNN_name.sql; NNNN is
// the version they bring the schema to. Applied migrations are never edited:
// a change is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations in version order.
func migrations() ([]migration.Migration, error) {
	return migration.Load(migrationFiles, "migrations/*.sql")
}

// migrate brings the schema of db up to date in one immediate transaction:
// either every pending migration is applied and recorded in
// schema_migrations, or none is. Concurrent openers of the same file
// serialise on the write lock, so each migration runs once. A file whose
// schema is newer than this binary's migrations is refused.
func migrate(ctx context.Context, db *sql.DB) error { return migrateTo(ctx, db, 0) }

// migrateTo is migrate up to version upTo (0: all), for the tests of a
// migration, which build a file at the version before it.
func migrateTo(ctx context.Context, db *sql.DB, upTo int) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()

	if _, err := tx.ExecContext(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER NOT NULL PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_at INTEGER NOT NULL
		)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	applied := map[int]bool{}
	newest := 0
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return fmt.Errorf("migrate: %w", err)
		}
		applied[v] = true
		newest = max(newest, v)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if known := ms[len(ms)-1].Version; newest > known {
		return fmt.Errorf("migrate: schema version %d is newer than this binary knows (%d)", newest, known)
	}

	for _, m := range ms {
		if applied[m.Version] || upTo > 0 && m.Version > upTo {
			continue
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UnixMilli()); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// checkSchema, for a store opened read-only, checks that the file's schema
// is the one this binary's migrations make: a read-only open migrates
// nothing, so an older file (no server of this version has opened it) or
// a newer one is refused with what to do.
func checkSchema(ctx context.Context, db *sql.DB) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	known := ms[len(ms)-1].Version
	var newest sql.NullInt64
	if err := db.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return fmt.Errorf("not an askpoint database (no schema_migrations table)")
		}
		return err
	}
	switch v := int(newest.Int64); {
	case v > known:
		return fmt.Errorf("schema version %d is newer than this binary knows (%d)", v, known)
	case v < known:
		return fmt.Errorf("schema version %d is older than this binary's (%d); a read-only open migrates nothing: start askpoint serve of this version on it once", v, known)
	}
	return nil
}
