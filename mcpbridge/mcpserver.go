package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultCallTimeout bounds one request to an MCP server (MCPServer.Timeout).
const DefaultCallTimeout = 2 * time.Minute

// MCPServer is an MCP server whose tools a step calls, over Streamable
// HTTP at revision 2026-07-28: each call is one request of its own, with
// no session kept between them, and a tool that asks answers
// "input_required" (CallToolResult.InputRequests and RequestState) for
// the caller to retry with CallToolParams.InputResponses and the same
// RequestState. The client declares form and URL elicitation.
type MCPServer struct {
	// URL is the server's MCP endpoint (http://127.0.0.1:8000/mcp).
	URL string
	// HTTPClient sends the requests (default: http.DefaultClient); set
	// one whose transport adds the server's credentials.
	HTTPClient *http.Client
	// Timeout bounds each call, tools/list or tools/call (default
	// DefaultCallTimeout): a tool that never answers is an error, not a
	// wait without end.
	Timeout time.Duration
}

// ErrUnreachable is returned (wrapped, with the cause) when the MCP
// server could not be reached or did not answer in time: trying again
// later may succeed. ErrNoAnswer is a server that took longer than
// MCPServer.Timeout. Any other error of Tools and CallTool is the
// server's answer, or something that is not MCP.
var ErrUnreachable = errors.New("mcpbridge: the MCP server cannot be reached")

// ErrNoAnswer is returned (wrapped, naming the server and the bound) when
// the MCP server did not answer within MCPServer.Timeout.
var ErrNoAnswer = errors.New("mcpbridge: the MCP server did not answer in time")

// ErrOldRevision is returned (wrapped, naming the server and its
// revision) when the MCP server answered at a revision older than
// 2026-07-28, which has no multi round-trip requests. ToolAgent tries a
// call that meets it again, as for ErrUnreachable: the SDK falls back to
// an older revision when the server was down for a moment too.
var ErrOldRevision = errors.New("mcpbridge: the MCP server does not speak MCP 2026-07-28, where a tool asks with input_required")

// Tools lists the server's tools (every page of tools/list).
func (s *MCPServer) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	err := s.session(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			tools = append(tools, t)
		}
		return nil
	})
	return tools, err
}

// CallTool calls a tool once: the first call, or a retry with the
// responses to the input requests of its last result. The result is the
// server's, input_required included (its InputRequests are non-nil); it
// is never retried here.
func (s *MCPServer) CallTool(ctx context.Context, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := s.session(ctx, func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, p)
		return err
	})
	return res, err
}

// session runs f on a new client session of the server, then closes it.
func (s *MCPServer) session(ctx context.Context, f func(context.Context, *mcp.ClientSession) error) error {
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	classify := func(err error) error {
		if parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: %s gave no answer within %s", ErrNoAnswer, s.URL, timeout)
		}
		return s.classify(ctx, err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "askpoint", Version: "1"}, &mcp.ClientOptions{
		// The caller answers input requests (a person, days later): the
		// SDK must not try to answer them itself.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
	})
	hc := s.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	tr := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		return classify(err)
	}
	defer cs.Close()
	if ir := cs.InitializeResult(); ir == nil || ir.ProtocolVersion < firstModernRevision {
		// The SDK falls back to an older revision on any error of
		// server/discover, one of a server that was down for a moment
		// included; at an older revision a tool cannot ask.
		v := "none"
		if ir != nil {
			v = ir.ProtocolVersion
		}
		return fmt.Errorf("%w: the MCP server at %s speaks revision %s", ErrOldRevision, s.URL, v)
	}
	if err := f(ctx, cs); err != nil {
		return classify(err)
	}
	return nil
}

// classify marks what trying again may mend (a refused connection, a
// reset, the caller's context ending) with ErrUnreachable; a JSON-RPC error and anything
// else (an answer that is not MCP) are left as they are.
func (s *MCPServer) classify(ctx context.Context, err error) error {
	var rpc *jsonrpc.Error
	var netErr net.Error
	switch {
	// First: the SDK wraps a request that never reached the server in a
	// JSON-RPC error of its own ("rejected by transport") too.
	case ctx.Err() != nil, errors.As(err, &netErr), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return fmt.Errorf("%w at %s: %v", ErrUnreachable, s.URL, err)
	case errors.As(err, &rpc):
		return fmt.Errorf("the MCP server at %s answered with error %d: %s", s.URL, rpc.Code, rpc.Message)
	}
	return fmt.Errorf("the MCP server at %s: %w", s.URL, err)
}
