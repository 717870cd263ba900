//go:build unix

package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to read the expense ledger

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/internal/dbtest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
)

const mnReceipt = "File my taxi receipt from Tuesday, 42 euros"

// TestThreeNodesOnPostgres runs three real `askpoint serve` processes on
// one PostgreSQL schema:
//
//  1. the expense question is asked through node A, a caller subscribes to
//     the paused task on node C, the answer goes through node B; the
//     stream on C sees working, the expense artifact and completed, in
//     order, although C runs nothing;
//  2. ten more questions are asked through A and answered through B with
//     returnImmediately, and B is SIGKILLed as soon as the answers are
//     acknowledged; A or C completes every one (taking over B's runs once
//     their leases lapse), each filed once in the nodes' shared expense
//     ledger, while C streams one of them.
func TestThreeNodesOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three askpoint processes")
	}
	dbURL, password := mnWithPassword(t, dbtest.Schema(t))
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bin := buildAskpoint(t)

	nodes := map[string]*mnNode{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, name := range []string{"A", "B", "C"} {
		wg.Go(func() {
			n := mnStart(t, bin, name, dbURL)
			mu.Lock()
			nodes[name] = n
			mu.Unlock()
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for name, n := range nodes {
		if !strings.Contains(n.dataLine, "PostgreSQL postgres://") {
			t.Errorf("node %s start-up line %q, want it to say the store is PostgreSQL", name, n.dataLine)
		}
		if password != "" && (strings.Contains(n.dataLine, password) || strings.Contains(n.log.String(), password)) {
			t.Errorf("node %s printed the database password: %q", name, n.dataLine)
		}
	}
	a, b, c := crashClient(ctx, t, nodes["A"].url), crashClient(ctx, t, nodes["B"].url), crashClient(ctx, t, nodes["C"].url)

	// --- 1: ask on A, stream on C, answer on B. ---
	task := mnSend(ctx, t, a, crashText("", mnReceipt), false)
	q := mnQuestion(t, task)
	sub := mnSubscribe(ctx, t, c, task.ID)
	if first := sub.next(t); first.task == nil || first.task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SubscribeToTask on C: first event %+v, want the task snapshot in input-required", first)
	}
	sent := time.Now()
	done := mnSend(ctx, t, b, mnAnswer(task.ID, q.ID), false)
	if done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("answer through B: state %s (%s), want completed", done.Status.State, crashStatusText(done))
	}
	crashWantExpense(t, done)
	events := sub.rest(t)
	t.Logf("answer sent to B -> completed event on C's stream: %v (--poll 200ms)", sub.lastAt.Sub(sent).Round(time.Millisecond))
	if got, want := mnKinds(events), []string{"working", "artifact:expense", "completed"}; !slices.Equal(got, want) {
		t.Errorf("stream on C after the answer on B: %v, want %v", got, want)
	}
	viaA := crashGet(ctx, t, a, string(task.ID))
	crashWantExpense(t, viaA)
	crashWantRoles(t, viaA, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent)

	// --- 2: answers acknowledged by B, B killed at once; A or C finishes. ---
	const n = 10
	ids := make([]a2a.TaskID, n)
	qs := make([]string, n)
	for i := range n {
		tk := mnSend(ctx, t, a, crashText("", mnReceipt), false)
		ids[i], qs[i] = tk.ID, mnQuestion(t, tk).ID
	}
	watched := mnSubscribe(ctx, t, c, ids[0])
	if first := watched.next(t); first.task == nil || first.task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("SubscribeToTask on C: first event %+v, want the task snapshot in input-required", first)
	}
	// All ten answers go to B at once; B dies as soon as the first is
	// acknowledged. An answer whose acknowledgement never came is sent
	// again, the same message, through A: the caller's retry.
	answers := make([]*a2a.Message, n)
	errs := make([]error, n)
	firstAck := make(chan struct{}, n)
	for i := range n {
		answers[i] = mnAnswer(ids[i], qs[i])
		wg.Go(func() {
			tk, err := crashSend(ctx, b, answers[i], true)
			if err == nil && tk.Status.State != a2a.TaskStateWorking {
				t.Errorf("answer to %s acknowledged in state %s, want working", ids[i], tk.Status.State)
			}
			if err == nil {
				firstAck <- struct{}{}
			}
			errs[i] = err
		})
	}
	select {
	case <-firstAck:
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer through B was acknowledged in 30s")
	}
	nodes["B"].kill(t)
	killed := time.Now()
	wg.Wait()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ledger, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ledger.Close()
	mnWantFiledOnce(ctx, t, st, ledger, viaA)
	acked, owed := 0, 0
	for i, id := range ids {
		row, err := st.GetTask(ctx, string(id))
		if err != nil {
			t.Fatal(err)
		}
		if errs[i] == nil {
			acked++
			if row.Runnable {
				owed++
			}
		}
	}
	retried := 0
	for i := range n {
		if errs[i] == nil {
			continue
		}
		retried++
		if _, err := crashSend(ctx, a, answers[i], true); err != nil {
			t.Errorf("answer to %s: through B: %v; the same answer again through A: %v", ids[i], errs[i], err)
		}
	}
	t.Logf("B killed after its first acknowledgement: %d of %d answers acknowledged by B, %d of them still owed a run; %d sent again through A",
		acked, n, owed, retried)

	for i, id := range ids {
		cl := a
		if i%2 == 1 {
			cl = c
		}
		tk := crashWaitState(ctx, t, cl, string(id), a2a.TaskStateCompleted)
		crashWantExpense(t, tk)
		// request, question, answer, completion: nothing ran twice.
		crashWantRoles(t, tk, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent)
		mnWantFiledOnce(ctx, t, st, ledger, tk)
	}
	t.Logf("all %d completed %v after B was killed (--lease 2s)", n, time.Since(killed).Round(time.Millisecond))
	kinds := mnKinds(watched.rest(t))
	if len(kinds) < 3 || kinds[0] != "working" || !slices.Equal(kinds[len(kinds)-2:], []string{"artifact:expense", "completed"}) {
		t.Errorf("stream on C across B's death: %v, want working, (working again on takeover,) artifact:expense, completed", kinds)
	}
	for _, k := range kinds[:len(kinds)-2] {
		if k != "working" {
			t.Errorf("stream on C across B's death: %v, want nothing but working before the artifact", kinds)
			break
		}
	}
	for _, name := range []string{"A", "C"} {
		if out := nodes[name].log.String(); strings.Contains(out, "level=ERROR") || strings.Contains(out, "panic:") {
			t.Errorf("node %s logged errors:\n%s", name, out)
		}
	}
}

