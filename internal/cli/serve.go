package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/store/sqlite"
)

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8420", "`host:port` to listen on")
	db := fs.String("db", "askpoint.db", "SQLite database `file` (created if missing)")
	streams := fs.String("streams", "close", "what streams do at input-required: close or open")
	lease := fs.Duration("lease", 30*time.Second, "how long a run's lease lasts before another node may take the task over")
	poll := fs.Duration("poll", time.Second, "how often to look for runs whose lease lapsed")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askpoint serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: --log-level %q: use debug, info, warn or error\n", *logLevel)
		return 2
	}
	var mode askpoint.InputRequiredStreams
	switch *streams {
	case "close":
		mode = askpoint.CloseStreams
	case "open":
		mode = askpoint.KeepStreamsOpen
	default:
		fmt.Fprintf(stderr, "askpoint serve: --streams %q: use close or open\n", *streams)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	path, err := filepath.Abs(*db)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: --db %q: %v\n", *db, err)
		return 1
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
		return 1
	}
	defer st.Close()

	srv, err := askpoint.NewServer(askpoint.Config{
		Store: st, Logger: logger, InputRequiredStreams: mode, LeaseDuration: *lease, PollInterval: *poll,
	})
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
		return 1
	}
	if err := srv.Register(askpoint.AgentSpec{
		Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, expense.IDLedger{}, nil), Card: expense.Card(),
	}); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
		return 1
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: listen on %s: %v\n", *addr, err)
		return 1
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
		return 1
	}
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "askpoint: data in %s\n", path)
	fmt.Fprintf(stdout, "askpoint: listening on %s\n", base)
	for _, name := range srv.Agents() {
		fmt.Fprintf(stdout, "askpoint: agent %q card: %s/%s/.well-known/agent-card.json\n", name, base, name)
	}
	fmt.Fprintf(stdout, "askpoint: try: askpoint send %s/expense \"File my taxi receipt from Tuesday, 42 euros\"\n", base)

	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
			_ = srv.Stop(context.Background())
			return 1
		}
	}
	fmt.Fprintln(stdout, "askpoint: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdownCtx)
	if err := srv.Stop(shutdownCtx); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: stop: %v\n", err)
		return 1
	}
	return 0
}
