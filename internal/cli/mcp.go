package cli

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/mcpbridge"
)

// mcpCmd serves A2A agents as MCP tools (package mcpbridge).
func mcpCmd(args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("askpoint mcp", flag.ContinueOnError)
	fset.SetOutput(stderr)
	listen := fset.String("listen", "127.0.0.1:8421", "`host:port` to serve MCP's Streamable HTTP on, at /mcp (loopback only unless --tokens authenticates MCP callers)")
	stdio := fset.Bool("stdio", false, "serve MCP on standard input and output instead, for a desktop host that starts the command")
	var agents tokenFlags
	fset.Var(&agents, "agent", "an A2A agent's `URL` (its base URL or its card's); repeat for more, one tool each")
	token := fset.String("token", "", "bearer `token` for agents that require one (default $ASKPOINT_TOKEN)")
	tokensFile := fset.String("tokens", "", "JSON `file` mapping MCP callers (principals) to the bearer tokens they present (mode 0600; also $"+EnvTokens+", the same JSON); a requestState is then good for its caller only")
	inbox := fset.String("inbox", "", "the `URL` of the web inbox of askpoint serve whose agents these are (http://HOST:PORT/inbox): a question no MCP form can ask is then asked there, as URL-mode elicitation, of clients that take it")
	keyFile := fset.String("key-file", "askpoint-mcp.key", "`file` holding the key requestStates are signed with (created, mode 0600, when missing; keep it across restarts)")
	fset.Usage = func() {
		fmt.Fprintln(stderr, "Usage: askpoint mcp [--listen HOST:PORT | --stdio] --agent URL [--agent URL]...")
		fmt.Fprintln(stderr, "Serves each agent as an MCP tool; the agents' questions come back to the MCP client as forms.")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return parseExit(err, 2)
	}
	if len(agents) == 0 || fset.NArg() > 0 {
		fset.Usage()
		return 2
	}
	if *token == "" {
		*token = os.Getenv("ASKPOINT_TOKEN")
	}
	callers, err := loadTokens(nil, *tokensFile, func(w string) { fmt.Fprintf(stderr, "askpoint mcp: warning: %s\n", w) })
	if err != nil {
		fmt.Fprintf(stderr, "askpoint mcp: %s\n", errText(err))
		return 2
	}
	if !*stdio && len(callers) == 0 {
		if err := loopbackListen(*listen); err != nil {
			fmt.Fprintf(stderr, "askpoint mcp: %v\n", err)
			return 2
		}
	}
	key, err := mcpKey(*keyFile)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint mcp: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := mcpbridge.Config{Key: key, Token: *token, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	for _, a := range agents {
		cfg.Agents = append(cfg.Agents, mcpbridge.Agent{URL: a})
	}
	if *inbox != "" {
		if cfg.InboxURL, err = mcpbridge.ServeInbox(*inbox, ""); err != nil {
			fmt.Fprintf(stderr, "askpoint mcp: --inbox: %s\n", errText(err))
			return 2
		}
	}
	b, err := mcpbridge.New(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint mcp: %s\n", errText(err))
		return 1
	}
	if *stdio {
		// Standard output is MCP's: nothing else is written to it.
		if err := b.Server().Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			fmt.Fprintf(stderr, "askpoint mcp: %v\n", err)
			return 1
		}
		return 0
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint mcp: %v\n", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", withCallers(callers, b.Handler()))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "serving MCP on http://%s/mcp\n", ln.Addr())
	for _, t := range b.Tools() {
		fmt.Fprintf(stdout, "tool %s: %s\n", t.Name, t.Meta["dev.askpoint/agentUrl"])
	}
	select {
	case err := <-served:
		fmt.Fprintf(stderr, "askpoint mcp: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return 0
}

// withCallers requires one of tokens (token -> principal) of every request,
// and names its caller by the principal; with no tokens, h as it is.
func withCallers(tokens map[string]string, h http.Handler) http.Handler {
	if len(tokens) == 0 {
		return h
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		for t, principal := range tokens {
			if subtle.ConstantTimeCompare([]byte(t), []byte(token)) == 1 {
				return &auth.TokenInfo{UserID: principal}, nil
			}
		}
		return nil, auth.ErrInvalidToken
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// loopbackListen refuses to serve anonymous MCP callers beyond this
// machine: every caller runs the agents with askpoint mcp's token.
func loopbackListen(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return fmt.Errorf("--listen %s is not a loopback address, and no tokens are configured: anonymous MCP callers are served on loopback only; add --tokens FILE (or $%s), or listen on 127.0.0.1", addr, EnvTokens)
}

// mcpKey reads the requestState key from file, or creates the file with a
// new random key (mode 0600). A key file others may read is refused.
func mcpKey(file string) ([]byte, error) {
	key, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, mcpbridge.MinKeyBytes)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("make a key: %w", err)
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		if _, err := f.Write(key); err != nil {
			f.Close()
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("--key-file: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--key-file: %w", err)
	}
	if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("--key-file %s is readable by group or others (mode %v); make it readable by its owner only: chmod 600 %s", file, fi.Mode().Perm(), shellQuote(file))
	}
	if len(key) < mcpbridge.MinKeyBytes {
		return nil, fmt.Errorf("--key-file %s holds %d bytes; a key is at least %d random bytes (remove the file to have a new one made)", file, len(key), mcpbridge.MinKeyBytes)
	}
	return key, nil
}
