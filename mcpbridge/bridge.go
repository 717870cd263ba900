// Package mcpbridge serves A2A agents as MCP tools: one tool per agent,
// whose call sends the agent a message and whose agent's questions come
// back to the MCP client as forms to fill in; and MCP tools as askpoint
// agents (ToolAgent).
//
// A tools/call sends the arguments to the agent (message as a text part,
// data as a data part) and drives the task with package client's loop.
// When the task is input-required, the question (the question extension's
// data part; see package question) becomes an "input_required" result of
// MCP's multi round-trip requests (protocol revision 2026-07-28): one
// form elicitation built from question.Question.Fields, the model every
// face that asks a person is built from, and a requestState. The client
// retries the call with the person's inputResponses and the requestState;
// the answer is checked against the question, sent to the agent as an
// answer naming the question's ID with a decision record (by person, via
// MCP), and the task driven on: the agent's next question, or its re-ask
// of this one with its errors, is the next round; the finished task's
// artifacts are the tool result (text, and structuredContent for data
// parts). Clients of older revisions (2025-11-25 and before) are asked
// the same forms with server-initiated elicitation/create instead.
//
// A host that declares MCP's tasks extension (TasksExtension) on a
// tools/call gets a task instead: tasks/get reads the A2A task and shows
// its question as input_required with the same form, tasks/update answers
// it, tasks/cancel cancels the A2A task. The taskId is signed like a
// requestState and names the A2A task, so a restart loses no task.
//
// The requestState is signed with Config.Key (HMAC-SHA256) and carries
// the tool, the task and question IDs, the MCP caller it was issued to and
// the question's expiry; a forged, foreign, expired or spent state is
// refused with a JSON-RPC invalid-params error that says which, and
// nothing is sent to the agent. The bridge keeps no state of its own: a
// state is spent when its question is no longer open at the agent, which
// is where a restart of the bridge finds it. docs/mcp.md has the mapping
// field by field, and what is refused.
//
// The other direction is ToolAgent: an MCP server's tool (called through
// MCPServer) served as an askpoint agent, whose elicitations become
// durable questions of the A2A task (QuestionOf, built on the same form
// code), the tool's requestState kept in the checkpoint; ToolAgents makes
// one per tool of a server, as askpoint serve --mcp does.
//
//	b, err := mcpbridge.New(ctx, mcpbridge.Config{
//		Agents: []mcpbridge.Agent{{URL: "http://127.0.0.1:8420/expense"}},
//		Key:    key, // 32 bytes or more, kept like any secret
//	})
//	http.Handle("/mcp", b.Handler())
package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// DefaultMaxStateAge is how long a requestState for a question without an
// expiry is good for.
const DefaultMaxStateAge = 24 * time.Hour

// Meta keys of the results' _meta: the A2A task and the question, so that
// a host can tell a person which task waits.
const (
	MetaTaskID     = "dev.askpoint/taskId"
	MetaQuestionID = "dev.askpoint/questionId"
	MetaTaskState  = "dev.askpoint/taskState"
)

// Via is what the decision record of an answer given through the bridge
// says it was given in.
const Via = "MCP"

// Agent is one A2A agent to serve as a tool.
type Agent struct {
	// URL is the agent's base URL (its card is at
	// URL/.well-known/agent-card.json) or its card's own URL.
	URL string
	// Name is the tool's name; "" derives it from the card's name
	// ("Expense agent" is expense_agent).
	Name string
}

