package expense_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/askpoint/askpoint/examples/expense"
)

func TestSQLLedgerFilesOncePerKey(t *testing.T) {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "ledger.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	l, err := expense.NewSQLLedger(ctx, db, "sqlite")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := make([]string, 8)
	errs := make([]error, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = l.File(ctx, "task-1/q-1", expense.Expense{Amount: 42})
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if errs[i] != nil || id == "" || id != ids[0] {
			t.Fatalf("concurrent filings with one key returned IDs %v, errors %v; want one ID", ids, errs)
		}
	}
	other, err := l.File(ctx, "task-2/q-1", expense.Expense{Amount: 42})
	if err != nil || other == ids[0] {
		t.Fatalf("another key returned %q, %v; want a new expense", other, err)
	}
	if n, err := l.Count(ctx, "task-1/"); err != nil || n != 1 {
		t.Errorf("Count(task-1/) = %d, %v; want 1", n, err)
	}
}
