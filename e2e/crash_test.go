//go:build unix

package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/store/sqlite"
)

const (
	crashReceipt = "File my taxi receipt from Tuesday, 42 euros"
	crashPaused  = 20 // tasks paused on a question before the first kill
	crashReasked = 5  // of them, answered "engineering" and re-asked
	crashBurst   = 40 // tasks acknowledged (returnImmediately) just before a kill
)

// TestSIGKILLLosesNothing runs the built askpoint binary, SIGKILLs it twice
// and restarts it on the same SQLite file:
//
//  1. 20 expense tasks paused in input-required (5 of them on their second
//     question after an "engineering" re-ask), plus 40 new tasks sent with
//     returnImmediately and the process killed as soon as the last one is
//     acknowledged (some are then acknowledged but not yet run);
//  2. after the restart every paused task has the same open question and
//     the same history, every acknowledged task is taken over once its lease
//     lapses and asks its question; the paused ones are answered and
//     complete; the 40 are answered with returnImmediately and the process
//     is killed again at once;
//  3. after the second restart each of the 40 completes exactly once.
func TestSIGKILLLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the askpoint binary")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "askpoint.db")

	// --- Run 1: pause tasks, acknowledge more, SIGKILL. ---
	srv := startCrashServer(t, bin, db)
	c := crashClient(ctx, t, srv.url)

	paused := make([]string, crashPaused)
	for i := range paused {
		task := crashSendOK(ctx, t, c, crashText("", crashReceipt), false)
		q := crashWantQuestion(t, task, 1)
		paused[i] = string(task.ID)
		if i < crashReasked {
			re := crashSendOK(ctx, t, c, crashText(task.ID, "engineering"), false)
			q2 := crashWantQuestion(t, re, 2)
			if q2.ID == q.ID {
				t.Fatalf("task %s: the re-ask kept question ID %s; want a new one", task.ID, q.ID)
			}
		}
	}
	before := map[string]crashSnap{}
	for _, id := range paused {
		before[id] = crashSnapshot(ctx, t, c, id)
	}

	burst := crashBurstSend(ctx, t, c, crashBurst, func(int) *a2a.Message { return crashText("", crashReceipt) })
	srv.sigkill(t)
	if n := crashCountRunnable(ctx, t, db, paused); n != 0 {
		t.Errorf("%d paused tasks are runnable after the kill; a paused task must owe no run", n)
	}
	unrun := crashCountRunnable(ctx, t, db, burst)
	t.Logf("run 1 killed: %d of %d acknowledged new tasks were still owed a run (acknowledged, not yet run)", unrun, crashBurst)

	// --- Run 2: nothing lost; takeover; answer; SIGKILL mid-answers. ---
	srv = startCrashServer(t, bin, db)
	c = crashClient(ctx, t, srv.url)

	for _, id := range paused {
		got := crashSnapshot(ctx, t, c, id)
		want := before[id]
		if got.state != a2a.TaskStateInputRequired {
			t.Errorf("task %s after restart: state %s, want %s", id, got.state, a2a.TaskStateInputRequired)
		}
		if got.questionID != want.questionID {
			t.Errorf("task %s after restart: open question %q, want %q (as before the kill)", id, got.questionID, want.questionID)
		}
		if !slices.Equal(got.history, want.history) {
			t.Errorf("task %s after restart: history %v, want %v (as before the kill)", id, got.history, want.history)
		}
	}
	burstQ := map[string]string{}
	for _, id := range burst {
		task := crashWaitState(ctx, t, c, id, a2a.TaskStateInputRequired)
		q := crashWantQuestion(t, task, 1)
		burstQ[id] = q.ID
		crashWantRoles(t, task, a2a.MessageRoleUser, a2a.MessageRoleAgent)
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, id := range paused {
		task := crashSendOK(ctx, t, c, crashAnswer(id, before[id].questionID), false)
		if task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("task %s: answered %s, got state %s (%s), want %s", id, before[id].questionID, task.Status.State, crashStatusText(task), a2a.TaskStateCompleted)
		}
		crashWantExpense(t, task)
		if n, want := len(task.History), len(before[id].history)+2; n != want {
			t.Errorf("task %s: history has %d messages after the answer, want %d (the answer and the completion)", id, n, want)
		}
	}

	crashBurstSend(ctx, t, c, len(burst), func(i int) *a2a.Message { return crashAnswer(burst[i], burstQ[burst[i]]) })
	srv.sigkill(t)
	unrun = crashCountRunnable(ctx, t, db, burst)
	t.Logf("run 2 killed: %d of %d acknowledged answers were still owed a run", unrun, len(burst))

	// --- Run 3: every acknowledged answer completes, exactly once. ---
	srv = startCrashServer(t, bin, db)
	c = crashClient(ctx, t, srv.url)
	for _, id := range burst {
		task := crashWaitState(ctx, t, c, id, a2a.TaskStateCompleted)
		crashWantExpense(t, task)
		// request, question, answer, completion: nothing run twice.
		crashWantRoles(t, task, a2a.MessageRoleUser, a2a.MessageRoleAgent, a2a.MessageRoleUser, a2a.MessageRoleAgent)
	}
	for _, id := range paused {
		task := crashGet(ctx, t, c, id)
		if task.Status.State != a2a.TaskStateCompleted {
			t.Errorf("task %s: state %s after the second restart, want %s", id, task.Status.State, a2a.TaskStateCompleted)
		}
	}
	srv.sigkill(t)
}

