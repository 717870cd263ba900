package cli

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2aclient"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the expense ledger on PostgreSQL

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/examples/approval"
	"github.com/askpoint/askpoint/examples/booking"
	"github.com/askpoint/askpoint/examples/conformance"
	"github.com/askpoint/askpoint/examples/expense"
	"github.com/askpoint/askpoint/examples/planning"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/engine"
	"github.com/askpoint/askpoint/internal/front"
	"github.com/askpoint/askpoint/internal/grpcfront"
	"github.com/askpoint/askpoint/internal/telemetry"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/store"
	"github.com/askpoint/askpoint/store/postgres"
	"github.com/askpoint/askpoint/store/sqlite"
)

func serve(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8420", "`host:port` to listen on")
	dbValue := dbFlag(fs, "askpoint.db", "SQLite database `file` (created if missing), or a postgres:// URL to run several nodes on one PostgreSQL")
	streams := fs.String("streams", "close", "what streams do at input-required: close or open")
	lease := fs.Duration("lease", 30*time.Second, "how long a run's lease lasts before another node may take the task over")
	poll := fs.Duration("poll", time.Second, "how often to look for runs whose lease lapsed")
	logLevel := fs.String("log-level", "info", "debug (one line per task transition), info, warn or error")
	logFormat := fs.String("log-format", "text", "log lines as text or json")
	metricsAddr := fs.String("metrics-addr", "", "`host:port` to serve Prometheus /metrics on (off when empty; never the A2A address). Traces follow the OTEL_* environment variables")
	expiry := fs.Duration("question-expiry", 24*time.Hour, "how long a question stays open when its agent sets no expiry")
	reminders := fs.String("reminders", "0.5,0.9", "when to remind push receivers of an open question, as fractions of the way to its expiry (comma-separated; \"none\" for no reminders)")
	noSweep := fs.Bool("no-sweeper", false, "do not act on question expiries and reminders on this node (another node does); hold releases and push deliveries still run")
	allowPrivate := fs.Bool("allow-private-webhooks", false, "allow push notification URLs on loopback and private networks (off: a caller cannot make the server call into its own network)")
	pushRetryMin := fs.Duration("push-retry-min", time.Second, "first wait before retrying a failed push notification (it doubles each time)")
	pushRetryMax := fs.Duration("push-retry-max", 5*time.Minute, "longest wait between push notification retries")
	pushAttempts := fs.Int("push-attempts", 12, "attempts before giving up on a push receiver's pending notifications")
	grpcOn := fs.Bool("grpc", true, "also serve the A2A gRPC binding on the same port (each agent's tenant is its name)")
	maxOpen := fs.Int("max-open-tasks", 0, "most tasks one caller may have open (not finished) at once; 0: no cap")
	perMinute := fs.Int("tasks-per-minute", 0, "most tasks one caller may start a minute on this node; 0: no cap")
	retain := fs.Duration("retain-finished", 0, "delete finished tasks (completed, failed, canceled, rejected) this long after their last change; 0: keep them")
	conformanceMode := fs.Bool("conformance", false, "also serve the agent the A2A conformance suites (ACTS, a2a-tck) drive (examples/conformance), whose card is then the one at the host root")
	var defaultsFlag tokenFlags
	fs.Var(&defaultsFlag, "cost-centre", "`PRINCIPAL=CC-NNNN`: the finance assistant charges this caller's expenses to this cost centre without asking; repeat per caller")
	var tokenFlag tokenFlags
	fs.Var(&tokenFlag, "token", "`PRINCIPAL=TOKEN`: require bearer tokens (each at least 16 characters; principal names starting with askpoint- are reserved); repeat for each caller (visible in the process list: prefer --tokens or $"+EnvTokens+")")
	publicURL := fs.String("public-url", "", "`URL` (http://HOST:PORT) where callers reach this server: agent cards name it and its host is answered (default: the listen address)")
	var allowHosts, allowOrigins tokenFlags
	fs.Var(&allowHosts, "allow-host", "`NAME`: a host name, besides IP addresses, localhost and the public URL's, that requests may name in Host; repeat for more")
	fs.Var(&allowOrigins, "allow-origin", "`ORIGIN` (https://app.example): a browser origin whose pages may call the agents; repeat for more (default none: cross-origin browser requests are refused)")
	headerTimeout := fs.Duration("header-timeout", 10*time.Second, "how long a client has to send a request's headers")
	bodyTimeout := fs.Duration("body-timeout", 30*time.Second, "how long a client has to send a request's body once its headers are in (streams are not bounded by it)")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "how long an idle keep-alive connection is kept open")
	maxConns := fs.Int("max-connections", 0, "most connections served at once; more wait to be accepted (default 1024, or fewer when the open-file limit is lower)")
	tokensFile := fs.String("tokens", "", "JSON `file` mapping principals to bearer tokens (mode 0600; also $"+EnvTokens+", the same JSON)")
	if err := fs.Parse(args); err != nil {
		return parseExit(err, 2)
	}
	tokens, err := loadTokens(tokenFlag, *tokensFile, func(w string) { fmt.Fprintf(stderr, "askpoint serve: warning: %s\n", w) })
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 2
	}
	callers := len(tokens)
	// The finance assistant and the planning workflow call this server's
	// own agents over A2A; with tokens required they need one too, known
	// only to this process.
	var internalDial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
	if callers > 0 {
		internal := text.RandomHex(24)
		tokens[internal] = internalPrincipal
		internalDial = func(ctx context.Context, u string) (*a2aclient.Client, error) {
			return grpcdial.Dial(ctx, u, client.DialOptions{HTTP: bearerClient(u, internal), Token: internal})
		}
	}
	if callers == 0 {
		if err := loopbackOnly(*addr); err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 2
		}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askpoint serve: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	db, _ := dbValue()
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
	points, err := parseReminders(*reminders)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: --reminders %q: %v\n", *reminders, err)
		return 2
	}
	var logger *slog.Logger
	switch *logFormat {
	case "text":
		logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	case "json":
		logger = slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level}))
	default:
		fmt.Fprintf(stderr, "askpoint serve: --log-format %q: use text or json\n", *logFormat)
		return 2
	}
	if *metricsAddr != "" && *metricsAddr == *addr && !strings.HasSuffix(*addr, ":0") {
		fmt.Fprintf(stderr, "askpoint serve: --metrics-addr %s is the A2A address; give metrics a port of their own\n", *metricsAddr)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var st store.Store
	var ledger expense.Ledger = expense.IDLedger{}
	var where string // what the start-up line says about the store; never a password
	if postgres.IsURL(db) {
		pg, err := postgres.OpenWith(ctx, db, postgres.Options{Logger: logger})
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 1
		}
		st, where = pg, "PostgreSQL "+postgres.Redact(db)
		// The expense ledger lives in the same database (and schema), so
		// that every node files into one ledger, each step's key once.
		l, closeLedger, err := openPostgresLedger(ctx, db)
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 1
		}
		defer closeLedger()
		ledger = l
	} else {
		path, err := filepath.Abs(db)
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: --db %q: %v\n", db, err)
			return 1
		}
		lite, err := sqlite.Open(ctx, path)
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 1
		}
		st, where = lite, path
		l, closeLedger, err := openLedger(ctx, path)
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 1
		}
		defer closeLedger()
		ledger = l
	}
	defer st.Close()

	tel, closeTel, err := startTelemetry(ctx, *metricsAddr, stdout, logger)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
		return 1
	}
	defer closeTel()
	if tel != nil && tel.Metrics != nil {
		st = tel.Metrics.TimedStore(st)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: listen on %s: %v\n", *addr, err)
		return 1
	}
	defer ln.Close()
	base, anyAddr := listenURL(ln.Addr())
	limit := *maxConns
	if limit <= 0 {
		limit = defaultMaxConnections()
	}
	ln = newLimitListener(ln, limit)
	cardURL := base
	if *publicURL != "" {
		cardURL = strings.TrimSuffix(*publicURL, "/")
	}
	defaults := map[string]string{}
	for _, d := range defaultsFlag {
		principal, cc, ok := strings.Cut(d, "=")
		if !ok || principal == "" || cc == "" {
			fmt.Fprintf(stderr, "askpoint serve: --cost-centre %q: want PRINCIPAL=CC-NNNN\n", d)
			return 2
		}
		defaults[principal] = cc
	}

	cfg := askpoint.Config{
		Store: st, Logger: logger, InputRequiredStreams: mode, LeaseDuration: *lease, PollInterval: *poll, Tokens: tokens,
		// The finance assistant's sub-tasks run as the internal principal
		// and name the caller they are for.
		OnBehalfOfPrincipals:     []string{internalPrincipal},
		MaxOpenTasksPerPrincipal: *maxOpen, NewTasksPerMinutePerPrincipal: *perMinute, RetainFinished: *retain,
		QuestionExpiry: *expiry, Reminders: points, DisableSweeper: *noSweep,
		AllowPrivateWebhooks: *allowPrivate || *conformanceMode,
		PushRetryMin:         *pushRetryMin, PushRetryMax: *pushRetryMax, PushMaxAttempts: *pushAttempts,
		// The finance assistant hears from the expense agent on this
		// server's own address.
		WebhookHosts: selfHosts(ln.Addr()),
		PublicURL:    cardURL, AllowedHosts: allowHosts, AllowedOrigins: allowOrigins,
		// No AllowMissingContentType, not even under --conformance:
		// neither suite sends a POST without one (docs/CONFORMANCE.md).
		BodyTimeout: *bodyTimeout,
	}
	if tel != nil {
		cfg = engine.WithObserver(cfg, tel).(askpoint.Config)
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	if *conformanceMode {
		// Registered first: the first agent's card is the host root's,
		// where the suite looks for it.
		if err := srv.Register(askpoint.AgentSpec{Name: conformance.Name, Agent: conformance.Agent(), Card: conformance.Card()}); err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 1
		}
	}
	if err := srv.Register(askpoint.AgentSpec{
		Name: "expense", Agent: expense.Agent(expense.DefaultDirectory, ledger, nil), Card: expense.Card(),
	}); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	// The approval example: a yes/no question with labelled options and
	// a schema derived from its answer type.
	if err := srv.Register(askpoint.AgentSpec{Name: "approval", Agent: approval.Agent(), Card: approval.Card()}); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	// The booking example's seats live in memory, one inventory for every
	// booking task of this process.
	if err := srv.Register(askpoint.AgentSpec{
		Name: "booking", Agent: booking.Agent(booking.NewInventory(), nil), Card: booking.Card(),
	}); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	// The finance assistant: an orchestrator in front of the expense
	// agent, reaching it over A2A on this server's own address.
	assistant, err := expense.Assistant(expense.AssistantConfig{ExpenseURL: base + "/expense", SelfURL: base + "/assistant", Defaults: defaults, Dial: internalDial})
	if err == nil {
		err = srv.Register(askpoint.AgentSpec{Name: "assistant", Agent: assistant, Card: expense.AssistantCard()})
	}
	// The workflow demo: a group chat of a planner and the expense agent
	// that stops when the expense agent asks.
	if err == nil {
		err = srv.Register(askpoint.AgentSpec{Name: "planner", Agent: planning.Planner(), Card: planning.PlannerCard()})
	}
	if err == nil {
		var chat askpoint.Agent
		if chat, err = planning.Workflow(base, internalDial); err == nil {
			err = srv.Register(askpoint.AgentSpec{Name: "planning", Agent: chat, Card: planning.WorkflowCard()})
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}

	if tel != nil && tel.Metrics != nil {
		tel.Metrics.InitAgents(srv.Agents())
	}
	if err := srv.Start(ctx); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	fmt.Fprintf(stdout, "askpoint: data in %s\n", where)
	fmt.Fprintf(stdout, "askpoint: listening on %s\n", base)
	if anyAddr {
		fmt.Fprintf(stdout, "askpoint: listening on every interface (--addr %s); callers on other machines use this machine's address, and agent cards name %s (set --public-url to name another)\n", *addr, cardURL)
	}
	if callers == 0 {
		fmt.Fprintln(stdout, "askpoint: no tokens configured: callers are anonymous, so askpoint listens on loopback only")
	} else {
		noun := "tokens"
		if callers == 1 {
			noun = "token"
		}
		fmt.Fprintf(stdout, "askpoint: %d bearer %s configured: every request must carry one\n", callers, noun)
	}
	for _, name := range srv.Agents() {
		fmt.Fprintf(stdout, "askpoint: agent %q card: %s/%s/.well-known/agent-card.json\n", name, cardURL, name)
	}
	fmt.Fprintf(stdout, "askpoint: try: askpoint send %s/expense \"File my taxi receipt from Tuesday, 42 euros\"\n", base)

	var stats func() ([]string, [][]string)
	if tel != nil && tel.Metrics != nil {
		m := tel.Metrics
		stats = func() ([]string, [][]string) { return telemetry.StatsHeader, m.Stats() }
	}
	page, closePage, err := serverPage(srv, base, cardURL, tokens, logger, stats)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	fmt.Fprintf(stdout, "askpoint: paused tasks, answered in the browser: %s/inbox/\n", base)
	root := http.NewServeMux()
	root.Handle("/inbox/", page)
	root.Handle("/", tel.Middleware(srv.Handler()))

	// gRPC shares the port: a connection that opens with the HTTP/2
	// preface is gRPC, any other HTTP/1.1 (docs/decisions/0040).
	httpLn := ln
	var gfront *grpcfront.Front
	errc := make(chan error, 2)
	if *grpcOn {
		if gfront, err = grpcfront.ForServer(srv, logger); err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
			_ = srv.Stop(context.Background())
			return 1
		}
		var grpcLn net.Listener
		httpLn, grpcLn = grpcfront.Split(ln, *headerTimeout)
		go func() {
			if err := gfront.Serve(grpcLn); err != nil {
				errc <- err
			}
		}()
		fmt.Fprintf(stdout, "askpoint: gRPC on %s too: tenant = the agent's name\n", ln.Addr())
	}
	hs := &http.Server{
		Handler:           front.BodyDeadline(root, *bodyTimeout),
		ReadHeaderTimeout: *headerTimeout,
		IdleTimeout:       *idleTimeout,
		// No ReadTimeout or WriteTimeout: either would cut streams, which
		// stay open for as long as their tasks run.
	}
	// Shutdown waits for handlers; a stream's handler returns when its
	// context ends, so the streams are ended first.
	hs.RegisterOnShutdown(srv.EndStreams)
	go func() { errc <- hs.Serve(httpLn) }()

	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			_ = srv.Stop(context.Background())
			return 1
		}
	}
	fmt.Fprintln(stdout, "askpoint: shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	closePage() // its live pages' streams would hold the shutdown up
	if gfront != nil {
		// Open gRPC streams end with UNAVAILABLE and a message to
		// subscribe again; calls under way finish.
		_ = gfront.Stop(shutdownCtx)
	}
	_ = hs.Shutdown(shutdownCtx)
	if err := srv.Stop(shutdownCtx); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: stop: %v\n", err)
		return 1
	}
	return 0
}

