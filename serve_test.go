package askpoint_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/askpoint/askpoint"
	"github.com/askpoint/askpoint/client"
	"github.com/askpoint/askpoint/client/grpcdial"
	"github.com/askpoint/askpoint/store/sqlite"
)

const testToken = "alice-token-0123456789"

// newServer is a server of the greeter on a SQLite file of the test's,
// taking testToken (alice's) when tokens is set.
func newServer(t *testing.T, tokens bool, adjust ...func(*askpoint.Config)) *askpoint.Server {
	t.Helper()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "askpoint.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := askpoint.Config{Store: st, Logger: slog.New(slog.DiscardHandler)}
	if tokens {
		cfg.Tokens = map[string]string{testToken: "alice"}
	}
	for _, a := range adjust {
		a(&cfg)
	}
	srv, err := askpoint.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(askpoint.AgentSpec{Name: "greeter", Agent: greeter(),
		Card: a2a.AgentCard{Name: "Greeter", Description: "Asks your name, then greets you."}}); err != nil {
		t.Fatal(err)
	}
	return srv
}

// serve runs srv.Serve on 127.0.0.1 until the test ends, and returns its
// base URL.
func serve(t *testing.T, srv *askpoint.Server) string {
	t.Helper()
	base, stop := startServe(t, srv)
	t.Cleanup(func() {
		if err := <-stop(); err != nil {
			t.Errorf("Serve = %v after its context ended, want nil", err)
		}
	})
	return base
}

// startServe runs srv.Serve on 127.0.0.1 and returns its base URL and a
// stop that ends Serve's context and gives what Serve returns.
func startServe(t *testing.T, srv *askpoint.Server) (base string, stop func() <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	return "http://" + ln.Addr().String(), func() <-chan error { cancel(); return served }
}

// grpcClient is a plain gRPC client of the generated stubs on addr.
func grpcClient(t *testing.T, addr string) a2apb.A2AServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return a2apb.NewA2AServiceClient(conn)
}

// callEveryMethod calls each method of the gRPC binding once, with a
// request that is valid but for what the caller sends in ctx, and returns
// each call's error.
func callEveryMethod(ctx context.Context, c a2apb.A2AServiceClient) map[string]error {
	msg := &a2apb.Message{MessageId: "m-1", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "hello"}}}}
	first := func(s interface {
		Recv() (*a2apb.StreamResponse, error)
	}, err error) error {
		if err != nil {
			return err
		}
		_, err = s.Recv()
		return err
	}
	errs := map[string]error{}
	_, errs["SendMessage"] = c.SendMessage(ctx, &a2apb.SendMessageRequest{Message: msg})
	s, err := c.SendStreamingMessage(ctx, &a2apb.SendMessageRequest{Message: msg})
	errs["SendStreamingMessage"] = first(s, err)
	_, errs["GetTask"] = c.GetTask(ctx, &a2apb.GetTaskRequest{Id: "t-1"})
	_, errs["ListTasks"] = c.ListTasks(ctx, &a2apb.ListTasksRequest{})
	_, errs["CancelTask"] = c.CancelTask(ctx, &a2apb.CancelTaskRequest{Id: "t-1"})
	sub, err := c.SubscribeToTask(ctx, &a2apb.SubscribeToTaskRequest{Id: "t-1"})
	errs["SubscribeToTask"] = first(sub, err)
	_, errs["CreateTaskPushNotificationConfig"] = c.CreateTaskPushNotificationConfig(ctx, &a2apb.TaskPushNotificationConfig{TaskId: "t-1", Id: "p-1", Url: "https://example.com/hook"})
	_, errs["GetTaskPushNotificationConfig"] = c.GetTaskPushNotificationConfig(ctx, &a2apb.GetTaskPushNotificationConfigRequest{TaskId: "t-1", Id: "p-1"})
	_, errs["ListTaskPushNotificationConfigs"] = c.ListTaskPushNotificationConfigs(ctx, &a2apb.ListTaskPushNotificationConfigsRequest{TaskId: "t-1"})
	_, errs["DeleteTaskPushNotificationConfig"] = c.DeleteTaskPushNotificationConfig(ctx, &a2apb.DeleteTaskPushNotificationConfigRequest{TaskId: "t-1", Id: "p-1"})
	_, errs["GetExtendedAgentCard"] = c.GetExtendedAgentCard(ctx, &a2apb.GetExtendedAgentCardRequest{})
	return errs
}

func v1(ctx context.Context, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, append([]string{"a2a-version", "1.0"}, kv...)...)
}

// wantUnauthenticated fails the test for every method whose call did not
// fail as Unauthenticated.
func wantUnauthenticated(t *testing.T, who string, errs map[string]error) {
	t.Helper()
	if len(errs) != 11 {
		t.Fatalf("%d methods called, want the binding's 11", len(errs))
	}
	for method, err := range errs {
		if status.Code(err) != codes.Unauthenticated {
			t.Errorf("%s: %s = %v, want Unauthenticated", who, method, err)
		}
	}
}

