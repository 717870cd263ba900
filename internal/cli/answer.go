package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/inbox"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// stdin is where askpoint answer and askpoint ask --interactive read a
// person's answers.
var stdin io.Reader = os.Stdin

// Exit codes of ask and answer.
const (
	exitCompleted = 0
	exitFailed    = 1
	exitUsage     = 2
	exitWaiting   = 3 // the task waits on a person (an open inbox item)
)

// loopFlags are the flags ask and answer share.
type loopFlags struct {
	inbox     *string
	stream    *bool
	transport *string
	token     *string
	tokenFile *string
	tokensBy  *string
	timeout   *time.Duration
	maxRounds *int
	policy    *string
	facts     *string
	caller    *string
}

func addLoopFlags(fs *flag.FlagSet) *loopFlags {
	return &loopFlags{
		inbox:     fs.String("inbox", "", "the inbox `file` (default $"+inbox.EnvPath+", else askpoint/inbox.db in your config directory)"),
		stream:    fs.Bool("stream", false, "use streaming calls (SendStreamingMessage, SubscribeToTask) instead of blocking calls and polls"),
		transport: fs.String("transport", "", "JSONRPC, HTTP+JSON or GRPC (default: the card's first)"),
		token:     fs.String("token", "", "bearer `token` for agents that require one, sent only to the agent's own origin (default $ASKPOINT_TOKEN; visible in the process list: prefer --token-file or the variable)"),
		tokenFile: fs.String("token-file", "", "read the bearer token from the first line of this `file` (mode 0600)"),
		tokensBy:  fs.String("agent-tokens", "", "JSON `file` mapping agent URLs (or origins) to their own bearer tokens; an agent not in it gets --token"),
		timeout:   fs.Duration("timeout", 5*time.Minute, "give up after this long (the task stays as it is)"),
		maxRounds: fs.Int("max-rounds", client.DefaultMaxRounds, "cancel the task when the agent asks more than this many questions"),
		policy:    fs.String("policy", "", "policy rules `file` (JSON) that answer questions, e.g. {\"rules\":[{\"when\":{\"field\":\"costCentre\"},\"answer\":\"CC-4410\"}]}"),
		facts:     fs.String("facts", "", "what you already know, a JSON object matched against the question's fields, e.g. '{\"costCentre\":\"CC-4410\"}'"),
		caller:    fs.String("caller", "", "who you are, for policy rules with a \"caller\" condition"),
	}
}

func (f *loopFlags) openInbox(ctx context.Context) (*inbox.Inbox, error) {
	path := *f.inbox
	if path == "" {
		p, err := inbox.DefaultPath()
		if err != nil {
			return nil, err
		}
		path = p
	}
	return inbox.Open(ctx, path)
}

// machineResolvers are the context and policy resolvers the flags ask for.
func (f *loopFlags) machineResolvers() ([]client.Resolver, error) {
	var rs []client.Resolver
	if *f.facts != "" {
		facts, err := jsonObject("--facts", *f.facts)
		if err != nil {
			return nil, err
		}
		rs = append(rs, client.Facts(facts))
	}
	if *f.policy != "" {
		p, err := client.LoadPolicy(*f.policy)
		if err != nil {
			return nil, err
		}
		rs = append(rs, p)
	}
	return rs, nil
}

// bearerToken is the caller's bearer token: --token, --token-file or
// $ASKPOINT_TOKEN ("" for none).
func (f *loopFlags) bearerToken() (string, error) {
	return secret(*f.token, *f.tokenFile, "token", "ASKPOINT_TOKEN")
}

// tokenFor is the bearer token for the agent at agentURL: its own from
// --agent-tokens, else the one token.
func tokenFor(byOrigin map[string]string, token, agentURL string) string {
	if t, ok := byOrigin[originOf(agentURL)]; ok {
		return t
	}
	return token
}

