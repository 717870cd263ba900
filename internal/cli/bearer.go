package cli

import (
	"net/http"
	"net/url"
	"strings"
)

// bearerClient is the HTTP client for calls to the agent at agentURL: it
// sends the bearer token (none when "") to agentURL's origin only (issue
// 23, finding 2). The token is added per request in the transport, so Go's
// own stripping of Authorization on a cross-host redirect never applies:
// the transport decides by each request's own URL, which keeps the token
// from a redirect's target and from interface URLs an agent card names on
// another origin (scheme, host and port).
func bearerClient(agentURL, token string) *http.Client {
	if token == "" {
		return &http.Client{}
	}
	return &http.Client{Transport: bearer{token: token, origin: originOf(agentURL), next: http.DefaultTransport}}
}

// bearer adds an Authorization header to the requests for its origin.
type bearer struct {
	token  string
	origin string
	next   http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.origin == "" || originOf(r.URL.String()) != b.origin {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// originOf is rawURL's scheme://host:port, lower case, with the scheme's
// default port written out; "" when it is not an http(s) URL.
func originOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(u.Scheme + "://" + u.Hostname() + ":" + port)
}
