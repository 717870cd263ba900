package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// serverProc is a bench server running in its own process.
type serverProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	base  string // http://127.0.0.1:PORT
	pid   int
	done  chan error
	hc    *http.Client
}

// startServer runs exe args (a bench server) and waits until it says where
// it listens.
func startServer(ctx context.Context, exe string, args []string, stderr io.Writer) (*serverProc, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}
	p := &serverProc{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid, done: make(chan error, 1), hc: &http.Client{Timeout: 30 * time.Minute}}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), listeningPrefix); ok && !sent {
				addr <- a
				sent = true
			}
		}
		if !sent {
			close(addr)
		}
	}()
	go func() { p.done <- cmd.Wait() }()
	select {
	case a, ok := <-addr:
		if !ok {
			p.stop()
			return nil, fmt.Errorf("bench server %v exited before listening", args)
		}
		p.base = "http://" + a
		return p, nil
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("bench server %v did not start listening within 60s", args)
	case <-ctx.Done():
		p.stop()
		return nil, ctx.Err()
	}
}

// stop closes the server's stdin (it exits on EOF) and kills it if it has
// not exited within 10 s.
func (p *serverProc) stop() {
	_ = p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// clockTick is USER_HZ: the unit of utime and stime in /proc/PID/stat. It
// is 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// cpu is the server process's user+system CPU time so far, from the OS.
func (p *serverProc) cpu() (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("unexpected /proc/PID/stat format")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return 0, errors.New("unexpected /proc/PID/stat format")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(ut+st) * clockTick, nil
}

// rss is the server process's resident set size in bytes, from the OS.
func (p *serverProc) rss() (int64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/PID/status")
}

func (p *serverProc) call(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(body)))
	}
	if out != nil {
		return json.Unmarshal(body, out)
	}
	return nil
}

// stats reads the server's figures and with reset starts its resume
// latencies again.
func (p *serverProc) stats(ctx context.Context, reset bool) (Stats, error) {
	var st Stats
	path := "/debug/bench/stats"
	if reset {
		path += "?reset=1"
	}
	err := p.call(ctx, http.MethodGet, path, &st)
	return st, err
}

// counters reads the server's figures without its resume latencies, as a
// window starts and ends.
func (p *serverProc) counters(ctx context.Context) (Stats, error) {
	var st Stats
	err := p.call(ctx, http.MethodGet, "/debug/bench/stats?counters=1", &st)
	return st, err
}

func (p *serverProc) gc(ctx context.Context) (Stats, error) {
	var st Stats
	err := p.call(ctx, http.MethodPost, "/debug/bench/gc", &st)
	return st, err
}

func (p *serverProc) seed(ctx context.Context, n int) (Stats, error) {
	var st Stats
	err := p.call(ctx, http.MethodPost, fmt.Sprintf("/debug/bench/seed?n=%d", n), &st)
	return st, err
}

// profile saves a pprof profile of the server: path is e.g.
// "/debug/pprof/profile?seconds=5" or "/debug/pprof/allocs".
func (p *serverProc) profile(ctx context.Context, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