// Config configures a Bridge.
type Config struct {
	// Agents are served one tool each; at least one.
	Agents []Agent
	// Token, when set, is sent to the agents as a bearer token (by the
	// default Dial).
	Token string
	// Key signs the requestStates: MinKeyBytes or more random bytes, kept
	// like any secret and the same across restarts (a new key refuses the
	// states the old one issued).
	Key []byte
	// Dial connects to an agent for each call (default: grpcdial.Dial with
	// Token, which speaks every binding a card declares).
	Dial func(ctx context.Context, agentURL string) (*a2aclient.Client, error)
	// Caller names the MCP caller a call comes from; a requestState is
	// good only for the caller it was issued to. Default: the bearer
	// token's user (Extra.TokenInfo.UserID, set by auth middleware such
	// as go-sdk's auth.RequireBearerToken), else the MCP session's ID,
	// else "" (a caller without identity: a state then binds to no one).
	Caller func(req *mcp.CallToolRequest) string
	// MaxStateAge bounds the requestState of a question without an expiry
	// (default DefaultMaxStateAge).
	MaxStateAge time.Duration
	// Now is the clock requestStates are checked against (default
	// time.Now).
	Now func() time.Time
	// Logger receives the bridge's warnings (default: none).
	Logger *slog.Logger
	// HTTPClient fetches the agents' cards at New (default: a client with
	// a 30s timeout).
	HTTPClient *http.Client
	// InboxURL, when set, is the web inbox page where a person answers a
	// task's question that no MCP form can ask (ServeInbox makes one for
	// askpoint serve's /inbox/); "" when no inbox answers that agent's
	// tasks. Such a question is then asked as URL-mode elicitation of
	// clients that declare it (see urlmode.go); without it, or to other
	// clients, it is refused.
	InboxURL func(agentURL string, task a2a.TaskID) string
}

// Bridge is an MCP server whose tools are A2A agents.
type Bridge struct {
	cfg    Config
	server *mcp.Server
	tools  []*tool
	locks  keyLocks
}

// tool is one agent as an MCP tool.
type tool struct {
	b    *Bridge
	name string
	url  string
	card *a2a.AgentCard
	// urlMode: this call's client takes URL-mode elicitation (set on the
	// call's copy of the tool, forCall).
	urlMode bool
}

// New fetches each agent's card and builds the server. An agent whose
// card cannot be fetched, two tools of one name and a short key are
// errors.
func New(ctx context.Context, cfg Config) (*Bridge, error) {
	if len(cfg.Key) < MinKeyBytes {
		return nil, fmt.Errorf("mcpbridge: the key is %d bytes; it must be at least %d random bytes", len(cfg.Key), MinKeyBytes)
	}
	if len(cfg.Agents) == 0 {
		return nil, errors.New("mcpbridge: no agents to serve")
	}
	if cfg.Dial == nil {
		token := cfg.Token
		cfg.Dial = func(ctx context.Context, agentURL string) (*a2aclient.Client, error) {
			return grpcdial.Dial(ctx, agentURL, client.DialOptions{Token: token})
		}
	}
	if cfg.Caller == nil {
		cfg.Caller = DefaultCaller
	}
	if cfg.MaxStateAge <= 0 {
		cfg.MaxStateAge = DefaultMaxStateAge
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	b := &Bridge{cfg: cfg}
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	caps.AddExtension(TasksExtension, nil)
	b.server = mcp.NewServer(&mcp.Implementation{Name: "askpoint", Title: "askpoint: A2A agents as tools", Version: "1"}, &mcp.ServerOptions{Logger: cfg.Logger, Capabilities: caps})
	b.addTasks()
	seen := map[string]string{}
	for _, a := range cfg.Agents {
		card, err := client.Card(ctx, a.URL, cfg.HTTPClient)
		if err != nil {
			return nil, err
		}
		name := a.Name
		if name == "" {
			name = ToolName(card.Name)
		}
		if name == "" {
			return nil, fmt.Errorf("mcpbridge: the card of %s has no name to name its tool by; give Agent.Name", a.URL)
		}
		if other, dup := seen[name]; dup {
			return nil, fmt.Errorf("mcpbridge: the agents at %s and %s would both be tool %q; give one of them Agent.Name", other, a.URL, name)
		}
		seen[name] = a.URL
		t := &tool{b: b, name: name, url: a.URL, card: card}
		b.tools = append(b.tools, t)
		b.server.AddTool(t.describe(), t.handle)
	}
	return b, nil
}

// Server is the MCP server, for a transport of the caller's choice:
// b.Server().Run(ctx, &mcp.StdioTransport{}) serves a desktop host.
func (b *Bridge) Server() *mcp.Server { return b.server }

// Handler serves MCP over Streamable HTTP (mount it at /mcp): requests
// of revision 2026-07-28 and later (an MCP-Protocol-Version header that
// says so, no session) statelessly, as that revision has it; older
// clients in sessions, which the server's elicitation/create requests
// need.
func (b *Bridge) Handler() http.Handler {
	get := func(*http.Request) *mcp.Server { return b.server }
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, Logger: b.cfg.Logger})
	sessions := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: b.cfg.Logger})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Protocol-Version") >= firstModernRevision && r.Header.Get("Mcp-Session-Id") == "" {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// firstModernRevision is the first MCP revision with multi round-trip
