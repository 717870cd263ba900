package servertest_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/internal/dbtest"
)

// Logs say what happened, once (issue 30, item 10).

// loggedTo makes a server's logger write every line, down to debug, to buf.
func loggedTo(buf *apitest.SyncBuffer) func(*askpoint.Config) {
	return func(c *askpoint.Config) {
		c.Logger = slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
}

// loudLines are the WARN and ERROR lines of log text.
func loudLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	return out
}

// TestARefusedRequestIsLoggedOnce: while the SQLite file cannot be written
// (chattr +i, as a full disk would refuse it), a request that the server
// tries again and then refuses as retryable leaves one line in the log,
// which names the request and the store's error, on every binding: there
// were seven, one ERROR per attempt and a WARN naming only "internal
// error". A caller that goes away while its request is being tried again
// leaves none.
func TestARefusedRequestIsLoggedOnce(t *testing.T) {
	var buf apitest.SyncBuffer
	env := apitest.Start(t, apitest.Options{Quiet: true, Config: loggedTo(&buf)})
	ctx := testCtx(t)
	paused := sendState(t, ctx, env.Client(t, "script", a2a.TransportProtocolJSONRPC), userText("ask"), a2a.TaskStateInputRequired)
	files := []string{env.DBPath, env.DBPath + "-wal", filepath.Dir(env.DBPath)}
	if !immutable(t, true, files...) {
		if os.Getenv("CI") != "" {
			t.Fatal("chattr +i does not work here; the unwritable-file case cannot run")
		}
		t.Skip("chattr +i does not work here (needs root and a file system with the immutable attribute)")
	}
	t.Cleanup(func() { immutable(t, false, files...) })
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		// Each binding's calls get their own bound: every refusal is tried
		// for about a second, and three bindings' worth under load could
		// outlast one shared callTimeout.
		ctx := testCtx(t)
		c := env.Client(t, "script", tr)
		for _, m := range []*a2a.Message{userText("complete"), followUp(paused.ID, userData(map[string]any{"name": "Ada"}))} {
			before := len(buf.String())
			_, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m})
			if err == nil || !strings.Contains(err.Error(), "send the request again") {
				t.Fatalf("SendMessage while unwritable: %v, want the retryable refusal", err)
			}
			lines := loudLines(buf.String()[before:])
			if len(lines) != 1 || !strings.Contains(lines[0], "op=SendMessage") || !strings.Contains(lines[0], "disk I/O error") {
				t.Errorf("one refused SendMessage logged %d lines:\n%s\nwant one naming the request and the store's error", len(lines), strings.Join(lines, "\n"))
			}
		}
		// A caller that gives up during the tries: nothing to warn of. The
		// next refusal, tried for about a second after it, is its signal.
		before := len(buf.String())
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, _ = c.SendMessage(short, &a2a.SendMessageRequest{Message: userText("complete")})
		cancel()
		_, _ = c.SendMessage(ctx, &a2a.SendMessageRequest{Message: userText("complete")})
		if lines := loudLines(buf.String()[before:]); len(lines) != 1 {
			t.Errorf("a caller that went away and one refused request logged %d lines:\n%s\nwant one, the refusal's", len(lines), strings.Join(lines, "\n"))
		}
	})
}

// TestACallerThatWentAwayIsNoError: a request whose caller goes away while
// the store works on it (here a CancelTask whose write waits for a row
// another connection holds) fails with the context's error; that is a
// debug line saying the caller went away, not an ERROR "internal error",
// on every binding.
func TestACallerThatWentAwayIsNoError(t *testing.T) {
	url := dbtest.Schema(t)
	var buf apitest.SyncBuffer
	env := apitest.Start(t, apitest.Options{Quiet: true, PostgresURL: url, Config: loggedTo(&buf)})
	ctx := testCtx(t)
	c := env.Client(t, "script", a2a.TransportProtocolJSONRPC)
	eachTransport(t, func(t *testing.T, tr a2a.TransportProtocol) {
		task := sendState(t, ctx, c, userText("ask"), a2a.TaskStateInputRequired)
		caller := env.Client(t, "script", tr)
		getTask(t, ctx, caller, task.ID) // connected before its call below is timed
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		if _, err := tx.Exec(ctx, `SELECT id FROM tasks WHERE id = $1 FOR UPDATE`, string(task.ID)); err != nil {
			t.Fatal(err)
		}
		before := len(buf.String())
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err = caller.CancelTask(short, &a2a.CancelTaskRequest{ID: task.ID})
		cancel()
		if err == nil {
			t.Fatal("CancelTask of a locked task returned before its caller went away")
		}
		// The line of this request (an ERROR before, a debug line now).
		if !buf.WaitFor("op=CancelTask task="+string(task.ID), 10*time.Second) {
			t.Fatalf("nothing logged of the CancelTask; the log:\n%s", buf.String()[before:])
		}
		if !strings.Contains(buf.String()[before:], "the caller went away") {
			t.Errorf("no line says the caller went away; the log:\n%s", buf.String()[before:])
		}
		if lines := loudLines(buf.String()[before:]); len(lines) > 0 {
			t.Errorf("a caller that went away logged:\n%s\nwant no WARN or ERROR", strings.Join(lines, "\n"))
		}
	})
}
