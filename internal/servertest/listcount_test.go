package servertest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/sqlite"
)

// countedLists is the server's SQLite store, which it serves with
// (the embedded store keeps every method the engine looks for), noting
// the ListTasks calls and those of them that counted the total.
type countedLists struct {
	*sqlite.Store
	calls, totals atomic.Int64
}

func (c *countedLists) ListTasks(ctx context.Context, p store.ListParams) (*store.ListResult, error) {
	c.calls.Add(1)
	if !p.NoTotal {
		c.totals.Add(1)
	}
	return c.Store.ListTasks(ctx, p)
}

// TestAListTasksPageCountsItsTotalOnce: a page is read from the store a
// few rows at a time (decision 0062), and its listing's total is counted
// with the first rows of its first page, not again for each chunk (issue
// 30, item 7: each chunk of 8 rows reran the count) nor for each later
// page, which carries the total in its token, on every binding.
func TestAListTasksPageCountsItsTotalOnce(t *testing.T) {
	var counted *countedLists
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: func(c *askpoint.Config) {
		counted = &countedLists{Store: c.Store.(*sqlite.Store)}
		c.Store = counted
	}})
	ctx := testCtx(t)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	for range 30 {
		sendState(t, ctx, c, userText("complete"), a2a.TaskStateCompleted)
	}
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		c := env.Client(t, "script", tr)
		token := ""
		for page, want := range []int{20, 10} {
			counts := []int64{1, 0}[page]
			calls, totals := counted.calls.Load(), counted.totals.Load()
			got, err := c.ListTasks(ctx, &a2a.ListTasksRequest{PageSize: 20, PageToken: token})
			if err != nil {
				t.Fatalf("ListTasks page %d: %v", page+1, err)
			}
			if len(got.Tasks) != want || got.TotalSize != 30 {
				t.Fatalf("ListTasks page %d: %d tasks of %d, want %d of 30", page+1, len(got.Tasks), got.TotalSize, want)
			}
			if n, m := counted.calls.Load()-calls, counted.totals.Load()-totals; m != counts || n < 2 {
				t.Errorf("ListTasks page %d: %d store reads, %d of them counting; want a few reads and %d counting", page+1, n, m, counts)
			}
			token = got.NextPageToken
		}
	})
}
