package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/askpoint/askpoint/client"
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
	token := fs.String("token", "", "with --listen or --web: refuse push notifications without this A2A-Notification-Token header (with --listen, one is generated and printed when none is given)")
	wf := addWebFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: askpoint inbox [--inbox FILE] [--all] [--listen ADDR [--token T]]")
		fmt.Fprintln(stderr, "       askpoint inbox --web ADDR --people FILE [web flags]")
		fmt.Fprintln(stderr, "List the questions that wait on a person (answer one with askpoint answer ID), or receive")
		fmt.Fprintln(stderr, "push notifications so the inbox learns of new questions without polling, or serve the web")
		fmt.Fprintln(stderr, "inbox: a page of the questions and a form for each, for the people in the people file.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return parseExit(err, exitUsage)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "askpoint inbox: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
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
	if *listen != "" {
		return listenPush(ctx, ib, *listen, *token, stdout, stderr)
	}
	if *wf.addr != "" {
		return serveWeb(ctx, ib, wf, *token, stdout, stderr)
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
		for _, f := range client.ItemQuery(it).Fields() {
			if f.Name == q.OptionField() && len(q.Options) > 0 {
				continue
			}
			fields = append(fields, f.Name+" ("+f.Constraints()+")")
		}
		if len(fields) > 0 {
			out = append(out, "fields:  "+strings.Join(fields, "; "))
		}
		if q.Attempt > 1 {
			var errs []string
			for _, e := range q.Errors {
				errs = append(errs, e.Message)
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
func listenPush(ctx context.Context, ib *inbox.Inbox, addr, token string, stdout, stderr io.Writer) int {
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
	h := inbox.NewPushHandler(ib, inbox.PushOptions{
		Token: token,
		OnItem: func(it *inbox.Item, created bool) {
			if created {
				say("new question: item %d from %s: %s\n", it.ID, orUnknown(it.AgentURL), oneLine(it.Text))
			}
		},
	})
	generated := token == ""
	if generated {
		// Anyone who can reach the listener could otherwise file a
		// question whose answer goes to an agent URL of their choosing.
		token = text.RandomHex(16)
	}
	srv := &http.Server{Handler: listenerGuard(h, token), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	say("listening for push notifications on http://%s/ (inbox %s)\n", ln.Addr(), ib.Path())
	if generated {
		fmt.Fprintf(stderr, "askpoint inbox: push token (agents send it as %s): %s\n", inbox.TokenHeader, token)
	}
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

func orUnknown(s string) string {
	if s == "" {
		return "(unknown agent)"
	}
	return s
}

// listenerGuard is what the push listener takes: a POST with the listener's
// token and a JSON body. A web page cannot send either (a custom header and
// application/json both need a CORS preflight, which it does not answer).
func listenerGuard(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "push notifications are POSTed", http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(inbox.TokenHeader)), []byte(token)) != 1 {
			http.Error(w, "missing or wrong "+inbox.TokenHeader+" header: send the token askpoint inbox --listen printed", http.StatusUnauthorized)
			return
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || (mt != "application/json" && mt != "application/a2a+json") {
			http.Error(w, fmt.Sprintf("Content-Type %q is not JSON: send the notification as Content-Type: application/json", r.Header.Get("Content-Type")), http.StatusUnsupportedMediaType)
			return
		}
		h.ServeHTTP(w, r)
	})
}
