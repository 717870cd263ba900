package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/askpoint/askpoint/telemetry"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// stats prints how questions fare, per agent and question kind, from a
// server's /metrics (serve --metrics-addr) or from its store (--db).
func stats(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: askpoint stats [--timeout 10s] METRICS_URL
       askpoint stats [--timeout 10m] --db FILE|POSTGRES_URL

Prints, per agent and question kind (the fields its answer schema
requires): questions asked (the first question of each pause) and
answered, median and p90 time from asking to a valid answer, and the
re-ask, expiry and decline rates (of the questions asked).

From METRICS_URL, the /metrics of a server started with --metrics-addr
(for example http://127.0.0.1:9464/metrics): that server's figures since
it started; the times are estimated from the histogram's buckets.

From --db (or $`+EnvDB+`), the database a server runs on: every question
of every task the store still holds, over all tenants, owners and nodes,
read back from the tasks' logs; the times are exact. The database is
opened read-only (nothing is created, migrated or written), so it may be
read while servers run on it. Tasks deleted by --retain-finished are not
counted.

Flags:
`)
		fs.PrintDefaults()
	}
	timeout := fs.Duration("timeout", 0, "how long to wait for the scrape (default 10s) or the read of the store (default 10m)")
	dbValue := dbFlag(fs, "", "read the figures from this SQLite database `file`, or postgres:// URL, instead of a server's metrics")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	db, flagged := dbValue()
	switch {
	case fs.NArg() > 1:
		fmt.Fprintf(stderr, "askpoint stats: unexpected argument %q\n", fs.Arg(1))
		return 2
	case fs.NArg() == 1 && flagged:
		fmt.Fprintln(stderr, "askpoint stats: give a metrics URL or --db, not both")
		return 2
	case fs.NArg() == 0 && db == "":
		fmt.Fprintln(stderr, "askpoint stats: give the server's metrics URL (e.g. http://127.0.0.1:9464/metrics) or its database (--db askpoint.db)")
		return 2
	}
	if fs.NArg() == 0 {
		return statsFromStore(db, *timeout, stdout, stderr)
	}
	u := fs.Arg(0)
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		fmt.Fprintf(stderr, "askpoint stats: %q is not an http(s) URL of a server's /metrics (for a database give --db)\n", u)
		return 2
	}
	if !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"), "/") {
		u += "/metrics"
	}
	if *timeout <= 0 {
		*timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	fams, err := scrapeMetrics(ctx, u)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint stats: %v\n", err)
		return 1
	}
	rows, ok := telemetry.StatsTable(fams)
	if !ok {
		fmt.Fprintf(stderr, "askpoint stats: %s has no askpoint metrics; is it an askpoint server's --metrics-addr?\n", u)
		return 1
	}
	printStats(stdout, rows, "No questions asked since the server started.")
	return 0
}

// statsFromStore prints the table read from the store at db, opened
// read-only.
func statsFromStore(db string, timeout time.Duration, stdout, stderr io.Writer) int {
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	st, where, err := openReadOnly(ctx, db)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint stats: %s\n", errText(err))
		return 1
	}
	defer st.Close()
	rows, err := telemetry.StoreStats(ctx, st)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "askpoint stats: reading %s stopped: %v\n", where, context.Cause(ctx))
		} else {
			fmt.Fprintf(stderr, "askpoint stats: reading %s: %s\n", where, errText(err))
		}
		return 1
	}
	printStats(stdout, rows, "No questions in "+where+".")
	return 0
}

// printStats prints the table, or none when there are no rows.
func printStats(stdout io.Writer, rows [][]string, none string) {
	if len(rows) == 0 {
		fmt.Fprintln(stdout, none)
		return
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(telemetry.StatsHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
}

func scrapeMetrics(ctx context.Context, u string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", u, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s is not in the Prometheus text format: %w", u, err)
	}
	return fams, nil
}
