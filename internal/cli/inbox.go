package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// inboxCmd lists the inbox, or receives push notifications into it.
func inboxCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint inbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("inbox", "", "the inbox `file` (default $"+inbox.EnvPath+", else askpoint/inbox.db in your config directory)")
	all := fs.Bool("all", false, "also list answered and closed items")
	listen := fs.String("listen", "", "receive A2A push notifications on `host:port` (POST a StreamResponse to http://host:port/?agent=AGENT_URL) until interrupted")
	token := fs.String("token", "", "with --listen or --web: the push token the --agent agents send in the A2A-Notification-Token header (default $"+envPushToken+"; one is generated and printed when none is given; visible in the process list: prefer --token-file or the variable)")
	tokenFile := fs.String("token-file", "", "read --token from the first line of this `file` (mode 0600)")
	var agentFlags tokenFlags
	fs.Var(&agentFlags, "agent", "with --listen (required) or --web: take push notifications from the agent at this `URL` (repeat for each), with the push token; no other agent's are taken, and --web without it takes none")
	agentsFile := fs.String("agents", "", "with --listen or --web: JSON `file` mapping agent URLs to their own push tokens (\"\" for --token)")
	wf := addWebFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: askpoint inbox [--inbox FILE] [--all] [--listen ADDR --agent URL [--token T]]")
		fmt.Fprintln(stderr, "       askpoint inbox --web ADDR --people FILE [--agent URL [--token T]] [web flags]")
		fmt.Fprintln(stderr, "List the questions that wait on a person (answer one with askpoint answer ID), or receive")
		fmt.Fprintln(stderr, "push notifications so the inbox learns of new questions without polling, or serve the web")
		fmt.Fprintln(stderr, "inbox: a page of the questions and a form for each, for the people in the people file.")
		fmt.Fprintln(stderr, "Push notifications (--listen, and --web at /push) are taken only from the agents named with")
		fmt.Fprintln(stderr, "--agent or --agents, each with its push token (--token, printed when generated), as JSON:")
		fmt.Fprintln(stderr, "the agent is where the person's answer and your bearer token go, so a notification never")
		fmt.Fprintln(stderr, "names a new one.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return parseExit(err, exitUsage)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askpoint inbox: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	pushTok, err := secret(*token, *tokenFile, "token", envPushToken)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
		return exitUsage
	}
	*token = pushTok
	agents, err := listenAgents(agentFlags, *agentsFile)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
		return exitUsage
	}
	if *listen != "" && *wf.addr == "" && len(agents) == 0 {
		fmt.Fprintln(stderr, "askpoint inbox: --listen needs the agents whose notifications to take: --agent URL (repeat) or --agents FILE; a notification cannot name its own agent, since that is where answers and your bearer token go")
		return exitUsage
	}
	if len(agents) > 0 && *listen == "" && *wf.addr == "" {
		fmt.Fprintln(stderr, "askpoint inbox: --agent and --agents only apply with --listen or --web")
		return exitUsage
	}
	if os.Getenv(envPushToken) != "" && *listen == "" && *wf.addr == "" {
		*token = ""
	}
	if *token != "" && *listen == "" && *wf.addr == "" {
		fmt.Fprintln(stderr, "askpoint inbox: --token only applies with --listen or --web")
		return exitUsage
	}
	if *listen != "" && *wf.addr != "" {
		fmt.Fprintln(stderr, "askpoint inbox: give --listen or --web, not both (the web inbox receives push notifications at /push)")
		return exitUsage
	}
	if msg := wf.misused(fs); msg != "" {
		fmt.Fprintf(stderr, "askpoint inbox: %s\n", msg)
		return exitUsage
	}
	if *path == "" {
		p, err := inbox.DefaultPath()
		if err != nil {
			fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
			return exitFailed
		}
		*path = p
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ib, err := inbox.Open(ctx, *path)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
		return exitFailed
	}
	defer ib.Close()
	if (*listen != "" || *wf.addr != "") && len(agents) > 0 && *token == "" {
		// Anyone who can reach the push door could otherwise file a
		// question for a listed agent.
		*token = text.RandomHex(16)
		fmt.Fprintf(stderr, "askpoint inbox: push token (agents send it as %s): %s\n", inbox.TokenHeader, *token)
	}
	if *listen != "" {
		return listenPush(ctx, ib, *listen, *token, agents, stdout, stderr)
	}
	if *wf.addr != "" {
		return serveWeb(ctx, ib, wf, *token, agents, stdout, stderr)
	}

	items, err := ib.List(ctx, inbox.ListOptions{All: *all})
	if err != nil {
		fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
		return exitFailed
	}
	if len(items) == 0 {
		if *all {
			fmt.Fprintf(stdout, "The inbox %s is empty.\n", ib.Path())
		} else {
			fmt.Fprintf(stdout, "No open questions in %s.\n", ib.Path())
		}
		return 0
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if *all {
		fmt.Fprintln(tw, "ID\tSTATE\tAGENT\tTIME LEFT\tQUESTION")
	} else {
		fmt.Fprintln(tw, "ID\tAGENT\tTIME LEFT\tQUESTION")
	}
	for _, it := range items {
		agent := it.AgentURL
		if agent == "" {
			agent = "(unknown agent)"
		}
		cells := []string{fmt.Sprint(it.ID)}
		if *all {
			cells = append(cells, string(it.State))
		}
		cells = append(cells, agent, timeLeft(it, now), oneLine(it.Text))
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		for _, line := range details(it) {
			pad := make([]string, len(cells)-1)
			fmt.Fprintln(tw, strings.Join(pad, "\t")+"\t  "+line)
		}
	}
	tw.Flush()
	if !*all {
		fmt.Fprintf(stdout, "\nAnswer one with: askpoint answer ID --inbox %s\n", shellQuote(ib.Path()))
	}
	return 0
}