// agentTokens reads --agent-tokens: origin -> token.
func (f *loopFlags) agentTokens() (map[string]string, error) {
	if f.tokensBy == nil || *f.tokensBy == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(*f.tokensBy)
	if err != nil {
		return nil, fmt.Errorf("--agent-tokens: %w", err)
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("--agent-tokens %s: want a JSON object mapping agent URLs to bearer tokens (its text is not shown)", *f.tokensBy)
	}
	out := map[string]string{}
	for u, t := range m {
		o := originOf(u)
		if o == "" {
			return nil, fmt.Errorf("--agent-tokens %s: %q is not an http(s) URL", *f.tokensBy, u)
		}
		out[o] = t
	}
	return out, nil
}

func (f *loopFlags) dialer() func(ctx context.Context, url string) (*a2aclient.Client, error) {
	token, tokenErr := f.bearerToken()
	byOrigin, mapErr := f.agentTokens()
	tokenErr = errors.Join(tokenErr, mapErr)
	var pref []a2a.TransportProtocol
	switch strings.ToUpper(*f.transport) {
	case "":
	case "JSONRPC":
		pref = []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC}
	case "HTTP+JSON", "REST":
		pref = []a2a.TransportProtocol{a2a.TransportProtocolHTTPJSON}
	case "GRPC":
		pref = []a2a.TransportProtocol{a2a.TransportProtocolGRPC}
	default:
		pref = []a2a.TransportProtocol{a2a.TransportProtocol(*f.transport)}
	}
	// The token rides on the HTTP client for the card and the HTTP
	// bindings, and as a service parameter for gRPC's metadata; either way
	// only to the agent's own origin.
	return func(ctx context.Context, url string) (*a2aclient.Client, error) {
		if tokenErr != nil {
			return nil, tokenErr
		}
		tok := tokenFor(byOrigin, token, url)
		return grpcdial.Dial(ctx, url, client.DialOptions{HTTP: bearerClient(url, tok), Token: tok, Preferred: pref})
	}
}

// options are the loop's options from the flags; the round cap only when
// given (answer keeps the cap the item was recorded with).
func (f *loopFlags) options(fs *flag.FlagSet) []client.Option {
	opts := []client.Option{
		client.WithStreaming(*f.stream),
		client.WithCaller(*f.caller),
		client.WithDialer(f.dialer()),
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "max-rounds" {
			opts = append(opts, client.WithMaxRounds(*f.maxRounds))
		}
	})
	return opts
}

func signalContext(timeout time.Duration) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, func() { cancel(); stop() }
}

// ask: send a message and run the caller's loop on it.
func ask(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint ask", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLoopFlags(fs)
	data := fs.String("data", "", "a JSON object to send as a data part of the request")
	interactive := fs.Bool("interactive", false, "answer questions here, from standard input, before they go to the inbox")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: askpoint ask [flags] URL TEXT")
		fmt.Fprintln(stderr, "Send TEXT to the agent at URL and answer its questions: from --facts, then --policy, then")
		fmt.Fprintln(stderr, "(with --interactive) from you here, then through the inbox: the command then exits with")
		fmt.Fprintln(stderr, "status 3 and \"askpoint answer ID\" answers later. Status 0: completed; 1: failed, rejected,")
		fmt.Fprintln(stderr, "canceled or an error.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return parseExit(err, exitUsage)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return exitUsage
	}
	if *lf.maxRounds < 1 {
		fmt.Fprintln(stderr, "askpoint ask: --max-rounds must be at least 1")
		return exitUsage
	}
	url, text := fs.Arg(0), fs.Arg(1)
	parts, err := requestParts(text, *data)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint ask: %v\n", err)
		return exitUsage
	}
	resolvers, err := lf.machineResolvers()
	if err != nil {
		fmt.Fprintf(stderr, "askpoint ask: %v\n", err)
		return exitUsage
	}

	ctx, cancel := signalContext(*lf.timeout)
	defer cancel()
	ib, err := lf.openInbox(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint ask: %v\n", err)
		return exitFailed
	}
	defer ib.Close()
	if *interactive {
		resolvers = append(resolvers, client.NewTerminal(stdin, stdout, personName()))
	}
	resolvers = append(resolvers, inbox.Person{Inbox: ib})

	c, err := lf.dialer()(ctx, url)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint ask: %v\n", err)
		return exitFailed
	}
	defer c.Destroy()
	opts := append(lf.options(fs), client.WithMaxRounds(*lf.maxRounds), client.WithAgentURL(url), client.WithResolvers(resolvers...))
	res, err := client.Run(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, parts...), opts...)
	return report("askpoint ask", stdout, stderr, res, err, ib.Path())
}

