package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/internal/text"
	"github.com/askpoint/askpoint/question"
)

// TasksExtension is the identifier of MCP's tasks extension (revision
// 2026-07-28). A tools/call whose per-request capabilities declare it is
// answered with a task (resultType "task") backed by the agent's A2A
// task: tasks/get reads the A2A task and shows its question as
// input_required with inputRequests, tasks/update answers it, and
// tasks/cancel cancels the A2A task.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The tasks extension's methods.
const (
	methodTasksGet    = "tasks/get"
	methodTasksUpdate = "tasks/update"
	methodTasksCancel = "tasks/cancel"
)

// TaskPollInterval is the pollIntervalMs a task suggests.
const TaskPollInterval = 2 * time.Second

// Errors of a taskId, returned wrapped with the words that say which and
// why (as JSON-RPC invalid-params errors on the wire).
var (
	// ErrTaskForged: the taskId was not issued by this bridge (its
	// signature does not match the key) or is not a taskId at all.
	ErrTaskForged = errors.New("mcpbridge: the taskId was not issued by this server")
	// ErrTaskCaller: the task was created by another MCP caller.
	ErrTaskCaller = errors.New("mcpbridge: the task belongs to another caller")
)

// taskRefVersion is the version of the taskId format.
const taskRefVersion = 1

// taskRef is what an MCP taskId carries, signed: the tool, the A2A task
// behind it, the caller it was created for, and when. The bridge stores
// nothing: the A2A task is the task's state, so a restart of the bridge
// (with the same key) loses none.
type taskRef struct {
	V       int    `json:"v"`
	Tool    string `json:"tool"`
	Task    string `json:"task"`
	Caller  string `json:"caller"`
	Created int64  `json:"at"` // Unix milliseconds
	Nonce   string `json:"n"`
}

// taskParams are the params of tasks/get, tasks/update and tasks/cancel.
// inputResponses stay raw: only the outstanding key's response is read.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// taskResult is a CreateTaskResult (resultType "task") or a tasks/get
// result (resultType "complete", a DetailedTask).
type taskResult struct {
	mcp.ResultBase
	ResultType     string              `json:"resultType"`
	TaskID         string              `json:"taskId"`
	Status         string              `json:"status"`
	StatusMessage  string              `json:"statusMessage,omitempty"`
	CreatedAt      string              `json:"createdAt"`
	LastUpdatedAt  string              `json:"lastUpdatedAt"`
	TTLMs          *int64              `json:"ttlMs"` // always null: the agent keeps the task
	PollIntervalMs int64               `json:"pollIntervalMs,omitempty"`
	InputRequests  mcp.InputRequestMap `json:"inputRequests,omitempty"`
	Result         *mcp.CallToolResult `json:"result,omitempty"`
}

// ackResult is the empty acknowledgement of tasks/update and tasks/cancel.
type ackResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// addTasks registers the tasks extension's methods and the middleware
// that answers a declaring client's tools/call with a task. The go-sdk
// v1.8.0 has no tasks of its own (decision 0190).
func (b *Bridge) addTasks() {
	b.server.AddReceivingMiddleware(b.tasksMiddleware)
	for method, h := range map[string]taskHandler{
		methodTasksGet:    (*tool).taskGet,
		methodTasksUpdate: (*tool).taskUpdate,
		methodTasksCancel: (*tool).taskCancel,
	} {
		err := mcp.AddReceivingCustomMethod(b.server, method, func(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (mcp.Result, error) {
			return b.taskMethod(ctx, method, ss, p, h)
		})
		if err != nil {
			panic(err) // a method name of the SDK's own: a programming error
		}
	}
}

// taskHandler handles one tasks/* method for a checked taskId and its
// caller; via names the client for decision records.
type taskHandler func(t *tool, ctx context.Context, ref taskRef, p *taskParams, caller, via string) (mcp.Result, error)

// extraKey carries a tasks/* request's RequestExtra (its bearer token)
// from the middleware to the method's handler, which the SDK passes the
// session and params only.
type extraKey struct{}

func (b *Bridge) tasksMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			r, ok := req.(*mcp.CallToolRequest)
			if ok && r.Params != nil && r.Params.RequestState == "" && len(r.Params.InputResponses) == 0 && declaresTasks(r.Session, r.ClientCapabilities()) {
				if t := b.tool(r.Params.Name); t != nil {
					return t.createTask(ctx, r)
				}
			}
		case methodTasksGet, methodTasksUpdate, methodTasksCancel:
			ctx = context.WithValue(ctx, extraKey{}, req.GetExtra())
		}
		return next(ctx, method, req)
	}
}