// TestCrossNodeWakeWithoutPolling runs two servers in this process on two
// stores (two pools, as two nodes) of one PostgreSQL schema, with a poll
// interval of a minute: a caller subscribed on node A to a task answered
// through node B can only be woken in time by PostgreSQL's NOTIFY. It
// measures the answer -> completed-event latency across nodes and on one
// node for comparison.
func TestCrossNodeWakeWithoutPolling(t *testing.T) {
	dbURL := dbtest.Schema(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	urlA := mnInProcess(ctx, t, dbURL, "node-a")
	urlB := mnInProcess(ctx, t, dbURL, "node-b")
	a, b := crashClient(ctx, t, urlA), crashClient(ctx, t, urlB)

	// Answer through B; measure until the completed event reaches a
	// subscriber on watch.
	round := func(watch *a2aclient.Client) time.Duration {
		task := mnSend(ctx, t, a, crashText("", mnReceipt), false)
		q := mnQuestion(t, task)
		sub := mnSubscribe(ctx, t, watch, task.ID)
		if first := sub.next(t); first.task == nil {
			t.Fatalf("SubscribeToTask: first event %+v, want the task", first)
		}
		sent := time.Now()
		mnSend(ctx, t, b, mnAnswer(task.ID, q.ID), true)
		kinds := mnKinds(sub.rest(t))
		if len(kinds) == 0 || kinds[len(kinds)-1] != "completed" {
			t.Fatalf("stream after the answer: %v, want it to end with completed", kinds)
		}
		return sub.lastAt.Sub(sent)
	}
	const rounds = 30
	var cross, local []time.Duration
	for range rounds {
		cross = append(cross, round(a))
		local = append(local, round(b))
	}
	slices.Sort(cross)
	slices.Sort(local)
	p := func(d []time.Duration, q float64) time.Duration {
		return d[int(q*float64(len(d)-1))].Round(10 * time.Microsecond)
	}
	t.Logf("answer sent to B (returnImmediately) -> completed event on a subscriber, %d rounds each, poll interval 1m:", rounds)
	t.Logf("  subscriber on A (woken by NOTIFY): p50 %v, p90 %v, max %v", p(cross, .5), p(cross, .9), p(cross, 1))
	t.Logf("  subscriber on B (woken in process): p50 %v, p90 %v, max %v", p(local, .5), p(local, .9), p(local, 1))
	if m := cross[len(cross)/2]; m > time.Second {
		t.Errorf("median cross-node wake-up %v: NOTIFY is not waking subscribers (the poll interval is a minute)", m)
	}
}

// mnWithPassword adds a password to a URL that has none (trust auth
// ignores it), so that the test can check no node prints it. It returns the
// password, or "" when the URL already had one.
func mnWithPassword(t *testing.T, raw string) (string, string) {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := u.User.Password(); has || u.User == nil {
		return raw, ""
	}
	const pw = "s3cret-never-printed"
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String(), pw
}

// mnInProcess serves the expense agent from this process on the
// PostgreSQL schema of dbURL with a one-minute poll interval.
func mnInProcess(ctx context.Context, t *testing.T, dbURL, node string) string {
	t.Helper()
	st, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := askpoint.NewServer(askpoint.Config{
		Store: st, NodeID: node, PollInterval: time.Minute,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(askpoint.AgentSpec{
		Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil), Card: expense.Card(),
	}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = hs.Close()
		if err := srv.Stop(sctx); err != nil {
			t.Errorf("Stop(%s) = %v: the listener or a worker did not end", node, err)
		}
		_ = st.Close()
	})
	return "http://" + ln.Addr().String()
}

// mnNode is one `askpoint serve` process.
// mnNode is one askpoint process of a multi-node test.
type mnNode = crashServer

func mnStart(t *testing.T, bin, name, dbURL string) *mnNode {
	t.Helper()
	n, err := startServer(t, bin, "node "+name, dbURL)
	if err != nil {
		t.Error(err)
		return nil
	}
	return n
}

// sigkill kills the node with SIGKILL (no graceful stop) and reaps it.
// kill SIGKILLs a node and waits for it to exit.
func (n *mnNode) kill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(n.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %s (pid %d): %v", n.name, n.cmd.Process.Pid, err)
	}
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s (pid %d) did not exit after SIGKILL", n.name, n.cmd.Process.Pid)
	}
}