// requests and without sessions.
const firstModernRevision = "2026-07-28"

// Tools lists the tools, in the order of Config.Agents.
func (b *Bridge) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, len(b.tools))
	for i, t := range b.tools {
		out[i] = t.describe()
	}
	return out
}

// DefaultCaller is the default Config.Caller: "user:" and the bearer
// token's user, else "session:" and the MCP session's ID, else "".
func DefaultCaller(req *mcp.CallToolRequest) string {
	if req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return "user:" + req.Extra.TokenInfo.UserID
	}
	if req.Session != nil && req.Session.ID() != "" {
		return "session:" + req.Session.ID()
	}
	return ""
}

var notToolChars = regexp.MustCompile(`[^a-z0-9]+`)

// ToolName is a card's name as a tool's: lower case, each run of other
// characters than a-z and 0-9 one underscore ("Expense agent" is
// expense_agent), at most 64 characters.
func ToolName(cardName string) string {
	n := strings.Trim(notToolChars.ReplaceAllString(strings.ToLower(cardName), "_"), "_")
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "_")
	}
	return n
}

// describe is the tool as tools/list shows it.
func (t *tool) describe() *mcp.Tool {
	var d strings.Builder
	d.WriteString(strings.TrimSpace(t.card.Description))
	var examples []string
	for _, s := range t.card.Skills {
		fmt.Fprintf(&d, "\n\nSkill %q: %s", s.Name, strings.TrimSpace(s.Description))
		examples = append(examples, s.Examples...)
	}
	d.WriteString("\n\nThe agent may ask questions; they come back as forms for the person to fill in.")
	msg := map[string]any{"type": "string", "description": "What to ask the agent, in words (sent as a text part)."}
	if len(examples) > 0 {
		msg["examples"] = examples
	}
	return &mcp.Tool{
		Name:        t.name,
		Title:       t.card.Name,
		Description: strings.TrimSpace(d.String()),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"message": msg,
				"data":    map[string]any{"type": "object", "description": "Structured input for the agent, sent as a data part (application/json); optional. A call with neither sends an empty one."},
			},
		},
		Meta: mcp.Meta{"dev.askpoint/agentUrl": t.url},
	}
}

// modern says whether the session speaks multi round-trip requests
// (2026-07-28 and later); a session without initialize (server/discover)
// does.
func modern(ss *mcp.ServerSession) bool {
	if ss == nil {
		return true
	}
	ip := ss.InitializeParams()
	return ip == nil || ip.ProtocolVersion >= firstModernRevision
}

// viaOf is what the decision record says an answer was given in: MCP,
// and the client's name when it gave one.
func viaOf(ss *mcp.ServerSession) string {
	if ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil && ip.ClientInfo.Name != "" {
			return Via + " (" + ip.ClientInfo.Name + ")"
		}
	}
	return Via
}

// maxLegacyRounds bounds the forms one tools/call of an older client
// fills in.
const maxLegacyRounds = 20