// declaresTasks says whether a request of revision 2026-07-28 or later
// declares the tasks extension.
func declaresTasks(ss *mcp.ServerSession, caps *mcp.ClientCapabilities) bool {
	if !modern(ss) || caps == nil {
		return false
	}
	_, ok := caps.Extensions[TasksExtension]
	return ok
}

// requestCapabilities are a request's client capabilities: its own
// (per-request, in _meta, as of 2026-07-28), else its session's.
func requestCapabilities(p *taskParams, ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if p != nil {
		if raw, ok := p.Meta[mcp.MetaKeyClientCapabilities]; ok {
			var caps mcp.ClientCapabilities
			if js, err := json.Marshal(raw); err == nil && json.Unmarshal(js, &caps) == nil {
				return &caps
			}
		}
	}
	if ip := ss.InitializeParams(); ip != nil {
		return ip.Capabilities
	}
	return nil
}

func (b *Bridge) tool(name string) *tool {
	for _, t := range b.tools {
		if t.name == name {
			return t
		}
	}
	return nil
}

// taskMethod checks a tasks/* request (the extension declared, the
// taskId this bridge's and the caller's) and hands it to h.
func (b *Bridge) taskMethod(ctx context.Context, method string, ss *mcp.ServerSession, p *taskParams, h taskHandler) (mcp.Result, error) {
	if !declaresTasks(ss, requestCapabilities(p, ss)) {
		data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{RequiredCapabilities: &mcp.ClientCapabilities{Extensions: map[string]any{TasksExtension: map[string]any{}}}})
		return nil, &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities, Message: fmt.Sprintf("%s is part of the tasks extension (%s), which this request's client capabilities do not declare", method, TasksExtension), Data: data}
	}
	if p == nil || p.TaskID == "" {
		return nil, invalidParams(method + " needs a taskId")
	}
	extra, _ := ctx.Value(extraKey{}).(*mcp.RequestExtra)
	caller := b.cfg.Caller(&mcp.CallToolRequest{Session: ss, Extra: extra})
	var ref taskRef
	if err := verify(b.cfg.Key, taskLabel, p.TaskID, ErrTaskForged, &ref); err != nil {
		return nil, invalidParams(err.Error())
	}
	if ref.V != taskRefVersion || ref.Task == "" {
		return nil, invalidParams(fmt.Sprintf("%v: it is of format %d, this server reads format %d", ErrTaskForged, ref.V, taskRefVersion))
	}
	t := b.tool(ref.Tool)
	if t == nil {
		return nil, invalidParams(fmt.Sprintf("%v: it names tool %q, which this server does not serve", ErrTaskForged, ref.Tool))
	}
	if ref.Caller != caller {
		return nil, invalidParams(fmt.Sprintf("%v: task %s was created by a caller other than this one; nothing was read or changed", ErrTaskCaller, ref.Task))
	}
	return h(t, ctx, ref, p, caller, viaOf(ss))
}

