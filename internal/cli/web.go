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
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/inbox/web"
)

// webFlags are askpoint inbox's flags for the web inbox.
type webFlags struct {
	addr, people, publicURL, tlsCert, tlsKey *string
	smtp, smtpFrom, smtpUser                 *string
	facts, policy, agentToken, logLevel      *string
	refresh, watch                           *time.Duration
}

func addWebFlags(fs *flag.FlagSet) *webFlags {
	return &webFlags{
		addr:       fs.String("web", "", "serve the web inbox on `host:port` (loopback unless --tls-cert or an https --public-url say otherwise)"),
		people:     fs.String("people", "", "with --web: the people `file` (JSON) who may log in: {\"frank\": {\"token\": \"16+ characters\", \"email\": \"frank@example.com\"}}"),
		publicURL:  fs.String("public-url", "", "with --web: the `URL` people reach the inbox at (links in emails, the one origin whose forms are taken); default http://ADDR"),
		tlsCert:    fs.String("tls-cert", "", "with --web: serve HTTPS with this certificate `file` (and --tls-key)"),
		tlsKey:     fs.String("tls-key", "", "with --web: the TLS key `file`"),
		smtp:       fs.String("smtp", "", "with --web: email people of new questions and reminders through this SMTP server `host:port`"),
		smtpFrom:   fs.String("smtp-from", "", "with --smtp: the sender `address`"),
		smtpUser:   fs.String("smtp-user", "", "with --smtp: the SMTP AUTH user (password in $ASKPOINT_SMTP_PASSWORD)"),
		facts:      fs.String("facts", "", "with --web: what you know, a JSON object that answers later questions before a person is asked"),
		policy:     fs.String("policy", "", "with --web: policy rules `file` that answer later questions before a person is asked"),
		agentToken: fs.String("agent-token", "", "with --web: bearer `token` for the agents (default $ASKPOINT_TOKEN)"),
		logLevel:   fs.String("log-level", "info", "with --web: debug, info, warn or error"),
		refresh:    fs.Duration("refresh", 15*time.Second, "with --web: how often to read open questions' tasks from their agents, so withdrawn ones leave the list (0: never)"),
		watch:      fs.Duration("watch", 500*time.Millisecond, "with --web: how often to look at the inbox file for questions added by other processes"),
	}
}

// misused says which web flag was given without --web ("" if none).
func (wf *webFlags) misused(fs *flag.FlagSet) string {
	if *wf.addr != "" {
		return ""
	}
	var bad string
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "people", "public-url", "tls-cert", "tls-key", "smtp", "smtp-from", "smtp-user", "facts", "policy", "agent-token", "refresh", "watch", "log-level":
			if bad == "" {
				bad = "--" + f.Name + " only applies with --web"
			}
		}
	})
	return bad
}

// serveWeb serves the web inbox until ctx ends.
func serveWeb(ctx context.Context, ib *inbox.Inbox, wf *webFlags, pushToken string, agents map[string]string, stdout, stderr io.Writer) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "askpoint inbox: "+format+"\n", args...)
		return exitUsage
	}
	if *wf.people == "" {
		return fail("--web needs --people FILE: nobody could log in")
	}
	people, err := web.LoadPeople(*wf.people)
	if err != nil {
		return fail("%v", err)
	}
	if (*wf.tlsCert == "") != (*wf.tlsKey == "") {
		return fail("give both --tls-cert and --tls-key, or neither")
	}
	tls := *wf.tlsCert != ""
	public := *wf.publicURL
	if *wf.smtp != "" && *wf.smtpFrom == "" {
		return fail("--smtp needs --smtp-from ADDRESS")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*wf.logLevel)); err != nil {
		return fail("--log-level %q: want debug, info, warn or error", *wf.logLevel)
	}
	host, _, err := net.SplitHostPort(*wf.addr)
	if err != nil {
		return fail("--web %q: %v", *wf.addr, err)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if !loopback && !tls && !strings.HasPrefix(public, "https://") {
		return fail("--web %s is not a loopback address: the web inbox serves loopback only unless it is reached over TLS; add --tls-cert and --tls-key, or --public-url https://… when a proxy in front terminates TLS, or listen on 127.0.0.1", *wf.addr)
	}
	lf := &loopFlags{facts: wf.facts, policy: wf.policy, token: wf.agentToken, tokenFile: new(string), transport: new(string)}
	machine, err := lf.machineResolvers()
	if err != nil {
		return fail("%v", err)
	}
	ln, err := net.Listen("tcp", *wf.addr)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint inbox: listen on %s: %v\n", *wf.addr, err)
		return exitFailed
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	bound := ln.Addr().String()
	if public == "" {
		public = scheme + "://" + bound
	}
	u, err := url.Parse(public)
	if err != nil || u.Host == "" {
		ln.Close()
		return fail("--public-url %q is not a URL such as https://inbox.example.com", public)
	}
	extra := []string{bound}
	if _, port, err := net.SplitHostPort(bound); err == nil && loopback {
		extra = append(extra, "localhost:"+port, "127.0.0.1:"+port, "[::1]:"+port)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := web.Config{
		Inbox: ib, People: people, PublicURL: public, ExtraHosts: extra,
		Resolvers: machine, Options: []client.Option{client.WithDialer(lf.dialer())},
		Dial: lf.dialer(), Card: func(ctx context.Context, agentURL string) (*a2a.AgentCard, error) {
			token, err := lf.bearerToken()
			if err != nil {
				return nil, err
			}
			return agentcard.NewResolver(bearerClient(agentURL, token)).Resolve(ctx, strings.TrimSuffix(agentURL, "/"))
		},
		PushToken: pushToken, PushAgents: agents, Watch: *wf.watch, Refresh: *wf.refresh, Logger: logger,
	}
	if *wf.refresh == 0 {
		cfg.Refresh = -1
	}
	if *wf.smtp != "" {
		cfg.Mailer = &web.Mailer{Addr: *wf.smtp, From: *wf.smtpFrom, Username: *wf.smtpUser, Password: os.Getenv("ASKPOINT_SMTP_PASSWORD")}
	}
	srv, err := web.New(cfg)
	if err != nil {
		ln.Close()
		return fail("%v", err)
	}
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); srv.Run(runCtx) }()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	fmt.Fprintf(stdout, "askpoint inbox: web inbox on %s/ for %d people (inbox %s)\n", strings.TrimSuffix(public, "/"), len(people), ib.Path())
	if len(agents) > 0 {
		fmt.Fprintf(stdout, "askpoint inbox: push notifications from %d agents to %s/push?agent=AGENT_URL, with the push token\n", len(agents), strings.TrimSuffix(public, "/"))
	} else {
		fmt.Fprintln(stdout, "askpoint inbox: no push notifications taken (--agent URL names an agent whose are)")
	}
	done := make(chan error, 1)
	go func() {
		if tls {
			done <- hs.ServeTLS(ln, *wf.tlsCert, *wf.tlsKey)
		} else {
			done <- hs.Serve(ln)
		}
	}()
	code := 0
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
			code = exitFailed
		}
	case <-ctx.Done():
	}
	stopRun() // ends the live pages' event streams, so Shutdown does not wait on them
	<-ran
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdown)
	fmt.Fprintln(stdout, "askpoint inbox: stopped")
	return code
}