func mnAnswer(taskID a2a.TaskID, questionID string) *a2a.Message {
	p := a2a.NewDataPart(map[string]any{"questionId": questionID, "costCentre": "CC-4410"})
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = taskID
	return m
}

func mnSend(ctx context.Context, t *testing.T, c *a2aclient.Client, m *a2a.Message, immediately bool) *a2a.Task {
	t.Helper()
	task, err := crashSend(ctx, c, m, immediately)
	if err != nil {
		t.Fatalf("SendMessage(task %q): %v", m.TaskID, err)
	}
	return task
}

func mnQuestion(t *testing.T, task *a2a.Task) *question.Question {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task %s: state %s (%s), want %s", task.ID, task.Status.State, crashStatusText(task), a2a.TaskStateInputRequired)
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok || q.ID == "" {
		t.Fatalf("task %s: no question in the status message (ok=%v, err=%v)", task.ID, ok, err)
	}
	return q
}

// mnWantFiledOnce checks the expense of task was filed once: the shared
// ledger (the nodes' expenses table) holds one filing for the task, the one
// the artifact names, and the task's durable log one expense artifact and
// one completion.
func mnWantFiledOnce(ctx context.Context, t *testing.T, st store.Store, ledger *sql.DB, task *a2a.Task) {
	t.Helper()
	id := task.ID
	var filings int
	var filed sql.NullString
	if err := ledger.QueryRowContext(ctx, `SELECT count(*), min(expense_id) FROM expenses WHERE starts_with(idempotency_key, $1)`,
		string(id)).Scan(&filings, &filed); err != nil {
		t.Fatalf("read the expense ledger: %v", err)
	}
	if filings != 1 || filed.String != mnExpenseID(task) {
		t.Errorf("task %s: the ledger holds %d filings (%q), want exactly one, the artifact's %q", id, filings, filed.String, mnExpenseID(task))
	}
	log, err := st.ReadLog(ctx, string(id), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	artifacts, completions := 0, 0
	for _, e := range log {
		switch {
		case e.Kind == store.KindArtifact:
			artifacts++
		case e.Kind == store.KindStatus && strings.Contains(string(e.Body), string(a2a.TaskStateCompleted)):
			completions++
		}
	}
	if artifacts != 1 || completions != 1 {
		t.Errorf("task %s: the log holds %d artifacts and %d completions, want 1 and 1 (filed once)", id, artifacts, completions)
	}
}

// mnExpenseID is the expenseId in the task's expense artifact.
func mnExpenseID(task *a2a.Task) string {
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			if d, ok := p.Content.(a2a.Data); ok {
				if m, ok := d.Value.(map[string]any); ok {
					if id, ok := m["expenseId"].(string); ok {
						return id
					}
				}
			}
		}
	}
	return ""
}