// createTask starts the agent's task and answers with a task at once:
// the message is sent with returnImmediately, so a tools/call does not
// wait while the agent works. An agent that answers with a message and
// no task gets a plain result.
func (t *tool) createTask(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
	msg, err := t.message(req.Params.Arguments)
	if err != nil {
		return nil, err
	}
	caller, now := t.b.cfg.Caller(req), t.b.cfg.Now()
	c, err := t.b.cfg.Dial(ctx, t.url)
	if err != nil {
		return toolError(nil, "The agent %s at %s cannot be reached: %v", t.card.Name, t.url, err), nil
	}
	defer c.Destroy()
	sent, err := c.SendMessage(ctx, &a2a.SendMessageRequest{Message: msg, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.b.cfg.Logger.Warn("mcpbridge: task not created", slog.String("tool", t.name), slog.Any("error", err))
		return toolError(nil, "The call to the agent %s failed: %v", t.card.Name, err), nil
	}
	task, ok := sent.(*a2a.Task)
	if !ok {
		m, _ := sent.(*a2a.Message)
		return completed(&client.Result{Message: m}, nil), nil
	}
	ref := taskRef{V: taskRefVersion, Tool: t.name, Task: string(task.ID), Caller: caller, Created: now.UnixMilli(), Nonce: text.RandomHex(9)}
	res := t.seed(sign(t.b.cfg.Key, taskLabel, ref), ref, task)
	res.ResultType = "task"
	res.Status = mcpStatus(task.Status.State)
	res.StatusMessage = text.Of(task.Status.Message)
	return res, nil
}

// seed is a task's fields every result shows.
func (t *tool) seed(id string, ref taskRef, task *a2a.Task) *taskResult {
	created := time.UnixMilli(ref.Created).UTC()
	updated := created
	if ts := task.Status.Timestamp; ts != nil && ts.After(created) {
		updated = ts.UTC()
	}
	return &taskResult{
		TaskID: id, CreatedAt: created.Format(time.RFC3339Nano), LastUpdatedAt: updated.Format(time.RFC3339Nano),
		PollIntervalMs: TaskPollInterval.Milliseconds(),
		ResultType:     "complete",
		ResultBase:     mcp.ResultBase{Meta: mcp.Meta{MetaTaskID: ref.Task, MetaTaskState: string(task.Status.State)}},
	}
}

// mcpStatus is an A2A task state as an MCP task status: a task paused
// for authorization, failed or rejected is completed with a tool error
// (isError), as a tools/call without tasks answers; only JSON-RPC errors
// would be failed.
func mcpStatus(s a2a.TaskState) string {
	switch s {
	case a2a.TaskStateInputRequired:
		return "input_required"
	case a2a.TaskStateCanceled:
		return "cancelled"
	case a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateAuthRequired:
		return "completed"
	}
	return "working"
}

// readTask reads the A2A task behind ref; the error is a JSON-RPC error
// in words.
func (t *tool) readTask(ctx context.Context, ref taskRef) (*a2a.Task, error) {
	c, err := t.b.cfg.Dial(ctx, t.url)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the agent %s at %s cannot be reached (%v); task %s is unchanged: ask again later", t.card.Name, t.url, err, ref.Task)}
	}
	defer c.Destroy()
	task, err := c.GetTask(ctx, &a2a.GetTaskRequest{ID: a2a.TaskID(ref.Task)})
	if errors.Is(err, a2a.ErrTaskNotFound) {
		return nil, invalidParams(fmt.Sprintf("task %s is not found at the agent %s (it may have been deleted)", ref.Task, t.card.Name))
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s cannot be read from the agent %s (%v); ask again later", ref.Task, t.card.Name, err)}
	}
	return task, nil
}

// taskGet is tasks/get: the A2A task as an MCP task, its question as the
// form a tools/call would ask, its end as the tool result.
func (t *tool) taskGet(ctx context.Context, ref taskRef, p *taskParams, caller, _ string) (mcp.Result, error) {
	task, err := t.readTask(ctx, ref)
	if err != nil {
		return nil, err
	}
	res := t.seed(p.TaskID, ref, task)
	res.StatusMessage = text.Of(task.Status.Message)
	switch st := task.Status.State; mcpStatus(st) {
	case "working":
		res.Status = "working"
		return res, nil
	case "cancelled":
		res.Status = "cancelled"
		return res, nil
	case "input_required":
		query, err := t.openQuery(task, caller)
		if err != nil {
			res.Status, res.Result = "completed", toolError(nil, "Task %s asks a question that cannot be read: %v", ref.Task, err)
			return res, nil
		}
		asked := t.ask(query, nil, caller)
		if asked.InputRequests == nil {
			// A question no form can ask: the tool error a tools/call gets.
			res.Status, res.Result = "completed", asked
			return res, nil
		}
		res.Status, res.InputRequests, res.StatusMessage = "input_required", asked.InputRequests, query.Text
		res.Meta[MetaQuestionID] = client.QuestionKey(task.Status.Message)
		return res, nil
	case "completed":
		var end error
		switch st {
		case a2a.TaskStateAuthRequired:
			end = fmt.Errorf("%w: task %s", client.ErrAuthRequired, task.ID)
		case a2a.TaskStateFailed, a2a.TaskStateRejected:
			end = &client.EndedError{TaskID: task.ID, State: st, Reason: text.Of(task.Status.Message)}
		}
		res.Status, res.Result = "completed", t.outcome(&client.Result{Task: task}, end, caller)
	}
	return res, nil
}