// handle is the tools/call handler.
func (t *tool) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	t = t.forCall(req)
	caller, via := t.b.cfg.Caller(req), viaOf(req.Session)
	if modern(req.Session) {
		return t.round(ctx, req.Params, caller, via)
	}
	// An older client cannot retry with inputResponses: ask it each form
	// with elicitation/create and retry here.
	p := *req.Params
	version := ""
	if ip := req.Session.InitializeParams(); ip != nil {
		version = ip.ProtocolVersion
	}
	for range maxLegacyRounds {
		res, err := t.round(ctx, &p, caller, via)
		if err != nil || res.InputRequests == nil {
			return res, err
		}
		responses := mcp.InputResponseMap{}
		for key, ir := range res.InputRequests {
			er, err := req.Session.Elicit(ctx, forRevision(ir.(*mcp.ElicitParams), version))
			if err != nil {
				return toolError(res.Meta, "The agent asked a question this MCP client could not be asked (%v); task %s stays paused at the agent.", err, res.Meta[MetaTaskID]), nil
			}
			responses[key] = er
		}
		p.InputResponses, p.RequestState = responses, res.RequestState
	}
	return toolError(nil, "The agent asked more than %d questions in one call; the task stays paused at the agent.", maxLegacyRounds), nil
}

// round answers one tools/call: a first call, or a retry with the
// answer to the question its requestState names.
func (t *tool) round(ctx context.Context, p *mcp.CallToolParamsRaw, caller, via string) (*mcp.CallToolResult, error) {
	if p.RequestState == "" {
		if len(p.InputResponses) > 0 {
			return nil, invalidParams("inputResponses came without the requestState of the result they answer")
		}
		return t.start(ctx, p.Arguments, caller)
	}
	return t.resume(ctx, p, caller, via)
}

// arguments are a tool's arguments.
type arguments struct {
	Message string         `json:"message"`
	Data    map[string]any `json:"data"`
}

func (t *tool) start(ctx context.Context, raw json.RawMessage, caller string) (*mcp.CallToolResult, error) {
	msg, err := t.message(raw)
	if err != nil {
		return nil, err
	}
	c, err := t.b.cfg.Dial(ctx, t.url)
	if err != nil {
		return toolError(nil, "The agent %s at %s cannot be reached: %v", t.card.Name, t.url, err), nil
	}
	defer c.Destroy()
	res, err := client.Run(ctx, c, msg, t.options(caller)...)
	return t.outcome(res, err, caller), nil
}

// message is the first message to the agent: the arguments' message as
// a text part, their data as a data part; bad arguments are a JSON-RPC
// error.
func (t *tool) message(raw json.RawMessage) (*a2a.Message, error) {
	var args arguments
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, invalidParams(fmt.Sprintf("the arguments of %s must be an object with a string message and an object data: %v", t.name, err))
		}
	}
	var parts a2a.ContentParts
	if strings.TrimSpace(args.Message) != "" {
		parts = append(parts, a2a.NewTextPart(args.Message))
	}
	if args.Data != nil || len(parts) == 0 {
		// A call without arguments is an empty data part: the agent asks
		// for what it needs (an A2A message has at least one part).
		if args.Data == nil {
			args.Data = map[string]any{}
		}
		dp := a2a.NewDataPart(args.Data)
		dp.MediaType = question.MediaTypeJSON
		parts = append(parts, dp)
	}
	return a2a.NewMessage(a2a.MessageRoleUser, parts...), nil
}

func (t *tool) options(caller string) []client.Option {
	return []client.Option{
		client.WithResolvers(client.ResolverFunc(deferToClient)),
		client.WithAgentURL(t.url), client.WithCaller(caller), client.WithDialer(t.b.cfg.Dial),
	}
}

// errToClient is how the one resolver hands each question to the MCP
// client: the loop stops with the task paused.
var errToClient = fmt.Errorf("%w: the MCP client asks its person", client.ErrDeferred)

func deferToClient(context.Context, *client.Query) (*client.Answer, error) { return nil, errToClient }

