package sqlite

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/internal/listing"
)

// storeQueries are the statements the store runs, for their query plans:
// the prepared ones, a listing of each shape, and the others.
func storeQueries() []string {
	var qs []string
	qs = append(qs, writeSQL[:]...)
	qs = append(qs, readSQL[:]...)
	after := &store.Cursor{UpdatedAt: time.UnixMilli(1), ID: "t"}
	for _, p := range []store.ListParams{
		{Agent: "expense", PageSize: 10},
		{Agent: "expense", PageSize: 10, After: after},
		{Agent: "expense", State: a2a.TaskStateInputRequired, PageSize: 10, After: after},
		{Agent: "expense", ContextID: "c", PageSize: 10},
	} {
		q := listing.Build(listDialect, p)
		qs = append(qs, q.Count, q.Page)
	}
	return append(qs,
		`DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE state IN `+terminalIn+` AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
		`SELECT count(*) FROM tasks WHERE tenant = ? AND owner = ? AND state NOT IN `+terminalIn)
}

// plan returns the query plan of q with every parameter NULL (a plan
// does not depend on the values).
func plan(t *testing.T, s *Store, q string) string {
	t.Helper()
	n := strings.Count(q, "?")
	for _, m := range regexp.MustCompile(`\?(\d+)`).FindAllStringSubmatch(q, -1) {
		k, _ := strconv.Atoi(m[1])
		n = max(n, k)
	}
	return explain(t, s, q, make([]any, n))
}

// Every index of the schema is one some query of the store's reads by:
// an index nothing reads costs every write that changes its columns and
// the bytes of its keys for nothing.
func TestEveryIndexIsUsed(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var plans strings.Builder
	for _, q := range storeQueries() {
		plans.WriteString(plan(t, s, q))
	}
	all := plans.String()
	rows, err := s.r.QueryContext(t.Context(), `SELECT name, tbl_name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var name, table string
		if err := rows.Scan(&name, &table); err != nil {
			t.Fatal(err)
		}
		n++
		if !strings.Contains(all, "INDEX "+name+" ") && !strings.Contains(all, "INDEX "+name+"\n") {
			t.Errorf("no query of the store reads index %s (on %s)", name, table)
		}
	}
	if n == 0 {
		t.Fatal("the schema has no index")
	}
	// The primary keys the point reads go by.
	for _, want := range []string{"sqlite_autoindex_tasks_1", "PRIMARY KEY"} {
		if !strings.Contains(all, want) {
			t.Errorf("no query reads by %s", want)
		}
	}
}

// The list index is ascending and the listings newest first: a listing by
// state reads its range backwards and sorts nothing. (A listing of every
// state merges the first rows of each state's range, PageSize+1 rows each,
// as it did with the index descending.)
func TestListingReadsTheIndexBackwards(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plan.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []store.ListParams{
		{Agent: "expense", State: a2a.TaskStateInputRequired, PageSize: 10},
		{Agent: "expense", State: a2a.TaskStateInputRequired, PageSize: 10, After: &store.Cursor{UpdatedAt: time.UnixMilli(1), ID: "t"}},
	} {
		pl := plan(t, s, listing.Build(listDialect, p).Page)
		if !strings.Contains(pl, "INDEX tasks_list") || strings.Contains(pl, "TEMP B-TREE FOR ORDER BY") {
			t.Errorf("listing %+v: plan\n%s\nwant tasks_list read in order, no sort", p, pl)
		}
	}
}
