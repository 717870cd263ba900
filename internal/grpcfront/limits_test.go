package grpcfront_test

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/internal/apitest"
	"github.com/askpoint/askpoint/store"
)

// h2 is a raw HTTP/2 connection to the server's port, as a gRPC client
// opens it, to see what the server does with connections and streams
// before any call is authenticated.
type h2 struct {
	t  *testing.T
	c  net.Conn
	fr *http2.Framer
}

func dialH2(t *testing.T, env *apitest.Env) *h2 {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(env.URL, "http://"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return &h2{t: t, c: c, fr: fr}
}

// openCall sends the headers of a call of method on stream id, and no
// request message.
func (h *h2) openCall(id uint32, method string) {
	h.t.Helper()
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/lf.a2a.v1.A2AService/" + method},
		{":authority", "askpoint"}, {"content-type", "application/grpc"}, {"te", "trailers"}, {"a2a-version", "1.0"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: buf.Bytes(), EndHeaders: true}); err != nil {
		h.t.Fatal(err)
	}
}

// until reads frames, answering the server's settings and pings, until
// match says stop; it fails the test when limit passes first or the
// connection ends.
func (h *h2) until(limit time.Duration, what string, match func(http2.Frame) bool) {
	h.t.Helper()
	_ = h.c.SetReadDeadline(time.Now().Add(limit))
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.t.Fatalf("waiting for %s: %v", what, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = h.fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				_ = h.fr.WritePing(true, f.Data)
			}
		}
		if match(f) {
			return
		}
	}
}

func limitedEnv(t *testing.T, c func(*askpoint.Config)) *apitest.Env {
	return apitest.Start(t, apitest.Options{Quiet: true, Config: c})
}

// A connection says, before any call is authenticated, how many calls it
// may have open at once: Config.MaxStreamsPerConnection.
func TestAConnectionTakesAtMostMaxStreamsPerConnectionCalls(t *testing.T) {
	env := limitedEnv(t, func(c *askpoint.Config) { c.MaxStreamsPerConnection = 7 })
	h := dialH2(t, env)
	var max uint32
	h.until(5*time.Second, "the server's settings", func(f http2.Frame) bool {
		s, ok := f.(*http2.SettingsFrame)
		if !ok || s.IsAck() {
			return false
		}
		max, _ = s.Value(http2.SettingMaxConcurrentStreams)
		return true
	})
	if max != 7 {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS = %d, want 7 (Config.MaxStreamsPerConnection)", max)
	}
	// An eighth call opened at once is refused by the server, not held.
	for i := range 8 {
		h.openCall(uint32(2*i+1), "GetTask")
	}
	h.until(5*time.Second, "the eighth call's refusal", func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.StreamID == 15 && r.ErrCode == http2.ErrCodeRefusedStream
	})
}

// A call opened and left silent (headers, no request message) is ended
// once Config.BodyTimeout passes, as HTTP cuts a body that does not come:
// a connection cannot hold calls open for free.
func TestACallWhoseRequestDoesNotArriveEndsAtTheBodyTimeout(t *testing.T) {
	env := limitedEnv(t, func(c *askpoint.Config) { c.BodyTimeout = 300 * time.Millisecond })
	h := dialH2(t, env)
	h.openCall(1, "GetTask")
	start := time.Now()
	var code string
	h.until(10*time.Second, "the silent call's end", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			return f.StreamID == 1
		case *http2.HeadersFrame:
			if f.StreamID != 1 {
				return false
			}
			fields, _ := hpack.NewDecoder(4096, nil).DecodeFull(f.HeaderBlockFragment())
			for _, hf := range fields {
				if hf.Name == "grpc-status" {
					code = hf.Value
				}
			}
			return code != ""
		}
		return false
	})
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("the call ended after %s, before the body timeout (300ms)", d)
	}
	if code == "0" {
		t.Errorf("the silent call ended OK, want an error status")
	}
}

