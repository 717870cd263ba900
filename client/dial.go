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
)

// Dial fetches the agent card at agentURL (the agent's base URL, whose card
// is at agentURL/.well-known/agent-card.json, or the card's own URL ending
// in .json) and returns an a2a-go client for it. hc carries every request,
// the card's and the agent's (nil: a plain http.Client; give streams no
// overall timeout). preferred, when given, picks the transports to use in
// order (a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON).
func Dial(ctx context.Context, agentURL string, hc *http.Client, preferred ...a2a.TransportProtocol) (*a2aclient.Client, error) {
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
	opts := []a2aclient.FactoryOption{a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc)}
	if len(preferred) > 0 {
		opts = append(opts, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: preferred}))
	}
	c, err := a2aclient.NewFromCard(ctx, card, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: connect to %s (%s): %w", card.Name, agentURL, err)
	}
	return c, nil
}
