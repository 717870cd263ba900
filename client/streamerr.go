package client

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// StreamErrors wraps base (nil: http.DefaultTransport) so that a streaming
// call refused before its stream starts reaches the a2a-go client as the
// typed error it is. The A2A JSON-RPC binding answers such a call with a
// plain JSON-RPC error response; the a2a-go v2.4.0 client reads a
// streaming call's body only as server-sent events, so without this it
// reports just "unexpected HTTP status" (or, with status 200, an empty
// stream). The wrapper re-frames that one response as a single event.
func StreamErrors(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return streamErrors{base}
}

type streamErrors struct{ base http.RoundTripper }

func (s streamErrors) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err != nil || !strings.Contains(req.Header.Get("Accept"), "text/event-stream") ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(body, []byte(`"jsonrpc"`)) || !bytes.Contains(body, []byte(`"error"`)) {
		// Not a JSON-RPC error (an HTTP+JSON reply, say): pass it on.
		resp.Body = io.NopCloser(bytes.NewReader(body))
		return resp, nil
	}
	framed := append(append([]byte("data: "), bytes.TrimSpace(body)...), '\n', '\n')
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Header.Del("Content-Length")
	resp.ContentLength = int64(len(framed))
	resp.Body = io.NopCloser(bytes.NewReader(framed))
	return resp, nil
}
