package e2e

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/telemetry"
)

// TestMetricsFollowTheWorkedExample runs the worked example against the
// real binary with --metrics-addr: one expense question answered in text
// (re-asked), then with a valid cost centre; one declined; another left to
// expire. The scrape of /metrics then shows each figure, and askpoint
// stats prints the same table from the metrics and, read-only while the
// server runs, from its database (SQLite, and PostgreSQL through
// $ASKPOINT_DB).
func TestMetricsFollowTheWorkedExample(t *testing.T) {
	bin := buildAskpoint(t)
	t.Run("SQLite", func(t *testing.T) {
		testMetricsFollowTheWorkedExample(t, bin, filepath.Join(t.TempDir(), "askpoint.db"))
	})
	t.Run("PostgreSQL", func(t *testing.T) { testMetricsFollowTheWorkedExample(t, bin, dbtest.Schema(t)) })
}

func testMetricsFollowTheWorkedExample(t *testing.T, bin, db string) {
	srv, err := startServer(t, bin, "metrics", db, "--metrics-addr", "127.0.0.1:0", "--question-expiry", "3s")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`askpoint: metrics on (http://\S+/metrics)`).FindStringSubmatch(srv.log.String())
	if m == nil {
		t.Fatalf("serve printed no metrics address:\n%s", srv.log)
	}
	metricsURL := m[1]
	if strings.Contains(metricsURL, strings.TrimPrefix(srv.url, "http://")) {
		t.Fatalf("metrics are on the A2A address %s", srv.url)
	}
	if resp, err := http.Get(srv.url + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("the A2A port serves /metrics too")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := crashClient(ctx, t, srv.url)

	// The answered task: asked, re-asked once, answered.
	first := crashSendOK(ctx, t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros")), false)
	if first.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("first task is %s, want input-required", first.Status.State)
	}
	reask := crashSendOK(ctx, t, c, crashText(first.ID, "engineering"), false)
	q, ok, err := question.FromMessage(reask.Status.Message)
	if err != nil || !ok || reask.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the text answer was not re-asked: %s, %v %v", reask.Status.State, ok, err)
	}
	done := crashSendOK(ctx, t, c, crashAnswer(string(first.ID), q.ID), false)
	if done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("answered task is %s, want completed", done.Status.State)
	}
	// A redelivery of the winning answer is answered by deduplication.
	again := crashAnswer(string(first.ID), q.ID)
	again.ID = lastUserMessageID(done)
	if again.ID != "" {
		crashSendOK(ctx, t, c, again, false)
	}

	// The declined task.
	declined := crashSendOK(ctx, t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Monday, 12 euros")), false)
	dq, ok, err := question.FromMessage(declined.Status.Message)
	if err != nil || !ok {
		t.Fatalf("the third task asked nothing: %s, %v", declined.Status.State, err)
	}
	decline := a2a.NewMessage(a2a.MessageRoleUser, crashData(map[string]any{"questionId": dq.ID, "action": "decline", "reason": "not mine"}))
	decline.TaskID = declined.ID
	crashSendOK(ctx, t, c, decline, false)

	// The expiring task: asked and left; the sweeper fails it at 3s.
	second := crashSendOK(ctx, t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Wednesday, 18 euros")), false)
	if second.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("second task is %s, want input-required", second.Status.State)
	}
	open := scrape(ctx, t, metricsURL)
	wantValue(t, open, `askpoint_questions_open{agent="expense"}`, 1)

	crashWaitState(ctx, t, c, string(second.ID), a2a.TaskStateFailed)

	// commit counts just after the write the wait read: scrape until the
	// expiry is counted (bounded by ctx).
	got := scrape(ctx, t, metricsURL)
	for got[`askpoint_questions_expired_total{action="fail",agent="expense"}`] < 1 && ctx.Err() == nil {
		got = scrape(ctx, t, metricsURL)
	}
	wantValue(t, got, `askpoint_questions_open{agent="expense"}`, 0)
	wantValue(t, got, `askpoint_questions_asked_total{agent="expense",kind="costCentre"}`, 3)
	wantValue(t, got, `askpoint_reasks_total{agent="expense",kind="costCentre"}`, 1)
	wantValue(t, got, `askpoint_question_answer_seconds_count{agent="expense",kind="costCentre"}`, 1)
	wantValue(t, got, `askpoint_questions_closed_total{agent="expense",kind="costCentre",outcome="answered"}`, 1)
	wantValue(t, got, `askpoint_questions_closed_total{agent="expense",kind="costCentre",outcome="expired"}`, 1)
	wantValue(t, got, `askpoint_questions_closed_total{agent="expense",kind="costCentre",outcome="declined"}`, 1)
	wantValue(t, got, `askpoint_questions_expired_total{action="fail",agent="expense"}`, 1)
	wantValue(t, got, `askpoint_tasks_total{agent="expense",state="TASK_STATE_COMPLETED"}`, 1)
	wantValue(t, got, `askpoint_tasks_total{agent="expense",state="TASK_STATE_FAILED"}`, 1)
	if again.ID != "" {
		wantValue(t, got, `askpoint_redeliveries_total{agent="expense"}`, 1)
	}
	for _, zero := range []string{
		`askpoint_answer_conflicts_total{agent="expense"}`, `askpoint_lease_takeovers_total{agent="expense"}`,
		`askpoint_holds_released_total{agent="expense"}`, `askpoint_holds_lapsed_total{agent="expense"}`,
		`askpoint_push_deliveries_total{outcome="delivered"}`, `askpoint_push_deliveries_total{outcome="given_up"}`,
	} {
		wantValue(t, got, zero, 0)
	}
	if v, ok := got[`askpoint_store_operation_seconds_count{op="UpdateTask"}`]; !ok || v < 1 {
		t.Errorf("store latency of UpdateTask not observed (%v)", v)
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Errorf("no Go runtime metrics in the scrape")
	}
	// The reminders (0.5 and 0.9 of 3s) went to no push receiver but are
	// written for the open question all the same.
	if v := got[`askpoint_reminders_sent_total{agent="expense"}`]; v < 1 {
		t.Errorf("askpoint_reminders_sent_total = %v, want at least 1", v)
	}

	// askpoint stats reads the same figures: 3 asked, 1 answered, one
	// re-ask, one expiry and one decline of three questions.
	out, err := exec.CommandContext(ctx, bin, "stats", metricsURL).CombinedOutput()
	if err != nil {
		t.Fatalf("askpoint stats: %v\n%s", err, out)
	}
	row := regexp.MustCompile(`(?m)^expense\s+costCentre\s+3\s+1\s+\S+\s+\S+\s+33%\s+33%\s+33%\s*$`)
	if !row.Match(out) || !strings.Contains(string(out), "MEDIAN") {
		t.Errorf("askpoint stats output has no row for expense/costCentre with 3 asked, 1 answered, 33%% re-asked, 33%% expired, 33%% declined:\n%s", out)
	}

	// askpoint stats --db reads the store, read-only, while the server
	// runs on it: the same table, but for the median and p90, which the
	// store knows exactly and the metrics only to their histogram bucket
	// (they must fall in the same bucket). A PostgreSQL URL goes in
	// $ASKPOINT_DB, where a password would.
	cmd := exec.CommandContext(ctx, bin, "stats", "--db", db)
	if strings.HasPrefix(db, "postgres") {
		cmd = exec.CommandContext(ctx, bin, "stats")
		cmd.Env = append(os.Environ(), "ASKPOINT_DB="+db)
	}
	fromDB, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("askpoint stats --db: %v\n%s", err, fromDB)
	}
	sameStats(t, string(out), string(fromDB))
	if !row.Match(fromDB) {
		t.Errorf("askpoint stats --db output has no row for expense/costCentre with 3 asked, 1 answered, 33%% re-asked, 33%% expired, 33%% declined:\n%s", fromDB)
	}
	// The server was not disturbed: it still answers and counts.
	wantValue(t, scrape(ctx, t, metricsURL), `askpoint_questions_asked_total{agent="expense",kind="costCentre"}`, 3)

	// The server's own page shows the same figures (no tokens: everyone
	// is the anonymous principal, logged in by visiting the login page).
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	if resp, err := hc.Get(srv.url + "/inbox/login"); err != nil {
		t.Fatalf("log in to the server page: %v", err)
	} else {
		resp.Body.Close()
	}
	resp, err := hc.Get(srv.url + "/inbox/stats")
	if err != nil {
		t.Fatalf("GET /inbox/stats: %v", err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cells := regexp.MustCompile(`<td>expense</td><td>costCentre</td><td>3</td><td>1</td><td>[^<]+</td><td>[^<]+</td><td>33%</td><td>33%</td><td>33%</td>`)
	if resp.StatusCode != http.StatusOK || !cells.Match(page) {
		t.Errorf("the server page's stats (status %d) have no row for expense/costCentre with 3 asked, 1 answered, 33%% re-asked, 33%% expired, 33%% declined:\n%s", resp.StatusCode, page)
	}
}

// sameStats checks that two outputs of askpoint stats hold the same table:
// the same rows, cell for cell, but for MEDIAN and P90, which need only
// fall in the same bucket of the answer-time histogram.
func sameStats(t *testing.T, fromMetrics, fromDB string) {
	t.Helper()
	a, b := strings.Split(strings.TrimSpace(fromMetrics), "\n"), strings.Split(strings.TrimSpace(fromDB), "\n")
	if len(a) != len(b) || len(a) < 2 {
		t.Errorf("askpoint stats printed %d lines from the metrics and %d from the store, want the same table:\n%s\n--\n%s", len(a), len(b), fromMetrics, fromDB)
		return
	}
	for i := range a {
		x, y := strings.Fields(a[i]), strings.Fields(b[i])
		if len(x) != len(y) {
			t.Errorf("line %d differs: %q (metrics) and %q (store)", i, a[i], b[i])
			continue
		}
		for j := range x {
			if i > 0 && (j == 4 || j == 5) && x[j] != "-" && y[j] != "-" {
				dx, errX := time.ParseDuration(x[j])
				dy, errY := time.ParseDuration(y[j])
				if errX != nil || errY != nil || telemetry.AnswerBucket(dx) != telemetry.AnswerBucket(dy) {
					t.Errorf("line %d, column %d: %s (metrics) and %s (store) are not in the same answer-time bucket", i, j, x[j], y[j])
				}
				continue
			}
			if x[j] != y[j] {
				t.Errorf("line %d, column %d: %q (metrics) and %q (store)\n%s\n--\n%s", i, j, x[j], y[j], fromMetrics, fromDB)
			}
		}
	}
}

// lastUserMessageID is the messageId of the task's newest user message.
func lastUserMessageID(task *a2a.Task) string {
	for i := len(task.History) - 1; i >= 0; i-- {
		if task.History[i].Role == a2a.MessageRoleUser {
			return task.History[i].ID
		}
	}
	return ""
}

var sample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$`)

// scrape reads /metrics into series -> value.
func scrape(ctx context.Context, t *testing.T, url string) map[string]float64 {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s\n%s", url, resp.Status, body)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if m := sample.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err == nil {
				out[m[1]] = v
			}
		}
	}
	return out
}

func wantValue(t *testing.T, got map[string]float64, series string, want float64) {
	t.Helper()
	v, ok := got[series]
	if !ok {
		var near []string
		name, _, _ := strings.Cut(series, "{")
		for k := range got {
			if strings.HasPrefix(k, name) {
				near = append(near, k)
			}
		}
		t.Errorf("%s missing from the scrape; have %v", series, near)
		return
	}
	if v != want {
		t.Errorf("%s = %v, want %v", series, v, want)
	}
}
