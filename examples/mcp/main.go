// Command mcp serves the expense agent of askpoint serve as an MCP tool
// at http://127.0.0.1:8421/mcp: the README's MCP lines, as a program. The
// key file holds 32 or more random bytes (askpoint mcp --key-file makes
// one).
package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"os/signal"

	"github.com/askpoint/askpoint/mcpbridge"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	key, err := os.ReadFile("askpoint-mcp.key")
	if err != nil {
		log.Fatal(err)
	}
	b, err := mcpbridge.New(ctx, mcpbridge.Config{
		Agents: []mcpbridge.Agent{{URL: "http://127.0.0.1:8420/expense"}}, // one tool per agent
		Key:    key,                                                       // signs each requestState
		Token:  os.Getenv("ASKPOINT_TOKEN"),                               // for the agents
	})
	if err != nil {
		log.Fatal(err)
	}
	http.Handle("/mcp", b.Handler()) // Streamable HTTP; b.Server().Run(ctx, &mcp.StdioTransport{}) for stdio
	log.Fatal(http.ListenAndServe("127.0.0.1:8421", nil))
}
