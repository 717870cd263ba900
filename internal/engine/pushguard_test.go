package engine

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
)

// The dial-time half of the webhook guard: whatever a push URL resolves
// to when it is delivered, the connection itself is checked.
func TestPushClientRefusesABlockedAddressAtDialTime(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := &a2a.PushConfig{URL: srv.URL + "/hook"}
	ev := &a2a.TaskStatusUpdateEvent{TaskID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	err := postPush(ctx, newPushClient(5*time.Second, false), cfg, ev, "")
	if !errors.Is(err, errBlockedDial) || hits != 0 {
		t.Fatalf("guarded delivery to %s: %v (receiver hit %d times); want refused at dial time", srv.URL, err, hits)
	}
	if err := postPush(ctx, newPushClient(5*time.Second, true), cfg, ev, ""); err != nil || hits != 1 {
		t.Fatalf("open delivery (the server's own address): %v, hits %d; want delivered", err, hits)
	}
}

func TestBlockedAddressesAreOneList(t *testing.T) {
	for _, s := range []string{
		"127.0.0.1", "10.1.2.3", "169.254.169.254", "::1", "::127.0.0.1", "::169.254.169.254", "::ffff:127.0.0.1",
		"fec0::1", "255.255.255.255", "100.64.0.1", "198.18.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "0.1.2.3", "fe80::1",
	} {
		if !blockedIP(net.ParseIP(s)) {
			t.Errorf("%s is not blocked", s)
		}
		if err := guardControl("tcp", net.JoinHostPort(s, "80"), nil); !errors.Is(err, errBlockedDial) {
			t.Errorf("dial %s: %v; want refused", s, err)
		}
	}
	for _, s := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"} {
		if blockedIP(net.ParseIP(s)) || guardControl("tcp", net.JoinHostPort(s, "443"), nil) != nil {
			t.Errorf("%s is blocked; it is a public address", s)
		}
	}
}

// A delivery made while tracing carries its span's traceparent, so the
// receiver joins the trace; without tracing it carries none.
func TestPushDeliveryCarriesTheTraceparent(t *testing.T) {
	got := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("traceparent") }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := &a2a.PushConfig{URL: srv.URL + "/hook"}
	ev := &a2a.TaskStatusUpdateEvent{TaskID: "t1", Status: a2a.TaskStatus{State: a2a.TaskStateWorking}}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if err := postPush(ctx, newPushClient(5*time.Second, true), cfg, ev, tp); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != tp {
		t.Errorf("traceparent at the receiver = %q, want %q", h, tp)
	}
	if err := postPush(ctx, newPushClient(5*time.Second, true), cfg, ev, ""); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h != "" {
		t.Errorf("traceparent without tracing = %q, want none", h)
	}
}