// resume answers the question p.RequestState names with p.InputResponses.
func (t *tool) resume(ctx context.Context, p *mcp.CallToolParamsRaw, caller, via string) (*mcp.CallToolResult, error) {
	st, err := open(t.b.cfg.Key, p.RequestState, t.name, caller, t.b.cfg.Now())
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	resp, err := oneResponse(p.InputResponses, st.Key, !st.Inbox)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	unlock, err := t.b.locks.lock(ctx, st.Task)
	if err != nil {
		return nil, err
	}
	defer unlock()

	c, err := t.b.cfg.Dial(ctx, t.url)
	if err != nil {
		return toolError(nil, "The agent %s at %s cannot be reached: %v; nothing was sent, and the requestState is still good.", t.card.Name, t.url, err), nil
	}
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(st.Task)})
	c.Destroy()
	if err != nil {
		return toolError(nil, "Task %s cannot be read from the agent %s: %v; nothing was sent, and the requestState is still good.", st.Task, t.card.Name, err), nil
	}
	if now := client.QuestionKey(task.Status.Message); task.Status.State != a2a.TaskStateInputRequired || now != st.Key {
		why := "the task is now " + text.StateWord(task.Status.State)
		if task.Status.State == a2a.TaskStateInputRequired {
			why = "the task asks question " + now + " now"
		}
		if st.Inbox && resp.Action == "accept" {
			// Answered in the web inbox: the task goes on from there.
			return t.afterInbox(ctx, task.ID, caller), nil
		}
		return nil, invalidParams(fmt.Sprintf("%v: question %s of task %s was answered already or closed (%s); nothing was sent", ErrStateSpent, st.Key, st.Task, why))
	}
	query, err := t.openQuery(task, caller)
	if err != nil {
		return toolError(nil, "Task %s asks a question that cannot be read: %v", st.Task, err), nil
	}
	if st.Inbox && resp.Action == "accept" {
		// Not answered in the web inbox yet: the same question.
		return t.ask(query, nil, caller), nil
	}
	res, refused, err := t.send(ctx, client.Continue, query, st.Key, resp, caller, via)
	var unask *unaskableError
	switch {
	case errors.As(err, &unask):
		return t.unaskable(task.ID, st.Key, unask.err), nil
	case len(refused) > 0:
		// Refused before it was sent, as the agent would refuse it: the
		// same question again, with why.
		return t.ask(query, refused, caller), nil
	case errors.Is(err, client.ErrStale):
		return nil, invalidParams(fmt.Sprintf("%v: %v; nothing was sent", ErrStateSpent, err))
	case isRPCError(err):
		return nil, err
	}
	return t.outcome(res, err, caller), nil
}

// openQuery is the open question of an input-required task as the
// resolvers see it.
func (t *tool) openQuery(task *a2a.Task, caller string) (*client.Query, error) {
	q, _, err := question.FromMessage(task.Status.Message)
	if err != nil {
		return nil, err
	}
	query := &client.Query{
		Agent: t.url, Caller: caller, TaskID: task.ID, ContextID: task.ContextID,
		Status: task.Status.Message, Question: q, Text: text.Of(task.Status.Message),
	}
	if q != nil {
		query.Text = q.Text
	}
	return query, nil
}

// unaskableError: the question cannot be a form (see formOf).
type unaskableError struct{ err error }

func (e *unaskableError) Error() string { return e.err.Error() }

// send answers the open question query (key) with resp, a person's
// elicitation result, with answer: client.Continue, which drives the
// task on to its next stop, or client.Deliver, which returns once the
// agent took the answer. refused lists why an accepted answer was not
// sent (it does not fit the form or the question); the error is an
// *unaskableError, a JSON-RPC error for an unknown action, or answer's.
func (t *tool) send(ctx context.Context, answer func(context.Context, *client.Paused, client.Answer, ...client.Option) (*client.Result, error), query *client.Query, key string, resp *mcp.ElicitResult, caller, via string) (*client.Result, []question.FieldError, error) {
	ans := client.Answer{By: client.ByPerson, Person: caller, Via: via}
	switch resp.Action {
	case "accept":
		f, err := formOf(query.Question)
		if err != nil {
			return nil, nil, &unaskableError{err}
		}
		fields, words, errs := f.read(resp.Content)
		if len(errs) > 0 {
			return nil, errs, nil
		}
		ans.Fields, ans.Text = fields, words
	case question.ActionDecline, question.ActionCancel:
		ans.Action = resp.Action
	default:
		return nil, nil, invalidParams(fmt.Sprintf("inputResponses[%q].action is %q; it must be accept, decline or cancel", key, resp.Action))
	}
	paused := &client.Paused{Query: query, Key: key, Name: "question " + key + " of task " + string(query.TaskID), Record: noRecord{}}
	res, err := answer(ctx, paused, ans, t.options(caller)...)
	var invalid *client.InvalidAnswerError
	if errors.As(err, &invalid) {
		return nil, invalid.Errors, nil
	}
	return res, nil, err
}

