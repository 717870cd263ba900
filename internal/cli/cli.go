// Package cli is the askpoint command.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/askpoint/askpoint/internal/text"
)

const usage = `askpoint: durable A2A agents that stop to ask a question and carry on later.

Usage:
  askpoint serve [--addr 127.0.0.1:8420] [--db askpoint.db]
      Serve the worked example (the expense agent) on the embedded SQLite store;
      --metrics-addr serves Prometheus metrics, OTEL_* variables turn tracing on;
      --mcp URL serves each tool of that MCP server as an agent (repeatable).
  askpoint send [--task ID] [--data JSON] [--stream] URL [TEXT]
      Send a message to any A2A 1.0 agent and print the task: its state and,
      for a question, the text, options, expiry and question ID.
  askpoint bench [--callers 32] [--duration 10s] [--paused 100000,1000000] [--pg URL]
      Benchmark askpoint against the a2a-go SDK's default server, side by side.
  askpoint ask [--facts JSON] [--policy FILE] [--inbox FILE] [--stream] URL TEXT
      Send TEXT and answer the agent's questions from facts, then policy, then a person
      through the inbox; exits 3 when the task waits on a person.
  askpoint inbox [--inbox FILE] [--all] [--listen ADDR]
      List the questions that wait on a person, or receive push notifications into the inbox.
  askpoint answer [--data JSON] [--inbox FILE] ID
      Answer inbox question ID: options as a numbered choice, fields one by one, checked
      before they are sent; the task then carries on.
  askpoint mcp [--listen 127.0.0.1:8421 | --stdio] [--tokens FILE] --agent URL [--agent URL]...
      Serve A2A agents as MCP tools, one per agent; their questions come back to the MCP
      client as forms (input_required), its answers go to the agent.
  askpoint stats METRICS_URL | --db FILE|POSTGRES_URL
      How questions fare, per agent and question kind, from a server's --metrics-addr
      or from its database (read-only, all tenants): asked, answered, median and p90
      time to answer, re-ask, expiry and decline rates.

Run "askpoint COMMAND --help" for a command's flags.
`

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	// What agents send (questions, options, errors, URLs) is printed
	// through the one sanitizer: no control sequence reaches a terminal.
	stdout, stderr = text.CleanWriter(stdout), text.CleanWriter(stderr)
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "send":
		return send(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "ask":
		return ask(args[1:], stdout, stderr)
	case "inbox":
		return inboxCmd(args[1:], stdout, stderr)
	case "answer":
		return answer(args[1:], stdout, stderr)
	case "stats":
		return stats(args[1:], stdout, stderr)
	case "mcp":
		return mcpCmd(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "askpoint: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// parseExit is the exit code of a command whose flags did not parse: 0
// for --help (the usage was asked for and printed), else code.
func parseExit(err error, code int) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return code
}

// errText is an error's text without the library's "askpoint: " prefix,
// for lines that start with the command's name already.
func errText(err error) string {
	return strings.TrimPrefix(err.Error(), "askpoint: ")
}
