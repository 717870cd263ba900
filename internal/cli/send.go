package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	apclient "github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/question"
)

func send(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("askpoint send", flag.ContinueOnError)
	fs.SetOutput(stderr)
	taskID := fs.String("task", "", "answer or follow up on this task `ID`")
	contextID := fs.String("context", "", "context `ID` for the message")
	data := fs.String("data", "", "a JSON object to send as a data part, e.g. '{\"costCentre\":\"CC-4410\"}'")
	stream := fs.Bool("stream", false, "use SendStreamingMessage and print each event")
	transport := fs.String("transport", "", "JSONRPC, HTTP+JSON or GRPC (default: the card's first)")
	noWait := fs.Bool("no-wait", false, "return at once (configuration.returnImmediately)")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	token := fs.String("token", "", "bearer `token` for agents that require one (default $ASKPOINT_TOKEN)")
	pushURL := fs.String("push-url", "", "push notification `URL`: the agent posts the task's updates there (e.g. askpoint inbox --listen)")
	pushToken := fs.String("push-token", "", "the `token` the agent sends with each notification (A2A-Notification-Token), e.g. the one askpoint inbox --listen printed")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: askpoint send [flags] URL [TEXT]")
		fmt.Fprintln(stderr, "URL is the agent's base URL (its card is at URL/.well-known/agent-card.json) or the card's own URL.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(reorder(args)); err != nil {
		return parseExit(err, 2)
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fs.Usage()
		return 2
	}
	url, text := fs.Arg(0), fs.Arg(1)
	parts, err := requestParts(text, *data)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint send: %v\n", err)
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	if *token == "" {
		*token = os.Getenv("ASKPOINT_TOKEN")
	}
	client, err := dial(ctx, url, *transport, *token)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint send: %v\n", err)
		return 1
	}
	defer client.Destroy()

	msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	msg.TaskID, msg.ContextID = a2a.TaskID(*taskID), *contextID
	req := &a2a.SendMessageRequest{Message: msg}
	if *noWait || *pushURL != "" {
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: *noWait}
	}
	if *pushURL != "" {
		req.Config.PushConfig = &a2a.PushConfig{URL: *pushURL, Token: *pushToken}
	}
	p := &printer{w: stdout, url: url, transport: *transport}
	if *stream {
		for ev, err := range client.SendStreamingMessage(ctx, req) {
			if err != nil {
				fmt.Fprintf(stderr, "askpoint send: %v%s\n", err, tokenHint(err, *token))
				return 1
			}
			p.event(ev)
		}
		p.hint()
		return 0
	}
	res, err := client.SendMessage(ctx, req)
	if err != nil {
		fmt.Fprintf(stderr, "askpoint send: %v%s\n", err, tokenHint(err, *token))
		return 1
	}
	p.event(res)
	p.hint()
	return 0
}

// reorder puts flags before positional arguments so that
// "askpoint send URL --task X" works as well as the flag-first form.
func reorder(args []string) []string {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, a)
			if !strings.Contains(a, "=") && i+1 < len(args) && !isBoolFlag(a) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		pos = append(pos, a)
	}
	return append(flags, pos...)
}

func isBoolFlag(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "stream", "no-wait", "h", "help":
		return true
	}
	return false
}

func dial(ctx context.Context, url, transport, token string) (*a2aclient.Client, error) {
	base, path := url, ""
	if strings.HasSuffix(url, ".json") {
		i := strings.Index(url[len("http://"):], "/")
		if i < 0 {
			return nil, fmt.Errorf("cannot read a card URL from %q", url)
		}
		base, path = url[:len("http://")+i], url[len("http://")+i:]
	}
	var opts []agentcard.ResolveOption
	if path != "" {
		opts = append(opts, agentcard.WithPath(path))
	}
	card, err := agentcard.NewResolver(&http.Client{Timeout: 30 * time.Second}).Resolve(ctx, strings.TrimSuffix(base, "/"), opts...)
	if err != nil {
		return nil, fmt.Errorf("fetch the agent card from %s: %w", url, err)
	}
	if strings.EqualFold(transport, "REST") {
		transport = string(a2a.TransportProtocolHTTPJSON)
	}
	if transport != "" {
		var keep []*a2a.AgentInterface
		for _, iface := range card.SupportedInterfaces {
			if strings.EqualFold(string(iface.ProtocolBinding), transport) {
				keep = append(keep, iface)
			}
		}
		if len(keep) == 0 {
			return nil, fmt.Errorf("the agent does not offer transport %q", transport)
		}
		card.SupportedInterfaces = keep
	}
	hc := bearerClient(url, token) // the token goes to the agent's own origin only
	hc.Transport = apclient.StreamErrors(hc.Transport)
	fopts := []a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		grpcdial.Transport(strings.HasPrefix(url, "https://"))}
	if token != "" {
		fopts = append(fopts, a2aclient.WithCallInterceptors(apclient.BearerToken(token, url)))
	}
	client, err := a2aclient.NewFromCard(ctx, card, fopts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", card.Name, err)
	}
	return client, nil
}

type printer struct {
	w         io.Writer
	url       string
	transport string // --transport, repeated in the hint
	task      string
	state     a2a.TaskState
	q         *question.Question
}

func (p *printer) event(ev a2a.Event) {
	switch v := ev.(type) {
	case *a2a.Task:
		p.task = string(v.ID)
		fmt.Fprintf(p.w, "task:    %s\ncontext: %s\n", v.ID, v.ContextID)
		p.status(v.Status)
		if v.Status.State.Terminal() {
			for _, a := range v.Artifacts {
				p.artifact(a)
			}
		}
	case *a2a.TaskStatusUpdateEvent:
		p.status(v.Status)
	case *a2a.TaskArtifactUpdateEvent:
		p.artifact(v.Artifact)
	case *a2a.Message:
		fmt.Fprintf(p.w, "message: %s\n", partsText(v.Parts))
	}
}