// TestLapsedLeaseTakenOverBySecondServer is the in-process, deterministic
// version of a crash between acknowledgement and run: one server with one
// worker holds a "block" run, so two more acknowledged tasks wait in its
// queue, never run. The server stops (a graceful stop releases all three
// leases; that is checked), then the leases are put back as a crashed node
// would have left them (held), and a second server on the same file leaves
// them alone until they lapse, then takes all three over and finishes them.
func TestLapsedLeaseTakenOverBySecondServer(t *testing.T) {
	const lease, held = time.Second, 2 * time.Second
	db := filepath.Join(t.TempDir(), "askpoint.db")
	key := apitest.UniqueKey(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	env1 := apitest.Start(t, apitest.Options{DBPath: db, Quiet: true, Config: func(c *askpoint.Config) {
		c.NodeID, c.Workers, c.LeaseDuration, c.PollInterval = "node-1", 1, lease, 100*time.Millisecond
	}})
	script := env1.Client(t, "script", a2a.TransportProtocolJSONRPC)
	expense := env1.Client(t, "expense", a2a.TransportProtocolJSONRPC)

	blocked := crashSendOK(ctx, t, script, crashText("", "block "+key), true)
	crashWaitState(ctx, t, script, string(blocked.ID), a2a.TaskStateWorking) // the only worker holds it
	asks := crashSendOK(ctx, t, script, crashText("", "ask"), true)
	exp := crashSendOK(ctx, t, expense, crashText("", crashReceipt), true)

	env1.Close()

	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	wantState := map[a2a.TaskID]a2a.TaskState{
		blocked.ID: a2a.TaskStateWorking,   // its step was abandoned by the stop
		asks.ID:    a2a.TaskStateSubmitted, // acknowledged, never run
		exp.ID:     a2a.TaskStateSubmitted,
	}
	heldUntil := time.Now().Add(held)
	for _, id := range []a2a.TaskID{blocked.ID, asks.ID, exp.ID} {
		row, err := st.GetTask(ctx, string(id))
		if err != nil {
			t.Fatal(err)
		}
		if !row.Runnable || row.State != wantState[id] || row.LeaseOwner != "node-1" {
			t.Fatalf("task %s after stop: runnable=%v state=%s owner=%q; want runnable, %s, node-1",
				id, row.Runnable, row.State, row.LeaseOwner, wantState[id])
		}
		if !row.LeaseUntil.IsZero() {
			t.Errorf("task %s after a graceful stop: lease held until %v; want it released so the next start runs it at once",
				id, row.LeaseUntil)
		}
		// A crashed node releases nothing: put the lease back as held.
		if err := st.ExtendLease(ctx, row.ID, "node-1", row.Version, heldUntil); err != nil {
			t.Fatalf("re-hold the lease of task %s: %v", id, err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	apitest.Release(key)

	env2 := apitest.Start(t, apitest.Options{DBPath: db, Quiet: true, Config: func(c *askpoint.Config) {
		c.NodeID, c.LeaseDuration, c.PollInterval = "node-2", lease, 100*time.Millisecond
	}})
	script = env2.Client(t, "script", a2a.TransportProtocolJSONRPC)
	expense = env2.Client(t, "expense", a2a.TransportProtocolJSONRPC)

	// Until the leases lapse, the second server must leave the tasks alone.
	time.Sleep(held / 4)
	for id, want := range wantState {
		c := script
		if id == exp.ID {
			c = expense
		}
		got := crashGet(ctx, t, c, string(id)).Status.State
		if time.Now().Before(heldUntil) && got != want {
			t.Errorf("task %s is %s while node-1's lease still holds it; want %s (untouched)", id, got, want)
		}
	}

	done := crashWaitState(ctx, t, script, string(blocked.ID), a2a.TaskStateCompleted)
	if len(done.Artifacts) != 1 || done.Artifacts[0].Name != "result" {
		t.Errorf("blocked task: artifacts %+v, want one named result", done.Artifacts)
	}

	q := crashWaitState(ctx, t, script, string(asks.ID), a2a.TaskStateInputRequired)
	qq := crashWantQuestion(t, q, 1)
	ans := a2a.NewMessage(a2a.MessageRoleUser, crashData(map[string]any{"questionId": qq.ID, "name": "Ada"}))
	ans.TaskID = asks.ID
	fin := crashSendOK(ctx, t, script, ans, false)
	if fin.Status.State != a2a.TaskStateCompleted || len(fin.Artifacts) != 1 || crashPartsText(fin.Artifacts[0].Parts) != "hello Ada" {
		t.Errorf("ask task: state %s, artifacts %v; want completed with \"hello Ada\"", fin.Status.State, fin.Artifacts)
	}

	e := crashWaitState(ctx, t, expense, string(exp.ID), a2a.TaskStateInputRequired)
	eq := crashWantQuestion(t, e, 1)
	efin := crashSendOK(ctx, t, expense, crashAnswer(string(exp.ID), eq.ID), false)
	if efin.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("expense task: state %s (%s), want completed", efin.Status.State, crashStatusText(efin))
	}
	crashWantExpense(t, efin)
}

// crashServer is one askpoint serve process.
type crashServer struct {
	name     string // for messages: "askpoint", or a node's name
	cmd      *exec.Cmd
	url      string
	dataLine string // what the server said of its store ("askpoint: data in ...")
	log      *apitest.SyncBuffer
	done     chan struct{} // closed once the process has exited and been reaped
}

func startCrashServer(t *testing.T, bin, db string) *crashServer {
	t.Helper()
	s, err := startServer(t, bin, "askpoint", db)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") || strings.HasSuffix(s.url, ":0") {
		t.Fatalf("askpoint serve printed listening URL %q; want the real port on 127.0.0.1", s.url)
	}
	return s
}

// startServer starts `askpoint serve` on 127.0.0.1 with a short lease and
// poll (and extra flags, later ones winning), waits for its listening line, and SIGKILLs it when the test ends
// if it still runs. It returns an error rather than failing the test so
// that it can be called from any goroutine.
func startServer(t *testing.T, bin, name, db string, extra ...string) (*crashServer, error) {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--lease", "2s", "--poll", "200ms", "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	s := &crashServer{name: name, cmd: cmd, log: &apitest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		select {
		case <-s.done:
			return
		default:
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Errorf("%s (pid %d) did not exit after SIGKILL", name, pid)
		}
	})
	type lines struct{ data, url string }
	ready := make(chan lines, 1)
	go func() {
		var l lines
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(s.log, line)
			if d, ok := strings.CutPrefix(line, "askpoint: data in "); ok {
				l.data = d
			}
			if u, ok := strings.CutPrefix(line, "askpoint: listening on "); ok {
				l.url = strings.TrimSpace(u)
				select {
				case ready <- l:
				default:
				}
			}
		}
		_ = cmd.Wait() // after the pipe is drained, as exec requires
		close(s.done)
	}()
	select {
	case l := <-ready:
		s.url, s.dataLine = l.url, l.data
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("%s exited before listening: %v\n%s", name, cmd.ProcessState, s.log)
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("%s printed no listening URL in 30s:\n%s", name, s.log)
	}
}

