package telemetry

import (
	"context"
	"math"
	"slices"

	"github.com/askpoint/askpoint/internal/api"

	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/store"
)

// StoreStats is StatsTable computed from a store instead of a server's
// metrics (askpoint stats --db): every question of every task the store
// still holds, across tenants and owners, replayed from the task logs
// (engine.QuestionLog) as the observer counts it at commit. ASKED counts
// the first question of each pause, re-asks, expiries and declines are
// rates of it, and the median and p90 time to a valid answer are exact
// (nearest rank), not a histogram's estimate. Open questions count as
// asked. The store is read once, streamed (store.ScanLogs): what this
// holds is one row per agent and kind, plus the answer times of that row
// for its quantiles (8 bytes per answered question).
func StoreStats(ctx context.Context, st store.Store) ([][]string, error) {
	rows := map[[2]string]*statRow{}
	waits := map[[2]string][]float64{}
	log := engine.NewQuestionLog(func(f engine.QuestionFate) {
		k := [2]string{f.Agent, f.Kind}
		r := rows[k]
		if r == nil {
			r = &statRow{agent: f.Agent, kind: f.Kind, p50: math.NaN(), p90: math.NaN()}
			rows[k] = r
		}
		r.asked++
		r.reasks += float64(f.Reasks)
		switch f.End {
		case api.QuestionAnswered:
			r.answered++
			waits[k] = append(waits[k], f.Waited().Seconds())
		case api.QuestionDeclined:
			r.declined++
		case api.QuestionExpired:
			r.expired++
		}
	})
	if err := st.ScanLogs(ctx, engine.QuestionLogKinds, log.Entry); err != nil {
		return nil, err
	}
	log.Flush()
	for k, w := range waits {
		slices.Sort(w)
		rows[k].p50, rows[k].p90 = nearestRank(0.5, w), nearestRank(0.9, w)
	}
	return formatStats(sortStats(rows)), nil
}

// nearestRank is quantile q of sorted: the smallest value with at least
// q of the values at or below it. NaN when there are none.
func nearestRank(q float64, sorted []float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