func isRPCError(err error) bool {
	var re *jsonrpc.Error
	return errors.As(err, &re)
}

// oneResponse is the response to the one input request key, or why the
// responses are malformed; a form's accept has content (a URL-mode
// round's has none).
func oneResponse(responses mcp.InputResponseMap, key string, form bool) (*mcp.ElicitResult, error) {
	for k := range responses {
		if k != key {
			return nil, fmt.Errorf("inputResponses has a response for %q, which this requestState did not ask; it asked %q", k, key)
		}
	}
	r, ok := responses[key]
	if !ok || r == nil {
		return nil, fmt.Errorf("inputResponses has no response for %q, which the requestState asks", key)
	}
	er, ok := r.(*mcp.ElicitResult)
	if !ok {
		return nil, fmt.Errorf("inputResponses[%q] is not an elicitation result (an action, and content with accept)", key)
	}
	if er.Action == "accept" && er.Content == nil && form {
		return nil, fmt.Errorf("inputResponses[%q] accepts with no content", key)
	}
	return er, nil
}

// outcome is the tool result of a run of the loop.
func (t *tool) outcome(res *client.Result, err error, caller string) *mcp.CallToolResult {
	var meta mcp.Meta
	if res != nil && res.Task != nil {
		meta = mcp.Meta{MetaTaskID: string(res.Task.ID), MetaTaskState: string(res.Task.Status.State)}
	}
	var ended *client.EndedError
	switch {
	case err == nil:
		return completed(res, meta)
	case errors.Is(err, client.ErrDeferred) && res != nil && res.Waiting != nil:
		return t.ask(res.Waiting, nil, caller)
	case errors.As(err, &ended):
		state := text.StateWord(ended.State)
		if ended.Reason != "" {
			return toolError(meta, "The task ended %s: %s", state, ended.Reason)
		}
		return toolError(meta, "The task ended %s.", state)
	case errors.Is(err, client.ErrAuthRequired):
		return toolError(meta, "The agent %s needs authorization, which it cannot be given here; the task stays paused.", t.card.Name)
	}
	t.b.cfg.Logger.Warn("mcpbridge: call failed", slog.String("tool", t.name), slog.Any("error", err))
	return toolError(meta, "The call to the agent %s failed: %v", t.card.Name, err)
}

// ask is the input_required result for the open question: its form, and
// a requestState for this caller. errs are why the last answer was not
// sent.
func (t *tool) ask(q *client.Query, errs []question.FieldError, caller string) *mcp.CallToolResult {
	key := client.QuestionKey(q.Status)
	f, err := formOf(q.Question)
	if err != nil {
		if res := t.askAtInbox(q, key, caller, err); res != nil {
			return res
		}
		return t.unaskable(q.TaskID, key, err)
	}
	msg := q.Text
	if qq := q.Question; qq != nil && qq.Attempt > 1 {
		// The agent's re-ask, its errors in people's words.
		reworded := *qq
		reworded.Errors = f.explain(qq.Errors)
		msg += "\n\n" + reworded.Notice()
	}
	if len(errs) > 0 {
		msg += "\n\nThat answer was not sent: " + strings.TrimSuffix(question.ErrorsText(f.explain(errs)), ".") + "."
	}
	st := seal(t.b.cfg.Key, state{Tool: t.name, Task: string(q.TaskID), Key: key, Caller: caller, Expires: t.stateExpiry(q).Unix()})
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{key: f.elicit(msg)},
		RequestState:  st,
		Meta:          mcp.Meta{MetaTaskID: string(q.TaskID), MetaQuestionID: key},
	}
}