func (p *printer) status(s a2a.TaskStatus) {
	p.state = s.State
	fmt.Fprintf(p.w, "state:   %s\n", s.State)
	if s.Message == nil {
		return
	}
	txt := partsText(s.Message.Parts)
	if txt != "" {
		fmt.Fprintf(p.w, "says:    %s\n", indent(txt))
	}
	q, ok, err := question.FromMessage(s.Message)
	if err != nil || !ok {
		p.q = nil
		return
	}
	p.q = q
	fmt.Fprintf(p.w, "question: %s\n", q.ID)
	if len(q.Options) > 0 {
		var opts []string
		for _, o := range q.Options {
			v := question.ValueText(o.Value)
			if o.Label != "" && o.Label != v {
				opts = append(opts, fmt.Sprintf("%s (%s)", v, o.Label))
			} else {
				opts = append(opts, v)
			}
		}
		fmt.Fprintf(p.w, "options: %s\n", strings.Join(opts, ", "))
	}
	if fields := schemaFields(q.Schema); len(fields) > 0 {
		fmt.Fprintf(p.w, "fields:  %s\n", strings.Join(fields, ", "))
	}
	if !q.Expires.IsZero() {
		fmt.Fprintf(p.w, "expires: %s (in %s)\n", q.Expires.UTC().Format(time.RFC3339), time.Until(q.Expires).Round(time.Minute))
	}
	if q.Attempt > 1 {
		fmt.Fprintf(p.w, "attempt: %d of %d\n", q.Attempt, q.MaxAttempts)
		for _, e := range q.Errors {
			if strings.Contains(txt, e.Message) {
				continue // the agent's own words said it already
			}
			fmt.Fprintf(p.w, "error:   %s %s\n", e.Pointer, e.Message)
		}
	}
}

func (p *printer) artifact(a *a2a.Artifact) {
	if a == nil {
		return
	}
	fmt.Fprintf(p.w, "artifact: %s\n", a.Name)
	for _, part := range a.Parts {
		switch c := part.Content.(type) {
		case a2a.Text:
			fmt.Fprintf(p.w, "  text: %s\n", indent(string(c)))
		case a2a.Data:
			raw, _ := json.Marshal(c.Value)
			fmt.Fprintf(p.w, "  data: %s\n", raw)
		case a2a.URL:
			fmt.Fprintf(p.w, "  url:  %s\n", string(c))
		case a2a.Raw:
			fmt.Fprintf(p.w, "  raw:  %d bytes\n", len(c))
		}
	}
}

// hint tells a person how to answer a question.
func (p *printer) hint() {
	if p.state != a2a.TaskStateInputRequired || p.task == "" {
		return
	}
	example := `{"field": "value"}`
	if p.q != nil {
		if f := p.q.OptionField(); f != "" && len(p.q.Options) > 0 {
			example = fmt.Sprintf(`{"questionId": %q, %q: %s}`, p.q.ID, f, jsonValue(p.q.Options[0].Value))
		} else if ex := exampleAnswer(p.q.ID, p.q.Schema); ex != "" {
			example = ex
		}
	}
	tr := ""
	if p.transport != "" {
		tr = "--transport " + shellQuote(p.transport) + " "
	}
	// Every value is the agent's (the task ID, the question ID, option
	// values, field names): each is shell-quoted, so that pasting the line
	// runs askpoint and nothing else.
	fmt.Fprintf(p.w, "answer:  askpoint send %s--task %s --data %s %s\n", tr, shellQuote(p.task), shellQuote(example), shellQuote(p.url))
}

// exampleAnswer writes a JSON answer with every required field of schema
// filled with a placeholder of its type (the first allowed value when the
// field lists them), for a person to edit.
func exampleAnswer(questionID string, schema json.RawMessage) string {
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type string `json:"type"`
			Enum []any  `json:"enum"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Required) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"questionId": %q`, questionID)
	for _, name := range s.Required {
		prop := s.Properties[name]
		var v any = "..."
		switch {
		case len(prop.Enum) > 0:
			v = prop.Enum[0]
		case prop.Type == "number" || prop.Type == "integer":
			v = 0
		case prop.Type == "boolean":
			v = false
		}
		raw, _ := json.Marshal(v)
		fmt.Fprintf(&b, `, %q: %s`, name, raw)
	}
	return b.String() + "}"
}

func schemaFields(raw json.RawMessage) []string {
	var s struct {
		Required   []string       `json:"required"`
		Properties map[string]any `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	var out []string
	for name := range s.Properties {
		if req[name] {
			out = append(out, name+" *")
		} else {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func partsText(parts a2a.ContentParts) string {
	var out []string
	for _, p := range parts {
		if t, ok := p.Content.(a2a.Text); ok {
			out = append(out, string(t))
		}
	}
	return strings.Join(out, "\n")
}

// indent lines up the lines after the first under the first; an empty
// line stays empty (no trailing blanks).
func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.TrimSpace(lines[i]) == "" {
			lines[i] = ""
		} else {
			lines[i] = "         " + lines[i]
		}
	}
	return strings.Join(lines, "\n")
}

// jsonValue is v as JSON, for an example answer.
func jsonValue(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(raw)
}

// tokenHint says how to give askpoint send a token when the agent wants one
// and none was given.
func tokenHint(err error, token string) string {
	if token == "" && errors.Is(err, a2a.ErrUnauthenticated) {
		return " (askpoint send takes it with --token, or from $ASKPOINT_TOKEN)"
	}
	return ""
}
