//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// The edge of the real server (issue 16): slow and idle connections,
// a connection limit, stopping with open streams, and memory under large
// lists. Every count and wait is bounded.

// rawConn dials the server's host:port.
func rawConn(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedWithin waits (bounded by limit) until the server closes c, and
// returns how long that took; it fails if the server answers with
// anything but a close or an error status.
func closedWithin(t *testing.T, c net.Conn, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(limit))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue // an error response (408, 400) before the close
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the server still held the connection after %s", limit)
		}
		return time.Since(start)
	}
}

func TestEdgeSlowAndIdleConnectionsAreClosed(t *testing.T) {
	bin := buildAskpoint(t)
	s, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "a.db"),
		"--header-timeout", "1s", "--body-timeout", "1s", "--idle-timeout", "1s")
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(s.url, "http://")

	slowHeaders := rawConn(t, s.url)
	fmt.Fprintf(slowHeaders, "GET /expense/.well-known/agent-card.json HTTP/1.1\r\nHost: %s\r\n", host)
	slowBody := rawConn(t, s.url)
	fmt.Fprintf(slowBody, "POST /expense/jsonrpc HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", host)
	idle := rawConn(t, s.url)
	fmt.Fprintf(idle, "GET /expense/.well-known/agent-card.json HTTP/1.1\r\nHost: %s\r\n\r\n", host)
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("card on the idle connection: %v %v", resp, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	for name, c := range map[string]net.Conn{"slow headers": slowHeaders, "slow body": slowBody, "idle keep-alive": idle} {
		if d := closedWithin(t, c, 15*time.Second); d > 10*time.Second {
			t.Errorf("%s: closed after %s; want about 1s", name, d)
		}
	}
}

// Past --max-connections a caller is answered at once, never left in the
// backlog: the connection idle the longest makes room, and when every
// connection is busy (here: open and silent, as a slow or hostile client
// leaves it) the new one gets a 503 that says why.
func TestEdgeConnectionLimitClosesIdleFirstAndRefusesAtOnce(t *testing.T) {
	bin := buildAskpoint(t)
	s, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "a.db"), "--max-connections", "4", "--idle-timeout", "1m")
	if err != nil {
		t.Fatal(err)
	}
	card := s.url + "/expense/.well-known/agent-card.json"
	var idle []net.Conn
	for range 4 {
		c := rawConn(t, s.url)
		fmt.Fprintf(c, "GET /expense/.well-known/agent-card.json HTTP/1.1\r\nHost: %s\r\n\r\n", strings.TrimPrefix(s.url, "http://"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		idle = append(idle, c)
	}
	quick := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := quick.Get(card)
	if err != nil {
		t.Fatalf("a fifth connection while 4 idle keep-alive ones are held: %v; want it served, an idle one closed to make room", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a fifth connection while 4 idle ones are held: %s, want 200", resp.Status)
	}
	// One of the idle ones was closed to make room (the one idle the
	// longest, as the server saw them become idle, which need not be the
	// order their answers reached the test).
	closed := make(chan int, len(idle))
	for i, c := range idle {
		go func() {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				closed <- i
				return
			}
			closed <- -1
		}()
	}
	if first := <-closed; first < 0 {
		t.Errorf("no idle connection was closed to make room for the fifth")
	}
	for _, c := range idle {
		c.Close() // ends the other reads
	}
	for range len(idle) - 1 {
		<-closed
	}

	// Four busy connections: open and silent (the server waits for their
	// first bytes). None is idle, so a fifth is refused, at once.
	for range 4 {
		rawConn(t, s.url)
	}
	var refused *http.Response
	for range 50 { // the idle ones just closed leave the count as their closes are seen
		start := time.Now()
		resp, err := quick.Get(card)
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("refused after %s; want at once", d)
			}
			refused = resp
			break
		}
		if err == nil {
			resp.Body.Close()
		}
	}
	if refused == nil {
		t.Fatal("no connection was refused while 4 silent ones held every slot of --max-connections 4")
	}
	body, _ := io.ReadAll(refused.Body)
	refused.Body.Close()
	if !strings.Contains(string(body), "connections") || refused.Header.Get("Retry-After") == "" {
		t.Errorf("refusal = %q (Retry-After %q); want it to say the server holds as many connections as it takes, with a Retry-After", body, refused.Header.Get("Retry-After"))
	}
	if strings.Contains(s.log.String(), "too many open files") {
		t.Errorf("the server failed accept:\n%s", s.log)
	}
}

