package servertest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/store/sqlite"
)

// Tests of time at the engine level run in a testing/synctest bubble: a
// server on a real SQLite file in t.TempDir(), started but not served,
// called through its agents' request handlers (no HTTP, no socket: a
// goroutine blocked in network I/O would keep the bubble's clock from
// moving). In the bubble time.Now is the bubble's clock, so the server
// needs no clock of its own (Config.Now stays unset), and time.Sleep(d)
// moves it by d at once once every goroutine waits; synctest.Wait then
// returns when what came due has been acted on.

// inBubble runs f in a new bubble (synctest.Test). The bubble's clock
// moves only while every goroutine in it waits, so a server loop that
// keeps running at one instant would make the test wait for ever: a
// watchdog on the real clock fails the run, naming the test, after
// bubbleWatchdog.
func inBubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	name := t.Name()
	watchdog := time.AfterFunc(bubbleWatchdog, func() {
		panic(fmt.Sprintf("%s ran for %v of real time: a goroutine of the server may keep running without waiting, so that the bubble's clock never moves", name, bubbleWatchdog))
	})
	defer watchdog.Stop()
	synctest.Test(t, f)
}

// bubbleWatchdog bounds the real time a bubble test may take.
const bubbleWatchdog = time.Minute

// bubblePoll is the poll interval of a server in a bubble: the timer loops
// wake at the next due time the store gives them (and at every commit that
// sets an earlier one), so a long poll costs no test a wait, while a short
// one would make an hour of bubble time thousands of rounds of queries.
const bubblePoll = time.Hour

// bubbleServer is a started server on SQLite in t.TempDir(), with the
// given agents, stopped and its store closed when t ends. Call it inside
// the bubble.
type bubbleServer struct {
	srv  *askpoint.Server
	st   *sqlite.Store
	path string // the SQLite file
	once sync.Once
}

func startBubble(t *testing.T, adjust func(*askpoint.Config), agents ...askpoint.AgentSpec) *bubbleServer {
	t.Helper()
	return startBubbleOn(t, filepath.Join(t.TempDir(), "askpoint.db"), adjust, agents...)
}

// startBubbleOn is startBubble on the SQLite file at path (a node started
// again on the store another one left).
func startBubbleOn(t *testing.T, path string, adjust func(*askpoint.Config), agents ...askpoint.AgentSpec) *bubbleServer {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	cfg := askpoint.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PollInterval: bubblePoll}
	if adjust != nil {
		adjust(&cfg)
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	for _, a := range agents {
		if err := srv.Register(a); err != nil {
			t.Fatalf("Register(%s): %v", a.Name, err)
		}
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	b := &bubbleServer{srv: srv, st: st, path: path}
	t.Cleanup(func() { b.stop(t) })
	return b
}

// stop stops the server and closes its store, once.
func (b *bubbleServer) stop(t *testing.T) {
	b.once.Do(func() {
		if err := b.srv.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if err := b.st.Close(); err != nil {
			t.Errorf("close the store: %v", err)
		}
	})
}

// handler is the request handler of the named agent.
func (b *bubbleServer) handler(t *testing.T, name string) a2asrv.RequestHandler {
	t.Helper()
	h, ok := b.srv.RequestHandler(name)
	if !ok {
		t.Fatalf("no agent %q", name)
	}
	return h
}