// timeLeft says how long the question still takes answers.
func timeLeft(it *inbox.Item, now time.Time) string {
	e := it.Expires()
	switch {
	case it.State != inbox.StateOpen:
		return "-"
	case e.IsZero():
		return "no expiry"
	case !e.After(now):
		return "expired"
	}
	return client.HumanDuration(e.Sub(now))
}

// details are the lines under an item: options, fields, a re-ask's errors.
func details(it *inbox.Item) []string {
	var out []string
	if q := it.Question; q != nil {
		if len(q.Options) > 0 {
			var opts []string
			for i, o := range q.Options {
				v := question.ValueText(o.Value)
				s := fmt.Sprintf("%d) %s", i+1, v)
				if o.Label != "" && o.Label != v {
					s += " (" + o.Label + ")"
				}
				opts = append(opts, s)
			}
			out = append(out, "options: "+strings.Join(opts, "  "))
		}
		var fields []string
		for _, f := range it.Query().Fields() {
			if f.Name == q.OptionField() && len(q.Options) > 0 {
				continue
			}
			// In the web form's words: caption, rules, optional.
			s := f.Caption()
			var notes []string
			if r := f.Rules(); r != "" {
				notes = append(notes, r)
			}
			if !f.Required {
				notes = append(notes, "optional")
			}
			if len(notes) > 0 {
				s += " (" + strings.Join(notes, ", ") + ")"
			}
			fields = append(fields, s)
		}
		if len(fields) > 0 {
			out = append(out, "fields:  "+strings.Join(fields, "; "))
		}
		if q.Attempt > 1 {
			var errs []string
			for _, e := range q.Errors {
				errs = append(errs, q.ExplainError(e))
			}
			out = append(out, fmt.Sprintf("attempt %d of %d; not accepted before: %s", q.Attempt, q.MaxAttempts, strings.Join(errs, "; ")))
		}
	}
	if it.State == inbox.StateAnswered {
		out = append(out, fmt.Sprintf("answered by %s: %s", it.AnsweredBy, string(it.Answer)))
	}
	if it.State == inbox.StateClosed && it.Note != "" {
		out = append(out, "closed: "+it.Note)
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:99]) + "…"
	}
	return s
}

// listenPush serves the push receiver until ctx ends.
func listenPush(ctx context.Context, ib *inbox.Inbox, addr, token string, agents map[string]string, stdout, stderr io.Writer) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint inbox: listen on %s: %v\n", addr, err)
		return exitFailed
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, format, args...)
	}
	bearerTok := os.Getenv("ASKPOINT_TOKEN")
	h := inbox.NewPushHandler(ib, inbox.PushOptions{
		Token:  token,
		Agents: agents,
		// What the agent itself says about the task is what the inbox
		// records: a notification only says when to ask.
		Verify: func(ctx context.Context, agentURL, taskID string) (*a2a.Task, error) {
			c, err := grpcdial.Dial(ctx, agentURL, client.DialOptions{HTTP: bearerClient(agentURL, bearerTok)})
			if err != nil {
				return nil, err
			}
			defer c.Destroy()
			return c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(taskID)})
		},
		OnItem: func(it *inbox.Item, created bool) {
			if created {
				say("new question: item %d from %s: %s\n", it.ID, orUnknown(it.AgentURL), oneLine(it.Text))
			}
		},
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	say("listening for push notifications on http://%s/ (inbox %s)\n", ln.Addr(), ib.Path())
	fmt.Fprintf(stderr, "askpoint inbox: register it with: askpoint send --push-url 'http://%s/?agent=AGENT_URL' --push-token %s AGENT_URL TEXT\n", ln.Addr(), token)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "askpoint inbox: %v\n", err)
			return exitFailed
		}
		return 0
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	<-done
	say("stopped\n")
	return 0
}

// envPushToken names the environment variable that may hold the push
// listener's token.
const envPushToken = "ASKPOINT_PUSH_TOKEN"

// listenAgents is the agent URL -> push token map of --agent and --agents.
func listenAgents(flags tokenFlags, file string) (map[string]string, error) {
	out := map[string]string{}
	for _, a := range flags {
		if originOf(a) == "" {
			return nil, fmt.Errorf("--agent %q is not an http(s) URL of an agent", a)
		}
		out[strings.TrimSuffix(a, "/")] = ""
	}
	if file != "" {
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--agents: %w", err)
		}
		var m map[string]string
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("--agents %s: want a JSON object mapping agent URLs to push tokens (its text is not shown)", file)
		}
		for a, tok := range m {
			if originOf(a) == "" {
				return nil, fmt.Errorf("--agents %s: %q is not an http(s) URL of an agent", file, a)
			}
			out[strings.TrimSuffix(a, "/")] = tok
		}
	}
	return out, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown agent)"
	}
	return s
}
