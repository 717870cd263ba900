// Command askpoint serves A2A agents that stop to ask a question and carry
// on later, and talks to any A2A 1.0 agent. Run "askpoint help".
package main

import (
	"os"

	"github.com/askpoint/askpoint/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
