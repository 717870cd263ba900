package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/question"
)

// TestStatsFromTheStore: askpoint stats --db (and $ASKPOINT_DB) prints the
// table from the database of a server that is running on it, which goes
// on answering; a database that does not exist is an error, and is not
// created.
func TestStatsFromTheStore(t *testing.T) {
	env := apitest.Start(t, apitest.Options{Quiet: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	card, err := agentcard.NewResolver(nil).Resolve(ctx, env.URL+"/expense")
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctx, card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	ask := func() *a2a.Task {
		t.Helper()
		res, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("File my taxi receipt from Tuesday, 42 euros"))})
		if err != nil {
			t.Fatal(err)
		}
		return res.(*a2a.Task)
	}
	ask() // left open
	declined := ask()
	q, ok, err := question.FromMessage(declined.Status.Message)
	if err != nil || !ok {
		t.Fatalf("no question: %v", err)
	}
	p := a2a.NewDataPart(map[string]any{"questionId": q.ID, "action": "decline"})
	p.MediaType = question.MediaTypeJSON
	m := a2a.NewMessage(a2a.MessageRoleUser, p)
	m.TaskID = declined.ID
	if _, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: m}); err != nil {
		t.Fatal(err)
	}

	row := regexp.MustCompile(`(?m)^expense\s+costCentre\s+2\s+0\s+-\s+-\s+0%\s+0%\s+50%\s*$`)
	stdout, stderr, code := run(t, "stats", "--db", env.DBPath)
	if code != 0 || !row.MatchString(stdout) || !strings.Contains(stdout, "DECLINE RATE") {
		t.Errorf("askpoint stats --db: exit %d, stdout:\n%s\nstderr: %s\nwant a row: 2 asked, none answered, 50%% declined", code, stdout, stderr)
	}
	t.Setenv("ASKPOINT_DB", env.DBPath)
	if stdout, stderr, code := run(t, "stats"); code != 0 || !row.MatchString(stdout) {
		t.Errorf("askpoint stats with $ASKPOINT_DB: exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	// The server still takes questions after the reads.
	ask()

	missing := filepath.Join(t.TempDir(), "none.db")
	_, stderr, code = run(t, "stats", "--db", missing)
	if code != 1 || !strings.Contains(stderr, "no such database file") {
		t.Errorf("askpoint stats --db of a missing file: exit %d, stderr %q; want 1 saying there is no such file", code, stderr)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("askpoint stats --db created %s", missing)
	}
}
