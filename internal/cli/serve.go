package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
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
	"github.com/askpoint/askpoint/examples/demo"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/mcpbridge"
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
	expiry := fs.Duration("question-expiry", 24*time.Hour, "how long a question (or a request for a credential) stays open when its agent sets no expiry")
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
	var statsFor tokenFlags
	fs.Var(&statsFor, "stats-principal", "`PRINCIPAL`: a caller who may see the whole server's question figures at /inbox/stats (needs --metrics-addr); repeat for more (default with tokens: nobody; without tokens the anonymous caller does)")
	var allowHosts, allowOrigins tokenFlags
	fs.Var(&allowHosts, "allow-host", "`NAME`: a host name, besides IP addresses, localhost and the public URL's, that requests may name in Host; repeat for more")
	fs.Var(&allowOrigins, "allow-origin", "`ORIGIN` (https://app.example): a browser origin whose pages may call the agents; repeat for more (default none: cross-origin browser requests are refused)")
	headerTimeout := fs.Duration("header-timeout", 10*time.Second, "how long a client has to send a request's headers")
	bodyTimeout := fs.Duration("body-timeout", 30*time.Second, "how long a client has to send a request's body once its headers are in (streams are not bounded by it)")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "how long an idle keep-alive connection is kept open")
	maxConns := fs.Int("max-connections", 0, "most connections open at once, HTTP and gRPC together; past it the one idle the longest is closed, or the new one answered 503 at once (default 1024, or fewer when the open-file limit is lower)")
	var mcpServers tokenFlags
	fs.Var(&mcpServers, "mcp", "`URL` of an MCP server's endpoint (http://HOST:PORT/mcp): serve each of its tools as an agent named after it, whose elicitations are questions of the task; repeat for more servers")
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
	if *metricsAddr != "" && loopbackOnly(*metricsAddr) != nil {
		// /metrics has no authentication: beyond loopback, whoever reaches
		// the address reads the server's figures (agents, question kinds).
		fmt.Fprintf(stderr, "askpoint serve: warning: --metrics-addr %s is not a loopback address and /metrics takes no token: anyone who reaches it reads the server's figures; keep it on 127.0.0.1 or behind a proxy that authenticates\n", *metricsAddr)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var st store.Store
	var where string // what the start-up line says about the store; never a password
	if postgres.IsURL(db) {
		pg, err := postgres.OpenWith(ctx, db, postgres.Options{Logger: logger})
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
			return 1
		}
		st, where = pg, "PostgreSQL "+postgres.Redact(db)
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
		st, where, db = lite, path, path
	}
	defer st.Close()
	// The expense ledger lives beside the tasks: in the same SQLite file,
	// or the same PostgreSQL database, so every node files into one.
	ledger, closeLedger, err := demo.OpenLedger(ctx, db)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	defer closeLedger()

	tel, closeTel, err := startTelemetry(ctx, *metricsAddr, stdout, logger)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %v\n", err)
		return 1
	}
	defer closeTel()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: listen on %s: %v\n", *addr, err)
		return 1
	}
	defer ln.Close()
	base, anyAddr := listenURL(ln.Addr())
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
		PublicURL: cardURL, AllowedHosts: allowHosts, AllowedOrigins: allowOrigins,
		// No AllowMissingContentType, not even under --conformance:
		// neither suite sends a POST without one (docs/CONFORMANCE.md).
		BodyTimeout: *bodyTimeout, HeaderTimeout: *headerTimeout, IdleTimeout: *idleTimeout,
		MaxConnections: *maxConns, DisableGRPC: !*grpcOn,
	}
	if tel != nil {
		cfg.Observer = tel
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	// The demo agents (examples/demo); the orchestrators reach the expense
	// agent on this server's own address.
	if err := demo.Register(srv, demo.Options{
		BaseURL: base, Ledger: ledger, CostCentres: defaults, Dial: internalDial, Conformance: *conformanceMode,
	}); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	for _, u := range mcpServers {
		specs, err := mcpbridge.ToolAgents(ctx, &mcpbridge.MCPServer{URL: u}, mcpbridge.ToolAgentConfig{})
		for _, spec := range specs {
			if err == nil {
				err = srv.Register(spec)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "askpoint serve: --mcp %s: %s\n", u, errText(err))
			return 1
		}
	}
	var stats func() ([]string, [][]string)
	if tel != nil && tel.Metrics != nil {
		stats = tel.Metrics.Table
	}
	page, err := serverPage(srv, base, cardURL, stats, statsFor)
	if err == nil {
		defer page.Close()
		err = srv.Handle("/inbox/", page.Handler())
	}
	if err != nil {
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
	fmt.Fprintf(stdout, "askpoint: paused tasks, answered in the browser: %s/inbox/\n", base)
	if *grpcOn {
		fmt.Fprintf(stdout, "askpoint: gRPC on %s too: tenant = the agent's name\n", ln.Addr())
	}

	// Serve serves the three bindings on the one port and stops them
	// gracefully when ctx ends (docs/decisions/0040 and 0085).
	stopping := context.AfterFunc(ctx, func() { fmt.Fprintln(stdout, "askpoint: shutting down") })
	defer stopping()
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintf(stderr, "askpoint serve: %s\n", errText(err))
		return 1
	}
	return 0
}

// internalPrincipal is the principal of this process's own calls to its
// agents (the finance assistant's and the planning workflow's).
const internalPrincipal = "askpoint-internal"

// serverPage is the server's own page at /inbox/: the paused tasks of the
// logged-in principal (their bearer token is the login), answered in place.
func serverPage(srv *askpoint.Server, base, public string, stats func() ([]string, [][]string), statsPrincipals []string) (*web.ServerPage, error) {
	extra := []string{}
	if u, err := url.Parse(base); err == nil {
		if _, port, err := net.SplitHostPort(u.Host); err == nil {
			extra = append(extra, u.Host, "localhost:"+port, "127.0.0.1:"+port, "[::1]:"+port)
		}
	}
	return web.ServerPageFor(srv, public, web.ServerPageOptions{ExtraHosts: extra, Stats: stats, StatsPrincipals: statsPrincipals})
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
