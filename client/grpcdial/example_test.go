package grpcdial_test

import (
	"context"
	"fmt"
	"iter"
	"net"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
)

// A caller that reaches an agent whose card offers gRPC only: Dial adds
// the binding package client leaves out, and client.Run drives the call
// over it as over any other.
func ExampleDial() {
	ctx := context.Background()
	url, stop, err := serveOverGRPC()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	c, err := grpcdial.Dial(ctx, url, client.DialOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Destroy()
	res, err := client.Run(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("Ada")))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Message.Parts[0].Text())
	// Output: Hello, Ada, over gRPC.
}

// greeter is an agent on a2a-go's own server that greets whoever writes
// to it, in a message and without a task.
type greeter struct{}

func (greeter) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		greeting := fmt.Sprintf("Hello, %s, over gRPC.", ec.Message.Parts[0].Text())
		yield(a2a.NewMessage(a2a.MessageRoleAgent, a2a.NewTextPart(greeting)), nil)
	}
}

func (greeter) Cancel(context.Context, *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(func(a2a.Event, error) bool) {}
}

// serveOverGRPC serves the greeter on gRPC at 127.0.0.1, with a card on
// HTTP that names only the gRPC interface. It returns the card's base URL
// and a function that stops both.
func serveOverGRPC() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	gs := grpc.NewServer()
	a2agrpc.NewHandler(a2asrv.NewHandler(greeter{})).RegisterWith(gs)
	go func() { _ = gs.Serve(ln) }()
	cards := httptest.NewServer(a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
		Name: "Greeter", Description: "Greets you, over gRPC only.", Version: "1.0.0",
		SupportedInterfaces: []*a2a.AgentInterface{a2a.NewAgentInterface(ln.Addr().String(), a2a.TransportProtocolGRPC)},
	}))
	return cards.URL, func() { cards.Close(); gs.Stop() }, nil
}
