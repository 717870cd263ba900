package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/question"
)

// DefaultMaxRequestState bounds the requestState a tool may ask the
// agent to keep (ToolAgentConfig.MaxRequestState).
const DefaultMaxRequestState = 32 << 10

// Meta keys of the calls a ToolAgent makes: the A2A task and the step's
// idempotency key on each tools/call, and on each elicitation response
// the askpoint question it was asked as and the answer's decision record
// (when the answer carried one).
const (
	MetaIdempotencyKey = "dev.askpoint/idempotencyKey"
	MetaDecision       = "dev.askpoint/decision"
)

// ToolAgentConfig configures a ToolAgent.
type ToolAgentConfig struct {
	// Server is the MCP server the tool is on.
	Server *MCPServer
	// Tool is the tool, as Server.Tools lists it (its name and input
	// schema are used).
	Tool *mcp.Tool
	// Expiry is how long each question stays open (0: the askpoint
	// server's default, Config.QuestionExpiry).
	Expiry time.Duration
	// MaxRequestState bounds the requestState the tool asks the task to
	// keep, in bytes (default DefaultMaxRequestState): a larger one ends
	// the task failed, saying so.
	MaxRequestState int
	// Now is the clock expiries are set from (default time.Now).
	Now func() time.Time
}

// ToolAgent serves one MCP tool as an askpoint agent. A task's first
// message fills the tool's arguments: its text the tool's one required
// string argument, a data part arguments by name. When the tool answers
// input_required, each elicitation becomes a question of the task
// (QuestionOf: its message, its schema, its choices with their titles;
// an ID of the runtime's; Config.Expiry), asked one at a time, with the
// tool's requestState in the checkpoint, so that the question outlives
// the process. askpoint validates the answer against the schema and
// re-asks what does not fit; a valid answer is the elicitation's accept
// (a decline its decline), and once every request of the round is
// answered the call is retried with the responses and the state. The
// tool's next input_required is the task's next question; its result the
// task's artifact (its text, and structuredContent as a data part); its
// error the task's failure. A URL-mode elicitation pauses the task in
// auth-required with the URL; the caller's follow-up accepts it. An MCP
// server that cannot be reached is a step error, which the runtime tries
// again with backoff: the answer stays in the task until it is sent.
// While the task waits, it holds the call (HoldToolCall): a task that
// ends without resuming (canceled, or its question expired) has the
// call retried with cancel (Release).
type ToolAgent struct {
	cfg ToolAgentConfig
	arg string // the one required string argument a message's text fills, "" when none
}

// NewToolAgent builds the agent for cfg.Tool.
func NewToolAgent(cfg ToolAgentConfig) (*ToolAgent, error) {
	if cfg.Server == nil || cfg.Server.URL == "" {
		return nil, errors.New("mcpbridge: ToolAgentConfig.Server names no MCP server")
	}
	if cfg.Tool == nil || cfg.Tool.Name == "" {
		return nil, errors.New("mcpbridge: ToolAgentConfig.Tool names no tool")
	}
	if cfg.MaxRequestState <= 0 {
		cfg.MaxRequestState = DefaultMaxRequestState
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &ToolAgent{cfg: cfg, arg: textArgument(cfg.Tool.InputSchema)}, nil
}

// textArgument is the input schema's one required string property, or "".
func textArgument(schema any) string {
	raw, _ := json.Marshal(schema)
	var fields []question.Field
	for _, f := range question.SchemaFields(raw) {
		if f.Required && f.Is("string") {
			fields = append(fields, f)
		}
	}
	if len(fields) != 1 {
		return ""
	}
	return fields[0].Name
}

// Card is the agent's card: named after the tool, saying which tool of
// which server it serves.
func (a *ToolAgent) Card() a2a.AgentCard {
	t := a.cfg.Tool
	title := t.Title
	if title == "" && t.Annotations != nil {
		title = t.Annotations.Title
	}
	if title == "" {
		title = t.Name
	}
	desc := fmt.Sprintf("The MCP tool %s of the MCP server at %s.", t.Name, a.cfg.Server.URL)
	if d := strings.TrimSpace(t.Description); d != "" {
		desc += " " + d
	}
	how := "Send the tool's arguments as a data part"
	if a.arg != "" {
		how = fmt.Sprintf("Send text (the tool's %q) or the tool's arguments as a data part", a.arg)
	}
	return a2a.AgentCard{
		Name:        title,
		Description: desc,
		Skills: []a2a.AgentSkill{{
			ID: "mcp-tool-" + t.Name, Name: t.Name,
			Description: how + "; the questions the tool asks come back as questions of the task.",
			Tags:        []string{"mcp"},
		}},
	}
}

// toolCheckpoint is what a paused task keeps: the call, the tool's state,
// and the round's input requests and the responses given so far.
type toolCheckpoint struct {
	Args      map[string]any               `json:"args"`
	State     string                       `json:"state,omitempty"`
	Pending   map[string]*mcp.ElicitParams `json:"pending,omitempty"`   // asked, not yet answered, by input request key
	Responses map[string]*mcp.ElicitResult `json:"responses,omitempty"` // answered, by key
	Asking    string                       `json:"asking,omitempty"`    // the key the open question asks
	Questions map[string]string            `json:"questions,omitempty"` // key -> the question's text, for the reasons
}

// Start implements askpoint.Agent: the first call of the tool.
func (a *ToolAgent) Start(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
	args, err := a.arguments(call.Message)
	if err != nil {
		return askpoint.Reject(err.Error()), nil
	}
	return a.round(ctx, call, &toolCheckpoint{Args: args})
}

// arguments are the tool's arguments from a message: the data parts'
// objects merged by name, and the text as the one required string
// argument (when there is one and the data did not set it).
func (a *ToolAgent) arguments(m *a2a.Message) (map[string]any, error) {
	args := map[string]any{}
	var words []string
	if m != nil {
		for _, p := range m.Parts {
			if p == nil {
				continue
			}
			switch v := p.Content.(type) {
			case a2a.Text:
				if s := strings.TrimSpace(string(v)); s != "" {
					words = append(words, s)
				}
			case a2a.Data:
				obj, ok := v.Value.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("a data part for the MCP tool %s must be a JSON object of its arguments by name", a.cfg.Tool.Name)
				}
				for k, val := range obj {
					args[k] = val
				}
			}
		}
	}
	if len(words) > 0 {
		if a.arg == "" {
			return nil, fmt.Errorf("the MCP tool %s takes no text (it has no one required string argument); send its arguments as a data part", a.cfg.Tool.Name)
		}
		if _, set := args[a.arg]; !set {
			args[a.arg] = strings.Join(words, "\n")
		}
	}
	return args, nil
}

