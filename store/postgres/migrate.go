package postgres

import (
	"context"
	"embed"
	"fmt"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

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

// migrate brings the schema up to date in one transaction: either every
// pending migration is applied and recorded in schema_migrations, or none
// is. The transaction first takes a transaction-scoped advisory lock keyed
// on the schema's name, so nodes that start at once on a new database
// queue up: the first applies the migrations, the others find them
// applied. When schema is not empty it is created if missing (under the
// same lock); the pool's connections already have it as their search_path.
// A schema newer than this binary's migrations is refused.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	key := schema
	if key == "" {
		// The schema the tables go to: the first existing one of the
		// search_path. NULL when none exists; then CREATE TABLE below
		// says so.
		var cur *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if cur != nil {
			key = *cur
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('askpoint.migrate'), hashtext($1))`, key); err != nil {
		return fmt.Errorf("migrate: take the migration lock: %w", err)
	}
	if schema != "" {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
				return fmt.Errorf("migrate: create schema %q: %w", schema, err)
			}
		}
	}

	if _, err := tx.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     NOT NULL PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	applied := map[int]bool{}
	newest := 0
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
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
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if known := ms[len(ms)-1].Version; newest > known {
		return fmt.Errorf("migrate: schema version %d is newer than this binary knows (%d)", newest, known)
	}

	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx,
			`INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("migrate: %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// checkSchema, for a store opened read-only, checks that the schema is the
// one this binary's migrations make; it creates and migrates nothing.
func checkSchema(ctx context.Context, pool *pgxpool.Pool, _ string) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	known := ms[len(ms)-1].Version
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return fmt.Errorf("check the schema: %w", err)
	}
	if !exists {
		return fmt.Errorf("no askpoint tables in this database and schema (no schema_migrations table); a read-only open creates nothing")
	}
	var newest *int
	if err := pool.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&newest); err != nil {
		return fmt.Errorf("check the schema: %w", err)
	}
	v := 0
	if newest != nil {
		v = *newest
	}
	switch {
	case v > known:
		return fmt.Errorf("schema version %d is newer than this binary knows (%d)", v, known)
	case v < known:
		return fmt.Errorf("schema version %d is older than this binary's (%d); a read-only open migrates nothing: start askpoint serve of this version on it once", v, known)
	}
	return nil
}