// A connection with no call under way is closed after Config.IdleTimeout,
// so that idle gRPC connections do not hold Config.MaxConnections slots.
func TestAnIdleGRPCConnectionIsClosedAfterTheIdleTimeout(t *testing.T) {
	env := limitedEnv(t, func(c *askpoint.Config) { c.IdleTimeout = 300 * time.Millisecond })
	h := dialH2(t, env)
	h.until(10*time.Second, "the idle connection's GOAWAY", func(f http2.Frame) bool {
		_, ok := f.(*http2.GoAwayFrame)
		return ok
	})
}

// Identifiers on the gRPC binding meet the HTTP bindings' rules: a control
// character or more than Config.MaxIDBytes bytes is refused, naming the
// field, before anything is stored.
func TestGRPCRefusesIdentifiersTheHTTPBindingsRefuse(t *testing.T) {
	env := limitedEnv(t, nil)
	c := raw(t, env)
	ctx := v1(t.Context())
	for _, tc := range []struct {
		name, says string
		call       func() error
	}{
		{"a NUL in a task ID", "control character", func() error {
			_, err := c.GetTask(ctx, &a2apb.GetTaskRequest{Tenant: "script", Id: "t\x00x"})
			return err
		}},
		{"an ESC in a message ID", "messageId", func() error {
			_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m\x1b[31m", "hello")})
			return err
		}},
		{"a context ID of 300 KB", "bytes long", func() error {
			m := text("m-ctx", "hello")
			m.ContextId = strings.Repeat("c", 300<<10)
			_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: m})
			return err
		}},
		{"a NUL in a reference task ID", "referenceTaskIds[0]", func() error {
			m := text("m-ref", "hello")
			m.ReferenceTaskIds = []string{"a\x00b"}
			_, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: m})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, tc.name, tc.call(), codes.InvalidArgument, "INVALID_PARAMS", tc.says)
		})
	}
	if n := countTasks(t, env); n != 0 {
		t.Errorf("%d tasks stored after the refusals, want none", n)
	}
}

func countTasks(t *testing.T, env *apitest.Env) int {
	t.Helper()
	tasks := map[string]bool{}
	err := env.Store.ScanLogs(t.Context(), nil, func(taskID, _ string, _ store.LogEntry) error { tasks[taskID] = true; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// A request compressed with gzip (grpc-go's gzip codec is in the askpoint
// binary, linked by the OTLP exporter, so the server offers it) is held to
// Config.MaxRequestBytes as it is once decompressed, not as it travels: a
// few hundred bytes that inflate past the limit are refused before
// anything is stored, and one that inflates within it is served.
func TestACompressedRequestIsHeldToMaxRequestBytesOnceDecompressed(t *testing.T) {
	env := limitedEnv(t, func(c *askpoint.Config) { c.MaxRequestBytes = 4096 })
	c := raw(t, env)
	ctx := v1(t.Context())
	zip := grpc.UseCompressor(gzip.Name)
	big := &a2apb.SendMessageRequest{Tenant: "script", Message: text("m-zip-big", strings.Repeat("x", 64<<10))}
	if n := proto.Size(big); n <= 4096 {
		t.Fatalf("the big request is %d bytes, not over the limit", n)
	}
	_, err := c.SendMessage(ctx, big, zip)
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("SendMessage of 64 KiB compressed = %v, want RESOURCE_EXHAUSTED", err)
	}
	if n := countTasks(t, env); n != 0 {
		t.Errorf("%d tasks stored after the refusal, want none", n)
	}
	res, err := c.SendMessage(ctx, &a2apb.SendMessageRequest{Tenant: "script", Message: text("m-zip-small", "complete")}, zip)
	if err != nil || res.GetTask().GetId() == "" {
		t.Fatalf("SendMessage of a small compressed request = %v, %v; want a task", res, err)
	}
	if n := countTasks(t, env); n != 1 {
		t.Errorf("%d tasks stored after the small request, want 1", n)
	}
}
