package telemetry

import (
	"fmt"
	"math"
	"sort"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// How questions fare: per agent and question kind, from the question
// metrics, for `askpoint stats` (which scrapes a server's /metrics) and for
// the server's own page (which gathers its registry in process).

// StatsHeader names the columns of StatsTable's rows.
var StatsHeader = []string{"AGENT", "KIND", "ASKED", "ANSWERED", "MEDIAN", "P90", "RE-ASK RATE", "EXPIRY RATE", "DECLINE RATE"}

// StatsTable reads the askpoint question metrics of fams into one row per
// agent and question kind, sorted, each as StatsHeader names the columns.
// ok is false when fams holds no askpoint metrics at all.
func StatsTable(fams map[string]*dto.MetricFamily) (rows [][]string, ok bool) {
	if _, ok := fams["askpoint_questions_asked_total"]; !ok {
		return nil, false
	}
	return formatStats(questionStats(fams)), true
}

// formatStats is the table of rows, one line each, as StatsHeader names
// the columns: the one format of both sources (metrics and the store).
func formatStats(stats []*statRow) (rows [][]string) {
	for _, r := range stats {
		rows = append(rows, []string{r.agent, r.kind, fmt.Sprint(int(r.asked)), fmt.Sprint(int(r.answered)),
			seconds(r.p50), seconds(r.p90), rate(r.reasks, r.asked), rate(r.expired, r.asked), rate(r.declined, r.asked)})
	}
	return rows
}

// Stats is StatsTable of this process's own metrics.
// Table is StatsHeader and Stats, as a page of how questions fare takes
// them (web.ServerPageOptions.Stats).
func (m *Metrics) Table() (header []string, rows [][]string) { return StatsHeader, m.Stats() }

func (m *Metrics) Stats() [][]string {
	fams, err := m.reg.Gather()
	if err != nil {
		return nil
	}
	by := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		by[f.GetName()] = f
	}
	rows, _ := StatsTable(by)
	return rows
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
	return sortStats(rows)
}

// sortStats is rows sorted by agent and kind.
func sortStats(rows map[[2]string]*statRow) []*statRow {
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

// AnswerBucket is the index of the bucket of askpoint_question_answer_seconds
// that a time to answer falls in (len of the bounds: beyond the last). Two
// sources of the MEDIAN and P90 columns agree when their values fall in
// the same bucket: the metrics know no finer than that.
func AnswerBucket(d time.Duration) int {
	s := d.Seconds()
	for i, b := range answerBuckets {
		if s <= b {
			return i
		}
	}
	return len(answerBuckets)
}
