package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

// Dial fetches the agent card at agentURL (the agent's base URL, whose card
// is at agentURL/.well-known/agent-card.json, or the card's own URL ending
// in .json) and returns an a2a-go client for it, over whichever of the
// card's HTTP bindings comes first (JSON-RPC or HTTP+JSON). hc carries the
// HTTP requests, the card's and the agent's (nil: a plain http.Client;
// give streams no overall timeout). preferred, when given, picks the
// transports to use in order (a2a.TransportProtocolJSONRPC,
// a2a.TransportProtocolHTTPJSON). The gRPC binding is dialled by package
// client/grpcdial, so that a caller that does not use it does not link
// gRPC.
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
	// card's order). It names gRPC only with a transport for it in
	// Transports (grpcdial.Dial adds one).
	Preferred []a2a.TransportProtocol
	// Transports are a2a-go client options for more bindings, tried after
	// JSON-RPC's and HTTP+JSON's: grpcdial.Dial adds gRPC's here.
	Transports []a2aclient.FactoryOption
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
	if _, err := agentURLOf(agentURL); err != nil {
		return nil, err
	}
	if len(o.Transports) == 0 && slices.Contains(o.Preferred, a2a.TransportProtocolGRPC) {
		return nil, fmt.Errorf("client: %s: gRPC is dialled by package client/grpcdial (grpcdial.Dial); package client speaks JSON-RPC and HTTP+JSON", agentURL)
	}
	card, err := Card(ctx, agentURL, hc)
	if err != nil {
		return nil, err
	}
	opts := append([]a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc)}, o.Transports...)
	if len(o.Preferred) > 0 {
		opts = append(opts, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: o.Preferred}))
	}
	if o.Token != "" {
		opts = append(opts, a2aclient.WithCallInterceptors(bearerToken{token: o.Token, host: hostPort(agentURL)}))
	}
	c, err := a2aclient.NewFromCard(ctx, card, opts...)
	if err != nil {
		if len(o.Transports) == 0 && offersGRPC(card) {
			return nil, fmt.Errorf("client: connect to %s (%s): %w (the card offers gRPC, which package client/grpcdial dials)", card.Name, agentURL, err)
		}
		return nil, fmt.Errorf("client: connect to %s (%s): %w", card.Name, agentURL, err)
	}
	return c, nil
}

// Card fetches the agent card at agentURL (the agent's base URL, whose
// card is at agentURL/.well-known/agent-card.json, or the card's own URL
// ending in .json) with hc (nil: a plain http.Client).
func Card(ctx context.Context, agentURL string, hc *http.Client) (*a2a.AgentCard, error) {
	u, err := agentURLOf(agentURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{}
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
	return card, nil
}

// agentURLOf parses an agent's URL, which must be http(s) with a host.
func agentURLOf(agentURL string) (*url.URL, error) {
	u, err := url.Parse(agentURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: %q is not an http(s) URL of an agent", agentURL)
	}
	return u, nil
}

func offersGRPC(card *a2a.AgentCard) bool {
	for _, iface := range card.SupportedInterfaces {
		if iface != nil && iface.ProtocolBinding == a2a.TransportProtocolGRPC {
			return true
		}
	}
	return false
}
