package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
)

// Server (c): askpoint on PostgreSQL.

func init() {
	OpenPostgres = func(ctx context.Context, u string) (store.Store, error) { return postgres.Open(ctx, u) }
}

// pgScratch is a schema of its own for one bench server in the database
// the user named, and the application name its connections carry, so that
// the run starts empty, leaves nothing behind and can find its backends.
type pgScratch struct {
	base   string // the user's URL
	url    string // with search_path and application_name set
	schema string
	app    string
}

func newPGScratch(base string) (*pgScratch, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("--pg: the URL does not parse")
	}
	id := fmt.Sprintf("%d_%s", time.Now().Unix(), randomID()[:8])
	p := &pgScratch{base: base, schema: "askpoint_bench_" + id, app: "askpoint-bench-" + id}
	q := u.Query()
	q.Set("search_path", p.schema)
	q.Set("application_name", p.app)
	u.RawQuery = q.Encode()
	p.url = u.String()
	return p, nil
}

// drop removes the schema and everything in it.
func (p *pgScratch) drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, p.base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE")
	return err
}

// backends returns the process IDs of the PostgreSQL backends serving the
// bench server's connections.
func (p *pgScratch) backends(ctx context.Context) ([]int, error) {
	conn, err := pgx.Connect(ctx, p.base)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, p.app)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// backendCPU is the user+system CPU time of the given backends, read from
// /proc (so only when PostgreSQL runs on this machine).
func backendCPU(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			return 0, fmt.Errorf("backend %d is not visible in /proc: PostgreSQL runs elsewhere", pid)
		}
		d, err := (&serverProc{pid: pid}).cpu()
		if err != nil {
			return 0, err
		}
		total += d
	}
	return total, nil
}
