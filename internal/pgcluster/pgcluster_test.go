package pgcluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/askpoint/askpoint/internal/pgcluster"
)

// TestClusterRestarts: the cluster serves, refuses while stopped, and
// serves again after a restart and a start.
func TestClusterRestarts(t *testing.T) {
	c := pgcluster.Start(t)
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	if err := ping(); err != nil {
		t.Fatalf("ping a started cluster: %v", err)
	}
	c.Restart()
	if err := ping(); err != nil {
		t.Fatalf("ping after restart: %v", err)
	}
	c.Stop()
	if err := ping(); err == nil {
		t.Fatal("ping of a stopped cluster succeeded")
	}
	c.StartServer()
	if err := ping(); err != nil {
		t.Fatalf("ping after start: %v", err)
	}
}
