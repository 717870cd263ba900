package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// refuseRedirects is every push client's CheckRedirect: a delivery is never
// sent on to where a receiver points (issue 23, finding 10). Following a
// redirect re-POSTs the notification, and its token and credentials, to a
// URL nobody configured; the SDK's sender strips the token only when a hop
// changes host, so A -> B -> B handed B the token. The receiver's 3xx comes
// back as the answer, which is not a success, and the delivery is retried
// and given up on like any other failure.
func refuseRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// postPush sends ev to cfg's URL as the A2A push binding says: a
// StreamResponse body, the token in A2A-Notification-Token, the
// credentials in Authorization. Its errors never hold the URL's query
// string or fragment (issue 23, finding 9): the log's url field is
// redacted, and so must be the error text beside it.
func postPush(ctx context.Context, hc *http.Client, cfg *a2a.PushConfig, ev a2a.Event, traceparent string) error {
	body, err := json.Marshal(a2a.StreamResponse{Event: ev})
	if err != nil {
		return fmt.Errorf("encode the notification: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("build the request to %s: %w", redactURL(cfg.URL), redactErr(err))
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	if cfg.Token != "" {
		req.Header.Set("A2A-Notification-Token", cfg.Token)
	}
	if cfg.Auth != nil && cfg.Auth.Credentials != "" {
		switch strings.ToLower(cfg.Auth.Scheme) {
		case "bearer":
			req.Header.Set("Authorization", "Bearer "+cfg.Auth.Credentials)
		case "basic":
			req.Header.Set("Authorization", "Basic "+cfg.Auth.Credentials)
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("send the notification: %w", redactErr(err))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return fmt.Errorf("the receiver answered %s; redirects are not followed", resp.Status)
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}

// redactErr replaces the URL in a *url.Error with its redacted form.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		c := *ue
		c.URL = redactURL(ue.URL)
		return &c
	}
	return err
}
