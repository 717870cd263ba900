package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

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
	rows := questionStats(fams)
	if len(rows) == 0 {
		if _, ok := fams["askpoint_questions_asked_total"]; !ok {
			fmt.Fprintf(stderr, "askpoint stats: %s has no askpoint metrics; is it an askpoint server's --metrics-addr?\n", u)
			return 1
		}
		fmt.Fprintln(stdout, "No questions asked since the server started.")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tKIND\tASKED\tANSWERED\tMEDIAN\tP90\tRE-ASK RATE\tEXPIRY RATE\tDECLINE RATE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", r.agent, r.kind, int(r.asked), int(r.answered),
			seconds(r.p50), seconds(r.p90), rate(r.reasks, r.asked), rate(r.expired, r.asked), rate(r.declined, r.asked))
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

type statRow struct {
	agent, kind                                string
	asked, answered, reasks, expired, declined float64
	p50, p90                                   float64 // seconds; NaN when unknown
}

// questionStats reads the askpoint question metrics into rows sorted by
// agent and kind.
func questionStats(fams map[string]*dto.MetricFamily) []*statRow {
	rows := map[[2]string]*statRow{}
	row := func(m *dto.Metric) *statRow {
		var agent, kind string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "agent":
				agent = l.GetValue()
			case "kind":
				kind = l.GetValue()
			}
		}
		k := [2]string{agent, kind}
		if rows[k] == nil {
			rows[k] = &statRow{agent: agent, kind: kind, p50: math.NaN(), p90: math.NaN()}
		}
		return rows[k]
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, m := range fams["askpoint_questions_asked_total"].GetMetric() {
		row(m).asked += m.GetCounter().GetValue()
	}
	for _, m := range fams["askpoint_reasks_total"].GetMetric() {
		row(m).reasks += m.GetCounter().GetValue()
	}
	for _, m := range fams["askpoint_questions_closed_total"].GetMetric() {
		r, v := row(m), m.GetCounter().GetValue()
		switch label(m, "outcome") {
		case "answered":
			r.answered += v
		case "expired":
			r.expired += v
		case "declined":
			r.declined += v
		}
	}
	for _, m := range fams["askpoint_question_answer_seconds"].GetMetric() {
		r := row(m)
		r.p50, r.p90 = bucketQuantile(0.5, m.GetHistogram()), bucketQuantile(0.9, m.GetHistogram())
	}
	var out []*statRow
	for _, r := range rows {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].agent != out[j].agent {
			return out[i].agent < out[j].agent
		}
		return out[i].kind < out[j].kind
	})
	return out
}

// bucketQuantile estimates quantile q of a histogram as Prometheus's
// histogram_quantile does: linear within the bucket it falls in. NaN when
// the histogram is empty.
func bucketQuantile(q float64, h *dto.Histogram) float64 {
	total := float64(h.GetSampleCount())
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, n := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if n >= rank {
			if math.IsInf(upper, 1) {
				return lower // beyond the last bound: its bound is the best known
			}
			if n == below {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/(n-below)
		}
		lower, below = upper, n
	}
	return lower
}

func seconds(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}

func rate(n, of float64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*n/of)
}