// internalPrincipal is the principal of this process's own calls to its
// agents (the finance assistant's and the planning workflow's).
const internalPrincipal = "askpoint-internal"

// serverPage is the server's own page at /inbox/: the paused tasks of the
// logged-in principal (their bearer token is the login), answered in place.
func serverPage(srv *askpoint.Server, base, public string, tokens map[string]string, logger *slog.Logger, stats func() ([]string, [][]string)) (http.Handler, func(), error) {
	byPrincipal := map[string]string{}
	for tok, p := range tokens {
		if p != internalPrincipal {
			byPrincipal[p] = tok
		}
	}
	extra := []string{}
	if u, err := url.Parse(base); err == nil {
		if _, port, err := net.SplitHostPort(u.Host); err == nil {
			extra = append(extra, u.Host, "localhost:"+port, "127.0.0.1:"+port, "[::1]:"+port)
		}
	}
	sp, err := web.NewServerPage(web.ServerPageConfig{
		Base: "/inbox", PublicURL: public, ExtraHosts: extra, Tokens: byPrincipal,
		Agents: srv.Agents, Handler: srv.RequestHandler, WithPrincipal: askpoint.WithPrincipal,
		Stats: stats, Logger: logger,
	})
	if err != nil {
		return nil, nil, err
	}
	return sp.Handler(), sp.Close, nil
}

// parseReminders reads --reminders: fractions like "0.5,0.9", or "none".
func parseReminders(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "none" || s == "" {
		return []float64{}, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0 && v < 1) {
			return nil, fmt.Errorf("%q is not a fraction between 0 and 1 (0.5 is half-way to the expiry)", strings.TrimSpace(f))
		}
		out = append(out, v)
	}
	return out, nil
}

// openPostgresLedger opens the expense ledger in the PostgreSQL database of
// dbURL. Nodes that start at once would race on the ledger's CREATE TABLE
// IF NOT EXISTS (PostgreSQL reports a duplicate type), so the creation runs
// under a session advisory lock.
func openPostgresLedger(ctx context.Context, dbURL string) (expense.Ledger, func() error, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, nil, fmt.Errorf("open the expense ledger: %w", err)
	}
	lock, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open the expense ledger: %w", err)
	}
	defer lock.Close()
	const key = "hashtext('askpoint.expense-ledger')"
	if _, err := lock.ExecContext(ctx, "SELECT pg_advisory_lock("+key+")"); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("open the expense ledger: %w", err)
	}
	defer lock.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock("+key+")")
	l, err := expense.NewSQLLedger(ctx, db, "postgres")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return l, db.Close, nil
}