// mnEvent is one event of a stream.
type mnEvent struct {
	at    time.Time // when the client yielded it
	task  *a2a.Task
	ev    a2a.Event
	err   error
	ended bool
}

// mnStream reads a subscription in a goroutine of its own.
type mnStream struct {
	ch     chan mnEvent
	lastAt time.Time // when the client yielded the latest event
}

func mnSubscribe(ctx context.Context, t *testing.T, c *a2aclient.Client, id a2a.TaskID) *mnStream {
	t.Helper()
	s := &mnStream{ch: make(chan mnEvent, 64)}
	go func() {
		for ev, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
			e := mnEvent{at: time.Now(), ev: ev, err: err}
			if tk, ok := ev.(*a2a.Task); ok {
				e.task = tk
			}
			s.ch <- e
			if err != nil {
				break
			}
		}
		s.ch <- mnEvent{ended: true}
	}()
	return s
}

func (s *mnStream) next(t *testing.T) mnEvent {
	t.Helper()
	select {
	case e := <-s.ch:
		if !e.ended {
			s.lastAt = e.at
		}
		if e.err != nil {
			t.Fatalf("stream: %v", e.err)
		}
		return e
	case <-time.After(30 * time.Second):
		t.Fatalf("stream: no event in 30s")
		return mnEvent{}
	}
}

// rest reads the stream to its end (it must close, at the terminal state).
func (s *mnStream) rest(t *testing.T) []a2a.Event {
	t.Helper()
	var out []a2a.Event
	for {
		e := s.next(t)
		if e.ended {
			return out
		}
		out = append(out, e.ev)
	}
}

// mnKinds names events: a status update by its state in lower case without
// the prefix, an artifact update as artifact:NAME.
func mnKinds(events []a2a.Event) []string {
	var out []string
	for _, ev := range events {
		switch e := ev.(type) {
		case *a2a.TaskStatusUpdateEvent:
			out = append(out, strings.ToLower(strings.TrimPrefix(string(e.Status.State), "TASK_STATE_")))
		case *a2a.TaskArtifactUpdateEvent:
			out = append(out, "artifact:"+e.Artifact.Name)
		case *a2a.Task:
			out = append(out, "task:"+string(e.Status.State))
		default:
			out = append(out, fmt.Sprintf("%T", ev))
		}
	}
	return out
}