// stateExpiry is when a requestState for q expires: with the question,
// else MaxStateAge from now.
func (t *tool) stateExpiry(q *client.Query) time.Time {
	if q.Question != nil && !q.Question.Expires.IsZero() {
		return q.Question.Expires
	}
	return t.b.cfg.Now().Add(t.b.cfg.MaxStateAge)
}

// unaskable is the tool error for a question no form can ask.
func (t *tool) unaskable(task a2a.TaskID, key string, err error) *mcp.CallToolResult {
	return toolError(mcp.Meta{MetaTaskID: string(task), MetaQuestionID: key},
		"The agent %s asks question %s (task %s), which cannot be asked here: %v. The task stays paused; answer it with an A2A client (askpoint send --task %s %s --data '{...}').",
		t.card.Name, key, task, strings.TrimPrefix(err.Error(), "mcpbridge: "), task, t.url)
}

// completed is the tool result of a completed task: its artifacts' parts
// as content (a data part as its JSON text too), and the data parts'
// values as structuredContent (the one value, or {"data": [values]}).
func completed(res *client.Result, meta mcp.Meta) *mcp.CallToolResult {
	out := &mcp.CallToolResult{Meta: meta}
	var data []any
	hasText := false
	for _, art := range res.Artifacts() {
		for _, p := range art.Parts {
			if p == nil {
				continue
			}
			switch v := p.Content.(type) {
			case a2a.Text:
				hasText = true
				out.Content = append(out.Content, &mcp.TextContent{Text: string(v)})
			case a2a.Data:
				data = append(data, v.Value)
				js, _ := json.Marshal(v.Value)
				out.Content = append(out.Content, &mcp.TextContent{Text: string(js)})
			case a2a.URL:
				name := p.Filename
				if name == "" {
					name = art.Name
				}
				out.Content = append(out.Content, &mcp.ResourceLink{URI: string(v), Name: name, MIMEType: p.MediaType})
			case a2a.Raw:
				if strings.HasPrefix(p.MediaType, "image/") {
					out.Content = append(out.Content, &mcp.ImageContent{Data: v, MIMEType: p.MediaType})
					continue
				}
				if strings.HasPrefix(p.MediaType, "audio/") {
					out.Content = append(out.Content, &mcp.AudioContent{Data: v, MIMEType: p.MediaType})
					continue
				}
				uri := "a2a:task/" + string(res.Task.ID) + "/artifact/" + string(art.ID)
				out.Content = append(out.Content, &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: uri, MIMEType: p.MediaType, Blob: v}})
			}
		}
	}
	var status *a2a.Message
	if res.Task != nil {
		status = res.Task.Status.Message
	} else {
		status = res.Message
	}
	if s := text.Of(status); s != "" && !hasText {
		out.Content = append([]mcp.Content{&mcp.TextContent{Text: s}}, out.Content...)
	}
	if len(out.Content) == 0 {
		out.Content = []mcp.Content{&mcp.TextContent{Text: "The task completed."}}
	}
	switch len(data) {
	case 0:
	case 1:
		out.StructuredContent = data[0]
	default:
		out.StructuredContent = map[string]any{"data": data}
	}
	return out
}

func toolError(meta mcp.Meta, format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Meta: meta, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
}

// noRecord is the paused question's record: the bridge keeps none (the
// agent's task is the record).
type noRecord struct{}

func (noRecord) Answered(context.Context, string, json.RawMessage) error { return nil }
func (noRecord) Closed(context.Context, string) error                    { return nil }

// keyLocks serializes the retries of one task in this process, so that
// two retries with one requestState cannot both find its question open.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

func (l *keyLocks) lock(ctx context.Context, key string) (func(), error) {
	for {
		l.mu.Lock()
		if l.m == nil {
			l.m = map[string]chan struct{}{}
		}
		ch, busy := l.m[key]
		if !busy {
			ch = make(chan struct{})
			l.m[key] = ch
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.m, key)
				l.mu.Unlock()
				close(ch)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
