// Command embed is the program of the README: the expense agent of
// "Writing an agent", and a finance assistant that relays its question,
// served by a Go program of one's own with everything `askpoint serve`
// gives: the three A2A bindings on one port behind one set of tokens, the
// page of paused tasks at /inbox/, Prometheus metrics and OpenTelemetry
// traces.
//
//	go run ./examples/embed
//	askpoint send http://127.0.0.1:8420/expense "Taxi, 42 euros"
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/inbox/web"
	"github.com/askpoint/askpoint/question"
	"github.com/askpoint/askpoint/relay"
	"github.com/askpoint/askpoint/store/sqlite"
	"github.com/askpoint/askpoint/telemetry"
)

// Checkpoint is what the agent keeps while it waits; Answer is what it asks for.
type Checkpoint struct{ Receipt string }
type Answer struct {
	CostCentre string `json:"costCentre" jsonschema:"required,pattern=^CC-[0-9]{4}$"`
}

var expense = askpoint.Steps[Checkpoint, Answer]{
	OnStart: func(ctx context.Context, call *askpoint.Call) (askpoint.Outcome, error) {
		q := question.Question{
			Text:    "Which cost centre should this expense be charged to?",
			Schema:  question.MustSchemaFor[Answer](), // the schema and the Go type cannot disagree
			Options: []question.Option{{Value: "CC-4410"}, {Value: "CC-4420"}},
		}
		receipt, _ := call.Request.Parts[0].Content.(a2a.Text) // a request has at least one part
		// The task pauses as rows in the store; nothing waits in memory for the answer.
		return askpoint.Ask(q, Checkpoint{Receipt: string(receipt)}), nil
	},
	OnAnswer: func(ctx context.Context, call *askpoint.Call, cp Checkpoint, a Answer) (askpoint.Outcome, error) {
		// a is valid against the schema and the options; call.Key is this step's idempotency key
		text := fmt.Sprintf("Filed %q, charged to %s.", cp.Receipt, a.CostCentre)
		return askpoint.Complete(&a2a.Artifact{ID: "expense", Name: "expense", Parts: a2a.ContentParts{a2a.NewTextPart(text)}}), nil
	},
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := sqlite.Open(ctx, "expenses.db")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	metrics, err := telemetry.NewMetrics(prometheus.DefaultRegisterer) // the askpoint_* series
	if err != nil {
		log.Fatal(err)
	}
	tracing, err := telemetry.TracingFromEnv(ctx, os.Stdout) // nil unless the OTEL_* variables ask for traces
	if err != nil {
		log.Fatal(err)
	}
	cfg := askpoint.Config{Store: st, Observer: telemetry.New(metrics, tracing)}
	if tok := os.Getenv("ALICE_TOKEN"); tok != "" {
		cfg.Tokens = map[string]string{tok: "alice"} // then every binding requires it
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		log.Fatal(err)
	}
	const base = "http://127.0.0.1:8420"
	// An orchestrator that relays the expense agent's question; the expense
	// agent's push notifications reach it on this server's own port.
	assistant, err := relay.Agent(relay.Config{SubAgentURL: base + "/expense", CallbackURL: base + "/assistant"})
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range []askpoint.AgentSpec{
		{Name: "expense", Agent: expense, Card: a2a.AgentCard{Name: "Expenses", Description: "Files a receipt; asks which cost centre."}},
		{Name: "assistant", Agent: assistant, Card: a2a.AgentCard{Name: "Assistant", Description: "Files expenses through the expense agent."}},
	} {
		if err := srv.Register(a); err != nil {
			log.Fatal(err)
		}
	}
	page, err := web.ServerPageFor(srv, base, web.ServerPageOptions{Stats: metrics.Table}) // paused tasks, answered in a browser
	if err != nil {
		log.Fatal(err)
	}
	defer page.Close()
	if err := srv.Handle("/inbox/", page.Handler()); err != nil {
		log.Fatal(err)
	}
	go http.ListenAndServe("127.0.0.1:9090", promhttp.Handler()) // /metrics, on a port of its own
	// JSON-RPC, HTTP+JSON and gRPC on one port, until SIGINT or SIGTERM; then a graceful stop.
	if err := srv.ListenAndServe(ctx, "127.0.0.1:8420"); err != nil {
		log.Fatal(err)
	}
	if tracing != nil {
		_ = tracing.Shutdown(context.Background())
	}
}
