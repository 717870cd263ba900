package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/askpoint/askpoint/internal/telemetry"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// stats prints how questions fare, per agent and question kind, from a
// server's /metrics (serve --metrics-addr).
func stats(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint stats", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: askpoint stats [--timeout 10s] METRICS_URL

Reads the /metrics of a server started with --metrics-addr (for example
http://127.0.0.1:9464/metrics) and prints, per agent and question kind (the
fields its answer schema requires): questions asked and answered, median and
p90 time to a valid answer, and the re-ask, expiry and decline rates.
The figures are the server's since it started.

Flags:
`)
		fs.PrintDefaults()
	}
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for the scrape")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "askpoint stats: give the server's metrics URL, e.g. http://127.0.0.1:9464/metrics")
		return 2
	}
	u := fs.Arg(0)
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		fmt.Fprintf(stderr, "askpoint stats: %q is not an http(s) URL of a server's /metrics\n", u)
		return 2
	}
	if !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://"), "/") {
		u += "/metrics"
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
	if len(rows) == 0 {
		fmt.Fprintln(stdout, "No questions asked since the server started.")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(telemetry.StatsHeader, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	_ = tw.Flush()
	return 0
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
