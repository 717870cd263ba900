// Package cli is the askpoint command.
package cli

import (
	"fmt"
	"io"
)

const usage = `askpoint: durable A2A agents that stop to ask a question and carry on later.

Usage:
  askpoint serve [--addr 127.0.0.1:8420] [--db askpoint.db]
      Serve the worked example (the expense agent) on the embedded SQLite store.
  askpoint send [--task ID] [--data JSON] [--stream] URL [TEXT]
      Send a message to any A2A 1.0 agent and print the task: its state and,
      for a question, the text, options, expiry and question ID.

Run "askpoint COMMAND --help" for a command's flags.
`

// Main runs the command line args and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stdout, stderr)
	case "send":
		return send(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "askpoint: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
