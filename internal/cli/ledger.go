package cli

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	"github.com/askpoint/askpoint/examples/expense"
)

// openLedger opens the worked example's expense ledger in the same SQLite
// file as the tasks, so a filing and its task live and die together.
func openLedger(ctx context.Context, sqlitePath string) (expense.Ledger, func() error, error) {
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