// Resume implements askpoint.Agent: an answer (or a decline) to the open
// question, or the caller's follow-up to a URL it was sent to.
func (a *ToolAgent) Resume(ctx context.Context, call *askpoint.Call, r *askpoint.Resumption) (askpoint.Outcome, error) {
	var cp toolCheckpoint
	if err := json.Unmarshal(r.Checkpoint, &cp); err != nil {
		return askpoint.Outcome{}, askpoint.Permanent(fmt.Errorf("mcpbridge: read the checkpoint: %w", err))
	}
	key := cp.Asking
	if _, open := cp.Pending[key]; !open {
		return askpoint.Fail(fmt.Sprintf("The task was resumed with no input request of the MCP tool %s open.", a.cfg.Tool.Name)), nil
	}
	resp := &mcp.ElicitResult{Action: "accept"}
	switch {
	case r.Auth != nil:
		// The caller says it went to the URL: the elicitation is accepted
		// (a URL-mode response has no content).
	case r.Answer != nil && r.Answer.Action == question.ActionDecline:
		resp.Action = "decline"
	case r.Answer != nil:
		content := map[string]any{}
		if err := json.Unmarshal(r.Answer.Fields, &content); err != nil {
			return askpoint.Outcome{}, askpoint.Permanent(fmt.Errorf("mcpbridge: read the answer: %w", err))
		}
		resp.Content = content
	default:
		return askpoint.Fail(fmt.Sprintf("The task was resumed without an answer to the question of the MCP tool %s.", a.cfg.Tool.Name)), nil
	}
	resp.Meta = mcp.Meta{MetaTaskID: call.TaskID}
	if r.Question != nil {
		resp.Meta[MetaQuestionID] = r.Question.ID
	}
	if d, ok, _ := question.DecisionOf(call.Message); ok {
		resp.Meta[MetaDecision] = d.Metadata()
	}
	delete(cp.Pending, key)
	if cp.Responses == nil {
		cp.Responses = map[string]*mcp.ElicitResult{}
	}
	cp.Responses[key] = resp
	cp.Asking = ""
	return a.next(ctx, call, &cp)
}