// taskUpdate is tasks/update: the response to the outstanding question
// is checked and sent as a retry's is (client.Deliver instead of
// Continue), and acknowledged once the agent took it, while the agent
// works on: tasks/get says what followed. Responses for keys that are not outstanding are
// ignored, as the extension says; an answer that does not fit the
// question is refused with the errors and nothing is sent, so that the
// question stays outstanding under the same key.
func (t *tool) taskUpdate(ctx context.Context, ref taskRef, p *taskParams, caller, via string) (mcp.Result, error) {
	ack := &ackResult{ResultType: "complete"}
	unlock, err := t.b.locks.lock(ctx, ref.Task)
	if err != nil {
		return nil, err
	}
	defer unlock()
	task, err := t.readTask(ctx, ref)
	if err != nil {
		return nil, err
	}
	if task.Status.State != a2a.TaskStateInputRequired {
		return ack, nil
	}
	key := client.QuestionKey(task.Status.Message)
	raw, ok := p.InputResponses[key]
	if !ok {
		return ack, nil
	}
	var responses mcp.InputResponseMap
	if err := json.Unmarshal(fmt.Appendf(nil, `{%q:%s}`, key, raw), &responses); err != nil {
		return nil, invalidParams(fmt.Sprintf("inputResponses[%q] is not an elicitation result (an action, and content with accept): %v", key, err))
	}
	resp, err := oneResponse(responses, key, true)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	query, err := t.openQuery(task, caller)
	if err != nil {
		return nil, invalidParams(fmt.Sprintf("task %s asks a question that cannot be read (%v); nothing was sent", ref.Task, err))
	}
	_, refused, err := t.send(ctx, client.Deliver, query, key, resp, caller, via)
	var unask *unaskableError
	switch {
	case errors.As(err, &unask):
		return nil, invalidParams(fmt.Sprintf("question %s of task %s cannot be answered here (%v); nothing was sent", key, ref.Task, unask.err))
	case len(refused) > 0:
		if f, ferr := formOf(query.Question); ferr == nil {
			refused = f.explain(refused)
		}
		return nil, invalidParams(fmt.Sprintf("that answer to question %s was not sent: %s; the question is still open", key, question.ErrorsText(refused)))
	case isRPCError(err):
		return nil, err
	case err == nil, errors.Is(err, client.ErrDeferred), errors.Is(err, client.ErrNotCompleted),
		errors.Is(err, client.ErrAuthRequired), errors.Is(err, client.ErrStale):
		// The agent took the answer (or the question closed meanwhile):
		// tasks/get says what followed.
		return ack, nil
	}
	t.b.cfg.Logger.Warn("mcpbridge: task update failed", slog.String("tool", t.name), slog.String("task", ref.Task), slog.Any("error", err))
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the answer to question %s of task %s may not have reached the agent %s (%v); tasks/get says whether it is still outstanding", key, ref.Task, t.card.Name, err)}
}

// taskCancel is tasks/cancel: the A2A task is canceled. A task that has
// ended already is acknowledged and left as it is.
func (t *tool) taskCancel(ctx context.Context, ref taskRef, _ *taskParams, caller, _ string) (mcp.Result, error) {
	ack := &ackResult{ResultType: "complete"}
	c, err := t.b.cfg.Dial(ctx, t.url)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("the agent %s at %s cannot be reached (%v); task %s is not canceled", t.card.Name, t.url, err, ref.Task)}
	}
	defer c.Destroy()
	_, err = c.CancelTask(ctx, &a2a.CancelTaskRequest{ID: a2a.TaskID(ref.Task), Metadata: map[string]any{"askpoint.reason": "canceled by the MCP client (" + caller + ")"}})
	switch {
	case err == nil, errors.Is(err, a2a.ErrTaskNotCancelable):
		return ack, nil
	case errors.Is(err, a2a.ErrTaskNotFound):
		return nil, invalidParams(fmt.Sprintf("task %s is not found at the agent %s", ref.Task, t.card.Name))
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("task %s could not be canceled at the agent %s: %v", ref.Task, t.card.Name, err)}
}
