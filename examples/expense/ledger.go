package expense

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// SQLLedger files expenses into a table, once per idempotency key: a step
// that runs again after a crash (same key) gets the first filing's ID back
// and files nothing new. This is how an agent makes a side effect happen
// exactly once although its step may run more than once.
type SQLLedger struct {
	db          *sql.DB
	placeholder func(n int) string
}

// NewSQLLedger creates the expenses table if needed. dialect is "sqlite"
// or "postgres" (it decides only the placeholder style).
func NewSQLLedger(ctx context.Context, db *sql.DB, dialect string) (*SQLLedger, error) {
	l := &SQLLedger{db: db, placeholder: func(int) string { return "?" }}
	switch dialect {
	case "sqlite":
	case "postgres":
		l.placeholder = func(n int) string { return fmt.Sprintf("$%d", n) }
	default:
		return nil, fmt.Errorf("expense: unknown SQL dialect %q (use sqlite or postgres)", dialect)
	}
	_, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS expenses (
		idempotency_key TEXT PRIMARY KEY,
		expense_id      TEXT NOT NULL UNIQUE,
		body            TEXT NOT NULL,
		filed_at        BIGINT NOT NULL
	)`)
	if err != nil {
		return nil, fmt.Errorf("expense: create the expenses table: %w", err)
	}
	return l, nil
}

func (l *SQLLedger) q(query string) string {
	n := 0
	var b strings.Builder
	for _, c := range query {
		if c == '?' {
			n++
			b.WriteString(l.placeholder(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// File implements Ledger.
func (l *SQLLedger) File(ctx context.Context, key string, e Expense) (string, error) {
	if key == "" {
		return "", errors.New("expense: filing needs an idempotency key")
	}
	var b [5]byte
	_, _ = rand.Read(b[:])
	id := "EXP-" + strings.ToUpper(hex.EncodeToString(b[:]))
	e.ExpenseID = id
	body, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	if _, err := l.db.ExecContext(ctx, l.q(`INSERT INTO expenses (idempotency_key, expense_id, body, filed_at)
		VALUES (?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`), key, id, string(body), time.Now().UnixMilli()); err != nil {
		return "", fmt.Errorf("expense: file: %w", err)
	}
	var filed string
	if err := l.db.QueryRowContext(ctx, l.q(`SELECT expense_id FROM expenses WHERE idempotency_key = ?`), key).Scan(&filed); err != nil {
		return "", fmt.Errorf("expense: read back the filing: %w", err)
	}
	return filed, nil
}

// Count returns how many expenses were filed under keys starting with
// prefix (a task ID, say).
func (l *SQLLedger) Count(ctx context.Context, prefix string) (int, error) {
	var n int
	err := l.db.QueryRowContext(ctx, l.q(`SELECT count(*) FROM expenses WHERE idempotency_key LIKE ?`), prefix+"%").Scan(&n)
	return n, err
}