func TestEdgeSIGTERMWithOpenStreamsExitsAtOnceAndLosesNothing(t *testing.T) {
	bin := buildAskpoint(t)
	db := filepath.Join(t.TempDir(), "a.db")
	s, err := startServer(t, bin, "askpoint", db, "--streams", "open")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := crashClient(ctx, t, s.url)
	var ids []a2a.TaskID
	for range 4 {
		task := crashSendOK(ctx, t, c, crashText("", "File my taxi receipt from Tuesday, 42 euros"), false)
		if task.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("task %s: %s, want input-required", task.ID, task.Status.State)
		}
		ids = append(ids, task.ID)
	}
	// Three open subscriptions.
	ended := make(chan error, 3)
	opened := make(chan struct{}, 3)
	for _, id := range ids[:3] {
		go func() {
			first := true
			for _, err := range c.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
				if first {
					first = false
					opened <- struct{}{}
				}
				if err != nil {
					ended <- err
					return
				}
			}
			ended <- nil
		}()
	}
	for range 3 {
		select {
		case <-opened:
		case <-ctx.Done():
			t.Fatal("the subscriptions did not open")
		}
	}
	// An answer acknowledged just before the stop.
	q := crashWantQuestion(t, crashGet(ctx, t, c, string(ids[3])), 1)
	if fin := crashSendOK(ctx, t, c, crashAnswer(string(ids[3]), q.ID), false); fin.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("answer: %s", fin.Status.State)
	}
	start := time.Now()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("askpoint did not exit within 15s of SIGTERM:\n%s", s.log)
	}
	took := time.Since(start)
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0:\n%s", code, s.log)
	}
	if took > 2*time.Second {
		t.Errorf("SIGTERM with 3 open streams took %s; want about a second", took)
	}
	for range 3 {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("a subscription was still open after the server exited")
		}
	}
	t.Logf("SIGTERM with 3 open streams: exit status %d in %s", s.cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))

	// Nothing acknowledged was lost.
	s2, err := startServer(t, bin, "askpoint", db, "--streams", "open")
	if err != nil {
		t.Fatal(err)
	}
	c2 := crashClient(ctx, t, s2.url)
	for _, id := range ids[:3] {
		if st := crashGet(ctx, t, c2, string(id)).Status.State; st != a2a.TaskStateInputRequired {
			t.Errorf("task %s after the restart: %s, want input-required", id, st)
		}
	}
	crashWantExpense(t, crashGet(ctx, t, c2, string(ids[3])))
}

// rssKB reads a process's resident set (VmRSS) and its peak (VmHWM) in kB.
func rssKB(t *testing.T, pid int) (rss, peak int) {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = n
		case "VmHWM:":
			peak = n
		}
	}
	return rss, peak
}

func TestEdgeSoakListTasksOverLargeTasksKeepsRSSBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak: 100 tasks of ~900 KB")
	}
	bin := buildAskpoint(t)
	s, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	pid := s.cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pad := strings.Repeat("receipt ", 900<<10/8)
	rpc := s.url + "/expense/jsonrpc"
	post := func(body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rpc, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", "1.0")
		return http.DefaultClient.Do(req)
	}
	for i := range 100 {
		// The bulk rides in the message's metadata, which is stored with
		// the message and returned in the task's history.
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendMessage","params":{"message":{"messageId":"big-%d","role":"ROLE_USER","metadata":{"scan":%q},"parts":[{"text":"File my taxi receipt from Tuesday, 42 euros"}]}}}`, i, i, pad)
		resp, err := post(body)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.Contains(raw, []byte(`"result"`)) {
			t.Fatalf("send %d: %s", i, raw[:min(len(raw), 300)])
		}
	}
	before, _ := rssKB(t, pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	maxReply, pages := 0, 0
	start := time.Now()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 2 {
				token := ""
				for page := 0; page < 200; page++ {
					url := s.url + "/expense/rest/tasks?pageSize=100"
					if token != "" {
						url += "&pageToken=" + token
					}
					req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
					req.Header.Set("A2A-Version", "1.0")
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Errorf("worker %d round %d: %v", w, round, err)
						return
					}
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					mu.Lock()
					maxReply, pages = max(maxReply, len(raw)), pages+1
					mu.Unlock()
					i := bytes.Index(raw, []byte(`"nextPageToken":"`))
					if i < 0 {
						break
					}
					rest := raw[i+len(`"nextPageToken":"`):]
					if token = string(rest[:bytes.IndexByte(rest, '"')]); token == "" {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	after, peak := rssKB(t, pid)
	t.Logf("100 tasks of ~900 KB; 4 parallel listers x 2 full walks of pageSize=100: %d pages in %s, largest reply %d KB; server RSS %d MB before, %d MB after, peak %d MB",
		pages, took.Round(time.Millisecond), maxReply>>10, before>>10, after>>10, peak>>10)
	if peak > 200<<10 {
		t.Errorf("server RSS peaked at %d MB; want under 200 MB", peak>>10)
	}
}

func TestEdgeSoakIdleAndSlowConnectionsDoNotStopTheWorkedExample(t *testing.T) {
	if testing.Short() {
		t.Skip("a soak: 300 connections")
	}
	bin := buildAskpoint(t)
	s, err := startServer(t, bin, "askpoint", filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(s.url, "http://")
	// 200 idle keep-alive connections, each after one request.
	for i := range 200 {
		c := rawConn(t, s.url)
		fmt.Fprintf(c, "GET /expense/.well-known/agent-card.json HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// 100 slow bodies, a byte at a time.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 100 {
		c := rawConn(t, s.url)
		fmt.Fprintf(c, "POST /expense/jsonrpc HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: 100000\r\n\r\n", host)
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	// The worked example, meanwhile.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := crashClient(ctx, t, s.url)
	task := crashSendOK(ctx, t, c, crashText("", "File my taxi receipt from Tuesday, 42 euros"), false)
	q := crashWantQuestion(t, task, 1)
	reask := crashSendOK(ctx, t, c, crashText(task.ID, "engineering"), false)
	if reask.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("re-ask: %s", reask.Status.State)
	}
	q = crashWantQuestion(t, reask, 2)
	fin := crashSendOK(ctx, t, c, crashAnswer(string(task.ID), q.ID), false)
	crashWantExpense(t, fin)
	took := time.Since(start)
	t.Logf("worked example with 200 idle and 100 slow-body connections open: completed in %s", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("the worked example took %s beside the soak; want a few seconds", took)
	}
}
