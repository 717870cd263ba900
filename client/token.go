package client

import (
	"context"
	"net"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2aclient"
)

// bearerToken sends an Authorization service parameter (a header on the
// HTTP bindings, metadata on gRPC) with every call to an interface on the
// host the agent was dialled at, and to no other: a card may name
// interfaces anywhere, and a token is for the origin it was given for.
type bearerToken struct {
	token string
	host  string // host:port of the URL dialled, the port written out
}

func (b bearerToken) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	if hostPort(req.BaseURL) == b.host {
		req.ServiceParams["Authorization"] = []string{"Bearer " + b.token}
	}
	return ctx, nil, nil
}

// hostPort is the host:port an interface URL names, lower case, the
// scheme's default port written out; a gRPC URL may be host:port alone.
func hostPort(raw string) string {
	if !strings.Contains(raw, "://") {
		return strings.ToLower(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(net.JoinHostPort(host, port))
}

func (bearerToken) After(context.Context, *a2aclient.Response) error { return nil }

// BearerToken is a call interceptor that sends token as the caller's bearer
// token (a header on the HTTP bindings, metadata on gRPC), only to
// interfaces on the host of agentURL.
func BearerToken(token, agentURL string) a2aclient.CallInterceptor {
	return bearerToken{token: token, host: hostPort(agentURL)}
}
