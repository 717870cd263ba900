package demo

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the ledger on PostgreSQL
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", for the ledger on SQLite

	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/store/postgres"
)

// OpenLedger opens the worked example's expense ledger beside the tasks of
// the store at db: in the same SQLite file (a path), so that a filing and
// its task live and die together, or in the same PostgreSQL database and
// schema (a postgres:// URL), so that every node files into one ledger,
// each step's key once. close closes it.
func OpenLedger(ctx context.Context, db string) (l expense.Ledger, close func() error, err error) {
	if postgres.IsURL(db) {
		return openPostgresLedger(ctx, db)
	}
	return openSQLiteLedger(ctx, db)
}

// openSQLiteLedger opens the ledger in the SQLite file at sqlitePath.
func openSQLiteLedger(ctx context.Context, sqlitePath string) (expense.Ledger, func() error, error) {
	dsn := (&url.URL{Scheme: "file", Path: sqlitePath, RawQuery: "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"}).String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open the expense ledger in %s: %w", sqlitePath, err)
	}
	db.SetMaxOpenConns(2)
	l, err := expense.NewSQLLedger(ctx, db, "sqlite")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return l, db.Close, nil
}

// openPostgresLedger opens the expense ledger in the PostgreSQL database of
// dbURL. Nodes that start at once would race on the ledger's CREATE TABLE
// IF NOT EXISTS (PostgreSQL reports a duplicate type), so the creation runs
// under a session advisory lock.
func openPostgresLedger(ctx context.Context, dbURL string) (expense.Ledger, func() error, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("open the expense ledger: %w", err)
	}
	lock, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open the expense ledger: %w", err)
	}
	defer lock.Close()
	const key = "hashtext('askpoint.expense-ledger')"
	if _, err := lock.ExecContext(ctx, "SELECT pg_advisory_lock("+key+")"); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open the expense ledger: %w", err)
	}
	defer lock.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock("+key+")")
	l, err := expense.NewSQLLedger(ctx, db, "postgres")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return l, db.Close, nil
}