// next asks the round's next input request, or, when all are answered,
// retries the call with the responses.
func (a *ToolAgent) next(ctx context.Context, call *askpoint.Call, cp *toolCheckpoint) (askpoint.Outcome, error) {
	if len(cp.Pending) == 0 {
		return a.round(ctx, call, cp)
	}
	keys := make([]string, 0, len(cp.Pending))
	for k := range cp.Pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	key := keys[0]
	cp.Asking = key
	p := cp.Pending[key]
	q, err := QuestionOf(p)
	if errors.Is(err, ErrNotForm) && p.URL != "" {
		msg := strings.TrimSpace(p.Message)
		if msg == "" {
			msg = fmt.Sprintf("The MCP tool %s needs you to visit a page.", a.cfg.Tool.Name)
		}
		out := askpoint.RequireAuth(fmt.Sprintf("%s Open %s, then send any message to this task to carry on.", msg, p.URL), cp)
		if a.cfg.Expiry > 0 {
			out = out.ExpiresAt(a.cfg.Now().Add(a.cfg.Expiry))
		}
		return out.Hold(callHold(cp)), nil
	}
	if err != nil {
		return askpoint.Fail(fmt.Sprintf("The MCP tool %s asked a question that cannot be asked here: %s.", a.cfg.Tool.Name, strings.TrimPrefix(err.Error(), "mcpbridge: "))), nil
	}
	if a.cfg.Expiry > 0 {
		q.Expires = a.cfg.Now().Add(a.cfg.Expiry)
	}
	return askpoint.Ask(*q, cp).Hold(callHold(cp)), nil
}

// HoldToolCall names the hold a ToolAgent's paused task declares for the
// tool call that waits on its answer (see ToolAgent.Release).
const HoldToolCall = "mcp tool call"

// heldCall is what the hold of a waiting tool call carries to its
// release: the call and the round's input request keys.
type heldCall struct {
	Args  map[string]any `json:"args"`
	State string         `json:"state,omitempty"`
	Keys  []string       `json:"keys"`
}

// callHold is the hold of the tool call cp waits on.
func callHold(cp *toolCheckpoint) askpoint.Hold {
	h := heldCall{Args: cp.Args, State: cp.State}
	for k := range cp.Pending {
		h.Keys = append(h.Keys, k)
	}
	for k := range cp.Responses {
		h.Keys = append(h.Keys, k)
	}
	slices.Sort(h.Keys)
	return askpoint.Hold{Name: HoldToolCall, Data: h}
}

// Release implements askpoint.Releaser: when the task ends without its
// answer (the caller cancels it, or its question expires), the runtime
// releases the tool call the task held, and Release retries it once with
// a cancel for every input request of the round and the stored
// requestState, so that the tool knows the call is over. The call carries
// the release's idempotency key (call.Key, MetaIdempotencyKey), the same
// on every try of the same release. A server that cannot be reached, or
// does not answer within MCPServer.Timeout, is an error the runtime tries
// again with the step backoff; an error the server answers is final, and
// whatever result it gives is taken as heard.
func (a *ToolAgent) Release(ctx context.Context, call *askpoint.Call, h askpoint.HoldStatus) error {
	if h.Name != HoldToolCall {
		return nil // not a hold of this agent's: nothing to tell the tool
	}
	var held heldCall
	if err := json.Unmarshal(h.Data, &held); err != nil {
		return askpoint.Permanent(fmt.Errorf("mcpbridge: read the held call of the MCP tool %s: %w", a.cfg.Tool.Name, err))
	}
	p := &mcp.CallToolParams{
		Name: a.cfg.Tool.Name, Arguments: held.Args, RequestState: held.State,
		InputResponses: mcp.InputResponseMap{},
		Meta:           mcp.Meta{MetaTaskID: call.TaskID, MetaIdempotencyKey: call.Key},
	}
	for _, k := range held.Keys {
		p.InputResponses[k] = &mcp.ElicitResult{Action: "cancel", Meta: mcp.Meta{MetaTaskID: call.TaskID}}
	}
	_, err := a.cfg.Server.CallTool(ctx, p)
	if err == nil || errors.Is(err, ErrUnreachable) || errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrOldRevision) {
		return err
	}
	return askpoint.Permanent(fmt.Errorf("mcpbridge: tell the MCP tool %s that the call is canceled: %w", a.cfg.Tool.Name, err))
}