// answer: answer an inbox item and run the caller's loop on.
func answer(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint answer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lf := addLoopFlags(fs)
	data := fs.String("data", "", "answer with this JSON object instead of being prompted (checked before it is sent)")
	text := fs.String("text", "", "answer with this text instead of being prompted")
	decline := fs.Bool("decline", false, "decline to answer (the agent decides what follows; usually the task is rejected)")
	cancelTask := fs.Bool("cancel", false, "cancel the task instead of answering")
	reason := fs.String("reason", "", "with --decline or --cancel: why")
	as := fs.String("as", "", "who is answering, recorded with the answer (default $USER)")
	agent := fs.String("agent", "", "the agent's `URL`, for an item learned from a push that did not say")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: askpoint answer [flags] ID")
		fmt.Fprintln(stderr, "Answer the open question ID of the inbox (askpoint inbox lists them): options as a numbered")
		fmt.Fprintln(stderr, "choice, fields one by one, checked before the answer is sent. Later questions on the same task")
		fmt.Fprintln(stderr, "are asked here too, or go back to the inbox when standard input ends. Exit status as for ask.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(fs, args)); err != nil {
		return parseExit(err, exitUsage)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return exitUsage
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(fs.Arg(0), "#"), 10, 64)
	if err != nil || id <= 0 {
		fmt.Fprintf(stderr, "askpoint answer: %q is not an inbox item ID (a number; askpoint inbox lists them)\n", fs.Arg(0))
		return exitUsage
	}
	if *lf.maxRounds < 1 {
		fmt.Fprintln(stderr, "askpoint answer: --max-rounds must be at least 1")
		return exitUsage
	}
	given := 0
	for _, set := range []bool{*data != "", *text != "", *decline, *cancelTask} {
		if set {
			given++
		}
	}
	if given > 1 {
		fmt.Fprintln(stderr, "askpoint answer: give at most one of --data, --text, --decline and --cancel")
		return exitUsage
	}
	machine, err := lf.machineResolvers()
	if err != nil {
		fmt.Fprintf(stderr, "askpoint answer: %v\n", err)
		return exitUsage
	}

	ctx, cancel := signalContext(*lf.timeout)
	defer cancel()
	ib, err := lf.openInbox(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint answer: %v\n", err)
		return exitFailed
	}
	defer ib.Close()
	it, err := ib.Get(ctx, id)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint answer: %v\n", err)
		return exitFailed
	}
	if it.State != inbox.StateOpen {
		fmt.Fprintf(stderr, "askpoint answer: item %d is %s\n", it.ID, it.StateText())
		return exitFailed
	}
	person := *as
	if person == "" {
		person = personName()
	}
	term := client.NewTerminal(stdin, stdout, person)
	q := it.Query()

	var ans *client.Answer
	switch {
	case *decline || *cancelTask:
		act := question.ActionDecline
		if *cancelTask {
			act = question.ActionCancel
		}
		ans = &client.Answer{Action: act, Reason: *reason}
	case *data != "":
		fields, err := jsonObject("--data", *data)
		if err != nil {
			fmt.Fprintf(stderr, "askpoint answer: %v\n", err)
			return exitUsage
		}
		delete(fields, "questionId")
		ans = &client.Answer{Fields: fields}
	case *text != "":
		ans = &client.Answer{Text: *text}
	default:
		ans, err = term.Resolve(ctx, q)
		if err != nil {
			fmt.Fprintf(stderr, "askpoint answer: %v\n", err)
			return exitFailed
		}
		if ans == nil {
			fmt.Fprintf(stderr, "askpoint answer: no answer given; item %d stays open\n", it.ID)
			return exitWaiting
		}
	}
	ans.By, ans.Person = client.ByPerson, person

	resolvers := append(machine, term, inbox.Person{Inbox: ib})
	opts := append(lf.options(fs), client.WithResolvers(resolvers...))
	if *agent != "" {
		opts = append(opts, client.WithAgentURL(*agent))
	}
	res, err := inbox.Resume(ctx, ib, id, *ans, opts...)
	var invalid *client.InvalidAnswerError
	if errors.As(err, &invalid) {
		fmt.Fprintln(stderr, "askpoint answer: that answer would not be accepted; nothing was sent:")
		for _, e := range invalid.Errors {
			if e.Pointer == "" {
				fmt.Fprintf(stderr, "  - %s\n", e.Message)
			} else {
				fmt.Fprintf(stderr, "  - %s: %s\n", strings.TrimPrefix(e.Pointer, "/"), e.Message)
			}
		}
		return exitFailed
	}
	return report("askpoint answer", stdout, stderr, res, err, ib.Path())
}