// sigkill kills the process with SIGKILL (no graceful stop) and reaps it.
func (s *crashServer) sigkill(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(s.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL pid %d: %v", s.cmd.Process.Pid, err)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("askpoint (pid %d) did not exit after SIGKILL", s.cmd.Process.Pid)
	}
	ws, ok := s.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("askpoint exited with %v, want killed by SIGKILL; output:\n%s", s.cmd.ProcessState, s.log)
	}
	if out := s.log.String(); strings.Contains(out, "level=ERROR") || strings.Contains(out, "panic:") {
		t.Errorf("askpoint logged errors before the kill:\n%s", out)
	}
}

// crashClient is an a2a-go client of the expense agent at base, built
// from its card with opts.
func crashClient(ctx context.Context, t *testing.T, base string, opts ...a2aclient.FactoryOption) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(ctx, base+"/expense")
	if err != nil {
		t.Fatalf("resolve the expense agent's card at %s: %v", base, err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, opts...)
	if err != nil {
		t.Fatalf("NewFromCard: %v", err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

func crashText(taskID a2a.TaskID, text string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.TaskID = taskID
	return m
}

func crashData(v map[string]any) *a2a.Part {
	p := a2a.NewDataPart(v)
	p.MediaType = question.MediaTypeJSON
	return p
}

func crashAnswer(taskID, questionID string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, crashData(map[string]any{"questionId": questionID, "costCentre": "CC-4410"}))
	m.TaskID = a2a.TaskID(taskID)
	return m
}

func crashSend(ctx context.Context, c *a2aclient.Client, m *a2a.Message, immediately bool) (*a2a.Task, error) {
	req := &a2a.SendMessageRequest{Message: m}
	if immediately {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	}
	return apitest.Send(ctx, c, req)
}

func crashSendOK(ctx context.Context, t *testing.T, c *a2aclient.Client, m *a2a.Message, immediately bool) *a2a.Task {
	t.Helper()
	task, err := crashSend(ctx, c, m, immediately)
	if err != nil {
		t.Fatalf("SendMessage(task %q, %s): %v", m.TaskID, crashPartsText(m.Parts), err)
	}
	return task
}

// crashBurstSend sends n messages at once, all with returnImmediately, and
// returns the acknowledged task IDs in order.
func crashBurstSend(ctx context.Context, t *testing.T, c *a2aclient.Client, n int, msg func(i int) *a2a.Message) []string {
	t.Helper()
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			task, err := crashSend(ctx, c, msg(i), true)
			if err == nil {
				ids[i] = string(task.ID)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("burst of %d sends: %v", n, err)
	}
	return ids
}

func crashGet(ctx context.Context, t *testing.T, c *a2aclient.Client, id string) *a2a.Task {
	t.Helper()
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
	if err != nil {
		t.Fatalf("GetTask(%s): %v", id, err)
	}
	return task
}

func crashWaitState(ctx context.Context, t *testing.T, c *a2aclient.Client, id string, want a2a.TaskState) *a2a.Task {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		task := crashGet(ctx, t, c, id)
		if task.Status.State == want {
			return task
		}
		if task.Status.State.Terminal() || time.Now().After(deadline) {
			t.Fatalf("task %s: state %s (%s), want %s", id, task.Status.State, crashStatusText(task), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crashWantQuestion checks the task is paused on a question at the given
// attempt and returns the question.
func crashWantQuestion(t *testing.T, task *a2a.Task, attempt int) *question.Question {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("task %s: state %s (%s), want %s", task.ID, task.Status.State, crashStatusText(task), a2a.TaskStateInputRequired)
	}
	q, ok, err := question.FromMessage(task.Status.Message)
	if err != nil || !ok || q.ID == "" {
		t.Fatalf("task %s: no question in the status message (ok=%v, err=%v): %s", task.ID, ok, err, crashStatusText(task))
	}
	if got := max(q.Attempt, 1); got != attempt {
		t.Fatalf("task %s: question %s is attempt %d, want %d", task.ID, q.ID, got, attempt)
	}
	return q
}

func crashWantExpense(t *testing.T, task *a2a.Task) {
	t.Helper()
	if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "expense" {
		t.Errorf("task %s: artifacts %+v, want exactly one named expense", task.ID, task.Artifacts)
		return
	}
	for _, p := range task.Artifacts[0].Parts {
		if d, ok := p.Content.(a2a.Data); ok {
			m, _ := d.Value.(map[string]any)
			if id, _ := m["expenseId"].(string); strings.HasPrefix(id, "EXP-") && m["costCentre"] == "CC-4410" {
				return
			}
		}
	}
	t.Errorf("task %s: the expense artifact holds no expenseId charged to CC-4410: %+v", task.ID, task.Artifacts[0].Parts)
}

func crashWantRoles(t *testing.T, task *a2a.Task, roles ...a2a.MessageRole) {
	t.Helper()
	var got []a2a.MessageRole
	for _, m := range task.History {
		got = append(got, m.Role)
	}
	if fmt.Sprint(got) != fmt.Sprint(roles) {
		t.Errorf("task %s: history roles %v, want %v", task.ID, got, roles)
	}
}

// crashSnap is what must survive a kill of a paused task.
type crashSnap struct {
	state      a2a.TaskState
	questionID string
	history    []string // message IDs, in order
}

func crashSnapshot(ctx context.Context, t *testing.T, c *a2aclient.Client, id string) crashSnap {
	t.Helper()
	task := crashGet(ctx, t, c, id)
	s := crashSnap{state: task.Status.State}
	if q, ok, _ := question.FromMessage(task.Status.Message); ok {
		s.questionID = q.ID
	}
	for _, m := range task.History {
		s.history = append(s.history, m.ID)
	}
	return s
}

// crashCountRunnable opens the database of a killed server and returns how
// many of ids are still owed a run; it fails the test if any is missing.
func crashCountRunnable(ctx context.Context, t *testing.T, db string, ids []string) int {
	t.Helper()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatalf("open %s after the kill: %v", db, err)
	}
	defer st.Close()
	n := 0
	for _, id := range ids {
		row, err := st.GetTask(ctx, id)
		if err != nil {
			t.Fatalf("task %s after the kill: %v", id, err)
		}
		if row.Runnable {
			n++
		}
	}
	return n
}

func crashStatusText(task *a2a.Task) string {
	if task.Status.Message == nil {
		return "no status message"
	}
	return crashPartsText(task.Status.Message.Parts)
}

func crashPartsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			b.WriteString(string(c))
		case a2a.Data:
			fmt.Fprintf(&b, "%v", c.Value)
		}
	}
	return b.String()
}