// round calls the tool (a first call, or a retry with the round's
// responses and the state) and turns its answer into the step's outcome.
func (a *ToolAgent) round(ctx context.Context, call *askpoint.Call, cp *toolCheckpoint) (askpoint.Outcome, error) {
	name := a.cfg.Tool.Name
	p := &mcp.CallToolParams{
		Name: name, Arguments: cp.Args, RequestState: cp.State,
		Meta: mcp.Meta{MetaTaskID: call.TaskID, MetaIdempotencyKey: call.Key},
	}
	if len(cp.Responses) > 0 {
		p.InputResponses = mcp.InputResponseMap{}
		for k, r := range cp.Responses {
			p.InputResponses[k] = r
		}
	}
	res, err := a.cfg.Server.CallTool(ctx, p)
	if errors.Is(err, ErrUnreachable) || errors.Is(err, ErrOldRevision) {
		// The runtime tries the step again with backoff; the answer
		// stays in the task until it is sent.
		return askpoint.Outcome{}, err
	}
	if err != nil {
		return askpoint.Fail(fmt.Sprintf("The call of the MCP tool %s failed: %s", name, strings.TrimPrefix(err.Error(), "mcpbridge: "))), nil
	}
	if res.InputRequests != nil || res.NeedsInput() {
		if len(res.InputRequests) == 0 {
			// Load shedding: the server asks to be tried again later.
			return askpoint.Outcome{}, fmt.Errorf("%w: the MCP server at %s is busy (input_required with no input requests)", ErrUnreachable, a.cfg.Server.URL)
		}
		if n := len(res.RequestState); n > a.cfg.MaxRequestState {
			return askpoint.Fail(fmt.Sprintf("The MCP tool %s asked to keep a requestState of %d bytes, more than the %d bytes this agent keeps.", name, n, a.cfg.MaxRequestState)), nil
		}
		next := &toolCheckpoint{Args: cp.Args, State: res.RequestState, Pending: map[string]*mcp.ElicitParams{}}
		for k, ir := range res.InputRequests {
			ep, ok := ir.(*mcp.ElicitParams)
			if !ok {
				return askpoint.Fail(fmt.Sprintf("The MCP tool %s asked for %s (input request %q), which an askpoint agent cannot give; it can answer elicitations only.", name, inputKind(ir), k)), nil
			}
			next.Pending[k] = ep
		}
		return a.next(ctx, call, next)
	}
	if res.IsError {
		reason := contentText(res.Content)
		if reason == "" {
			reason = "it gave no reason"
		}
		return askpoint.Fail(fmt.Sprintf("The MCP tool %s failed: %s", name, reason)), nil
	}
	return askpoint.Complete(toolArtifact(name, res)), nil
}

// inputKind names an input request that is not an elicitation.
func inputKind(ir mcp.InputRequest) string {
	switch ir.(type) {
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return "sampling (sampling/createMessage)"
	case *mcp.ListRootsParams:
		return "its roots (roots/list)"
	}
	return fmt.Sprintf("an input of type %T", ir)
}

// contentText is the text of a result's text content, one block a line.
func contentText(cs []mcp.Content) string {
	var out []string
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok && strings.TrimSpace(t.Text) != "" {
			out = append(out, t.Text)
		}
	}
	return strings.Join(out, "\n")
}

// toolArtifact is a tool's result as the task's artifact: each text block
// a text part, an image raw bytes, a resource link a URL, and the
// structuredContent a data part.
func toolArtifact(name string, res *mcp.CallToolResult) *a2a.Artifact {
	art := &a2a.Artifact{ID: a2a.NewArtifactID(), Name: name}
	for _, c := range res.Content {
		switch v := c.(type) {
		case *mcp.TextContent:
			art.Parts = append(art.Parts, a2a.NewTextPart(v.Text))
		case *mcp.ImageContent:
			p := a2a.NewRawPart(v.Data)
			p.MediaType = v.MIMEType
			art.Parts = append(art.Parts, p)
		case *mcp.ResourceLink:
			p := a2a.NewFileURLPart(a2a.URL(v.URI), v.MIMEType)
			p.Filename = v.Name
			art.Parts = append(art.Parts, p)
		}
	}
	if res.StructuredContent != nil {
		dp := a2a.NewDataPart(res.StructuredContent)
		dp.MediaType = question.MediaTypeJSON
		art.Parts = append(art.Parts, dp)
	}
	if len(art.Parts) == 0 {
		art.Parts = a2a.ContentParts{a2a.NewTextPart("The MCP tool " + name + " returned nothing.")}
	}
	return art
}

// ToolAgents lists the server's tools and makes each an agent, as
// `askpoint serve --mcp URL` serves them: the agent's name is the tool's
// (ToolName, with dashes for underscores: book_trip is book-trip), its
// card says which tool of which server, and each is built with cfg
// (its Server and Tool are set here).
func ToolAgents(ctx context.Context, server *MCPServer, cfg ToolAgentConfig) ([]askpoint.AgentSpec, error) {
	tools, err := server.Tools(ctx)
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: list the tools of %s: %w", server.URL, err)
	}
	if len(tools) == 0 {
		return nil, fmt.Errorf("mcpbridge: the MCP server at %s has no tools", server.URL)
	}
	var specs []askpoint.AgentSpec
	for _, t := range tools {
		c := cfg
		c.Server, c.Tool = server, t
		a, err := NewToolAgent(c)
		if err != nil {
			return nil, err
		}
		name := strings.ReplaceAll(ToolName(t.Name), "_", "-")
		if name == "" {
			return nil, fmt.Errorf("mcpbridge: the tool %q of %s has no name an agent can be served under", t.Name, server.URL)
		}
		specs = append(specs, askpoint.AgentSpec{Name: name, Agent: a, Card: a.Card()})
	}
	return specs, nil
}