// With tokens configured, the gRPC server a library user gets from askpoint
// refuses every method to a caller without a valid token, and serves a
// caller with one.
func TestGRPCFromTheServerRefusesCallsWithoutAValidToken(t *testing.T) {
	srv := newServer(t, true)
	gs, err := srv.GRPC()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(func() {
		srv.EndStreams()
		gs.GracefulStop()
		_ = srv.Stop(context.Background())
	})
	c := grpcClient(t, ln.Addr().String())
	ctx := t.Context()

	wantUnauthenticated(t, "no token", callEveryMethod(v1(ctx), c))
	wantUnauthenticated(t, "a wrong token", callEveryMethod(v1(ctx, "authorization", "Bearer not-a-token-of-this-server"), c))
	for method, err := range callEveryMethod(v1(ctx, "authorization", "Bearer "+testToken), c) {
		if status.Code(err) == codes.Unauthenticated {
			t.Errorf("with alice's token: %s = %v, want it past authentication", method, err)
		}
	}
}

// The request handler mounted by hand on a2a-go's own transports (gRPC and
// JSON-RPC), with none of askpoint's fronts in front, authenticates too: a
// server with tokens refuses a tokenless call whatever transport carries it.
func TestRequestHandlerMountedByHandRefusesCallsWithoutAValidToken(t *testing.T) {
	srv := newServer(t, true)
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	h, ok := srv.RequestHandler("greeter")
	if !ok {
		t.Fatal("no request handler for the greeter")
	}

	gs := grpc.NewServer()
	a2agrpc.NewHandler(h).RegisterWith(gs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	c := grpcClient(t, ln.Addr().String())
	wantUnauthenticated(t, "gRPC, no token", callEveryMethod(t.Context(), c))
	if _, err := c.GetTask(metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+testToken), &a2apb.GetTaskRequest{Id: "t-1"}); status.Code(err) != codes.NotFound {
		t.Errorf("gRPC GetTask with alice's token = %v, want NotFound (authenticated, no such task)", err)
	}

	hs := httptest.NewServer(a2asrv.NewJSONRPCHandler(h))
	t.Cleanup(hs.Close)
	post := func(auth string) string {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL,
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"t-1"}}`))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := post(""); !strings.Contains(got, "bearer token") {
		t.Errorf("JSON-RPC GetTask without a token = %s, want an error saying a bearer token is required", got)
	}
	if got := post("Bearer " + testToken); !strings.Contains(got, "-32001") {
		t.Errorf("JSON-RPC GetTask with alice's token = %s, want TaskNotFound (-32001)", got)
	}
}

// One call serves the three bindings on one port, behind one set of
// tokens: a caller with a token completes the worked round trip on each, a
// caller without one is refused on each.
func TestServeServesEveryBindingOnOnePortWithTheSameTokens(t *testing.T) {
	srv := newServer(t, true)
	base := serve(t, srv)
	for _, binding := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON, a2a.TransportProtocolGRPC} {
		t.Run(string(binding), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			for _, token := range []string{"", testToken} {
				c, err := grpcdial.Dial(ctx, base+"/greeter", client.DialOptions{Token: token, Preferred: []a2a.TransportProtocol{binding}})
				if err != nil {
					t.Fatalf("dial %s: %v", binding, err)
				}
				res, err := client.Run(ctx, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello")),
					client.WithResolvers(client.Facts(map[string]any{"name": "Ada"})))
				_ = c.Destroy()
				switch {
				case token == "" && !errors.Is(err, a2a.ErrUnauthenticated) && !strings.Contains(strings.ToLower(errText(err)), "unauthenticated") && !strings.Contains(errText(err), "bearer token"):
					t.Errorf("no token: Run = %v, want it refused as unauthenticated", err)
				case token != "" && err != nil:
					t.Errorf("with a token: Run = %v", err)
				case token != "" && res.Task.Status.State != a2a.TaskStateCompleted:
					t.Errorf("with a token: state %s, want completed", res.Task.Status.State)
				}
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A page of one's own is served beside the agents on Serve's port, may not
// take an agent's path, and a request it holds open ends when Serve stops,
// so that the stop does not wait for it.
func TestHandleServesAPageBesideTheAgentsAndEndsItsRequestsAtShutdown(t *testing.T) {
	srv := newServer(t, false, func(c *askpoint.Config) { c.ShutdownTimeout = time.Minute })
	if err := srv.Handle("/greeter/extra", http.NotFoundHandler()); err == nil {
		t.Error("Handle on the greeter's path was taken, want it refused")
	}
	if err := srv.Handle("/.well-known/other", http.NotFoundHandler()); err == nil {
		t.Error("Handle under /.well-known/ was taken, want it refused")
	}
	held := make(chan struct{})
	ended := make(chan error, 1)
	if err := srv.Handle("GET /live/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		close(held)
		<-r.Context().Done() // a live page's stream
		ended <- r.Context().Err()
	})); err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(askpoint.AgentSpec{Name: "live", Agent: greeter(), Card: a2a.AgentCard{Name: "Live", Description: "Taken."}}); err == nil {
		t.Error("an agent named live was registered over Handle(\"GET /live/\"), want it refused")
	}
	base, stop := startServe(t, srv)
	resp, err := http.Get(base + "/live/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-held
	select {
	case err := <-stop():
		if err != nil {
			t.Errorf("Serve = %v, want nil: the page's request ended with the shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return within 30s of its context's end: the page's open request held the shutdown")
	}
	if err := <-ended; err == nil {
		t.Error("the page's request context did not end")
	}
}