// report prints how the loop ended and returns the exit code.
func report(cmd string, stdout, stderr io.Writer, res *client.Result, err error, inboxPath string) int {
	if res != nil {
		for _, a := range res.Answers {
			who := a.By
			if a.Rule != "" {
				who += " (rule " + a.Rule + ")"
			}
			if a.Person != "" {
				who += " (" + a.Person + ")"
			}
			what := a.Text
			switch {
			case a.Action != "":
				what = a.Action
				if a.Reason != "" {
					what += ": " + a.Reason
				}
			case a.Fields != nil:
				raw, _ := json.Marshal(a.Fields)
				what = string(raw)
			}
			qid := a.QuestionID
			if qid == "" {
				qid = "(text question)"
			}
			fmt.Fprintf(stdout, "answered: %s by %s: %s\n", qid, who, what)
		}
		if res.Task != nil && !errors.Is(err, client.ErrDeferred) {
			p := &printer{w: stdout}
			p.event(res.Task)
		}
		if res.Message != nil {
			fmt.Fprintf(stdout, "message: %s\n", partsText(res.Message.Parts))
		}
	}
	var deferred *inbox.DeferredError
	switch {
	case errors.As(err, &deferred):
		it := deferred.Item
		fmt.Fprintf(stdout, "task:    %s\nstate:   %s\n", it.TaskID, a2a.TaskStateInputRequired)
		fmt.Fprintf(stdout, "waiting: inbox item %d: %s\n", it.ID, text.FirstLine(it.Text))
		fmt.Fprintf(stdout, "answer:  askpoint answer %d --inbox %s\n", it.ID, shellQuote(inboxPath))
		return exitWaiting
	case errors.Is(err, client.ErrUnanswered), errors.Is(err, client.ErrAuthRequired):
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitWaiting
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
		return exitFailed
	}
	return exitCompleted
}

// flagsFirst puts flags before positional arguments, so that flags may
// follow them ("askpoint answer 3 --inbox F"); it asks fs which flags are
// booleans and so take no separate value.
func flagsFirst(fs *flag.FlagSet, args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || len(a) == 1 {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue // flag.Parse reports it
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		if i+1 < len(args) {
			flags = append(flags, args[i+1])
			i++
		}
	}
	return append(flags, pos...)
}

func personName() string {
	for _, k := range []string{"USER", "USERNAME", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return ""
}

// shellQuote is s as one word for a POSIX shell: as it is when it holds
// only characters no shell treats specially, else in single quotes, each
// quote inside closed, escaped and reopened.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
