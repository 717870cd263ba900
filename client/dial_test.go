package client_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
)

// Package client speaks the HTTP bindings only. A caller who asks it for
// gRPC, or dials an agent that offers nothing else, is told where gRPC is
// instead of getting another binding or a bare "no compatible transports".
func TestDialSendsGRPCCallersToGrpcdial(t *testing.T) {
	t.Parallel()
	serve := func(ifaces ...*a2a.AgentInterface) string {
		cards := httptest.NewServer(a2asrv.NewStaticAgentCardHandler(&a2a.AgentCard{
			Name: "Far", Description: "Speaks what its interfaces say.", Version: "1.0.0", SupportedInterfaces: ifaces}))
		t.Cleanup(cards.Close)
		return cards.URL
	}
	both := serve(a2a.NewAgentInterface("http://127.0.0.1:1/rpc", a2a.TransportProtocolJSONRPC),
		a2a.NewAgentInterface("127.0.0.1:1", a2a.TransportProtocolGRPC))
	grpcOnly := serve(a2a.NewAgentInterface("127.0.0.1:1", a2a.TransportProtocolGRPC))

	// gRPC asked for is refused, not quietly replaced with JSON-RPC.
	_, err := client.DialWith(ctx(t), both, client.DialOptions{Preferred: []a2a.TransportProtocol{a2a.TransportProtocolGRPC}})
	if err == nil || !strings.Contains(err.Error(), "gRPC is dialled by package client/grpcdial") {
		t.Errorf("DialWith(gRPC preferred) = %v; want an error that points to grpcdial", err)
	}
	_, err = client.Dial(ctx(t), grpcOnly, nil)
	if err == nil || !strings.Contains(err.Error(), "the card offers gRPC, which package client/grpcdial dials") {
		t.Errorf("Dial(a gRPC-only card) = %v; want an error that points to grpcdial", err)
	}

	// With the binding added, the same card is dialled (a gRPC client
	// connects lazily: nothing listens there, and nothing is called).
	c, err := grpcdial.Dial(ctx(t), grpcOnly, client.DialOptions{Preferred: []a2a.TransportProtocol{a2a.TransportProtocolGRPC}})
	if err != nil {
		t.Fatalf("grpcdial.Dial = %v", err)
	}
	_ = c.Destroy()
}
