package mcpbridge

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/askpoint/askpoint/client"
)

// A question no MCP form can ask (a field of objects, of arrays of free
// values, of several types) is asked in the web inbox instead, when the
// bridge knows the inbox page for the task (Config.InboxURL) and the
// client declares URL-mode elicitation (capabilities.elicitation.url):
// the input_required result's one input request is an elicitation of mode
// "url" whose url is that page. The page is the inbox's own, behind its own
// login: the link carries no secret, so only someone who can sign in to
// the inbox as the principal whose tasks they are (the bridge's --token)
// can answer there. The client opens it, the person signs in and answers,
// and the client retries the call with "accept" and the requestState: the
// bridge reads the task; if the question is answered, it follows the task
// on (its next question, or its end, is the result); if not, the same
// URL-mode round again. A retry sends the agent nothing, so a replay of the
// state only reads the task. Decline and cancel go to the agent as in form
// mode.

// ServeInbox is a Config.InboxURL for the agents of an askpoint serve whose
// web inbox is at inbox (http://HOST:PORT/inbox, the server's own page):
// the task of the agent at agents/NAME is answered at inbox/t/NAME/TASK.
// agents is the server's base URL; "" takes inbox's origin (askpoint
// serve serves both on one port). An agent elsewhere has no page ("").
func ServeInbox(inbox, agents string) (func(agentURL string, task a2a.TaskID) string, error) {
	iu, err := url.Parse(strings.TrimRight(inbox, "/"))
	if err != nil || (iu.Scheme != "http" && iu.Scheme != "https") || iu.Host == "" || iu.RawQuery != "" || iu.Fragment != "" {
		return nil, fmt.Errorf("mcpbridge: the inbox URL %q must be http(s)://HOST:PORT/PATH, the web inbox's base", inbox)
	}
	if agents == "" {
		agents = iu.Scheme + "://" + iu.Host
	}
	au, err := url.Parse(strings.TrimRight(agents, "/"))
	if err != nil || au.Host == "" {
		return nil, fmt.Errorf("mcpbridge: the agents' base URL %q must be http(s)://HOST:PORT", agents)
	}
	prefix := au.Scheme + "://" + au.Host + au.Path + "/"
	base := iu.String()
	return func(agentURL string, task a2a.TaskID) string {
		rest, ok := strings.CutPrefix(strings.TrimSuffix(agentURL, "/.well-known/agent-card.json"), prefix)
		name := strings.Trim(rest, "/")
		if !ok || name == "" || strings.Contains(name, "/") || task == "" {
			return ""
		}
		return base + "/t/" + url.PathEscape(name) + "/" + url.PathEscape(string(task))
	}, nil
}

// forCall is t for one call: whether its client takes URL-mode
// elicitation. Clients of revisions before 2026-07-28 are asked forms only
// (their rounds run inside one call, which cannot wait on a person for
// long).
func (t *tool) forCall(req *mcp.CallToolRequest) *tool {
	c := *t
	caps := req.ClientCapabilities()
	c.urlMode = modern(req.Session) && caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
	return &c
}

// askAtInbox is the URL-mode round for question key of q, which no form
// can ask (why); nil when it cannot be asked so (no inbox page, or a
// client without URL mode).
func (t *tool) askAtInbox(q *client.Query, key, caller string, why error) *mcp.CallToolResult {
	if !t.urlMode || t.b.cfg.InboxURL == nil {
		return nil
	}
	page := t.b.cfg.InboxURL(t.url, q.TaskID)
	if page == "" {
		return nil
	}
	msg := q.Text + "\n\nThis question cannot be asked as a form here (" + strings.TrimPrefix(why.Error(), "mcpbridge: ") +
		"). Answer it in the web inbox, where you sign in as usual; then come back and continue."
	st := seal(t.b.cfg.Key, state{Tool: t.name, Task: string(q.TaskID), Key: key, Caller: caller, Expires: t.stateExpiry(q).Unix(), Inbox: true})
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{key: &mcp.ElicitParams{Mode: "url", Message: msg, URL: page, ElicitationID: string(q.TaskID) + "/" + key}},
		RequestState:  st,
		Meta:          mcp.Meta{MetaTaskID: string(q.TaskID), MetaQuestionID: key},
	}
}

// afterInbox follows a task whose question was answered in the web inbox:
// its next question, or its end, is the result.
func (t *tool) afterInbox(ctx context.Context, task a2a.TaskID, caller string) *mcp.CallToolResult {
	c, err := t.b.cfg.Dial(ctx, t.url)
	if err != nil {
		return toolError(nil, "The agent %s at %s cannot be reached: %v; the requestState is still good.", t.card.Name, t.url, err)
	}
	defer c.Destroy()
	res, err := client.Follow(ctx, c, task, t.options(caller)...)
	return t.outcome(res, err, caller)
}
