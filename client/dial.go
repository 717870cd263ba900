package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	"google.golang.org/grpc"
)

// Dial fetches the agent card at agentURL (the agent's base URL, whose card
// is at agentURL/.well-known/agent-card.json, or the card's own URL ending
// in .json) and returns an a2a-go client for it, over whichever of the
// card's bindings comes first (JSON-RPC, HTTP+JSON or gRPC). hc carries the
// HTTP requests, the card's and the agent's (nil: a plain http.Client;
// give streams no overall timeout). preferred, when given, picks the
// transports to use in order (a2a.TransportProtocolJSONRPC,
// a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC).
func Dial(ctx context.Context, agentURL string, hc *http.Client, preferred ...a2a.TransportProtocol) (*a2aclient.Client, error) {
	return DialWith(ctx, agentURL, DialOptions{HTTP: hc, Preferred: preferred})
}

// DialOptions tune [DialWith].
type DialOptions struct {
	// HTTP carries the HTTP requests (nil: a plain http.Client).
	HTTP *http.Client
	// Token, when set, is sent as "Authorization: Bearer <token>" with
	// every call on every binding (on gRPC as metadata).
	Token string
	// Preferred picks the transports to use, in order (default: the
	// card's order).
	Preferred []a2a.TransportProtocol
	// GRPC are extra dial options for the gRPC binding.
	GRPC []grpc.DialOption
}

// DialWith is [Dial] with options.
func DialWith(ctx context.Context, agentURL string, o DialOptions) (*a2aclient.Client, error) {
	hc := o.HTTP
	if hc == nil {
		hc = &http.Client{}
	}
	// Refusals of streaming calls arrive as typed errors (StreamErrors).
	wrapped := *hc
	wrapped.Transport = StreamErrors(hc.Transport)
	hc = &wrapped
	u, err := url.Parse(agentURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: %q is not an http(s) URL of an agent", agentURL)
	}
	base := strings.TrimSuffix(agentURL, "/")
	var ropts []agentcard.ResolveOption
	if strings.HasSuffix(u.Path, ".json") {
		base = u.Scheme + "://" + u.Host
		ropts = append(ropts, agentcard.WithPath(u.Path))
	}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base, ropts...)
	if err != nil {
		return nil, fmt.Errorf("client: fetch the agent card from %s: %w", agentURL, err)
	}
	opts := []a2aclient.FactoryOption{
		a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		// gRPC with TLS when the card came over https.
		GRPCTransport(u.Scheme == "https", o.GRPC...),
	}
	if len(o.Preferred) > 0 {
		opts = append(opts, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: o.Preferred}))
	}
	if o.Token != "" {
		opts = append(opts, a2aclient.WithCallInterceptors(bearerToken{token: o.Token, host: hostPort(agentURL)}))
	}
	c, err := a2aclient.NewFromCard(ctx, card, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: connect to %s (%s): %w", card.Name, agentURL, err)
	}
	return c, nil
}
