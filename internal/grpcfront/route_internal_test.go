package grpcfront

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2apb/v1"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/metadata"

	"github.com/askpoint/askpoint/internal/api"
)

// named is a request handler that only has a name: a call's route is
// checked by which handler it finds.
type named struct {
	a2asrv.RequestHandler
	name string
}

// A call admitted on the context tap made carries its route in that
// context, without a context value of its own, and a context made from it
// finds the route; a context without one still gets it as a value, and a
// call without a route goes to the first agent.
func TestAdmitRoutesACallInItsOwnContext(t *testing.T) {
	f, err := New(api.Defaults(api.Config{}), []Agent{{Name: "one", Handler: named{name: "one"}}, {Name: "two", Handler: named{name: "two"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.srv.Stop) // its stream workers
	r := router{f}
	md := metadata.NewIncomingContext(t.Context(), metadata.MD{"a2a-version": {"1.0"}})
	send := func() *a2apb.SendMessageRequest {
		return &a2apb.SendMessageRequest{Tenant: "two", Message: &a2apb.Message{MessageId: "m", Role: a2apb.Role_ROLE_USER, Parts: []*a2apb.Part{{Content: &a2apb.Part_Text{Text: "x"}}}}}
	}

	call := &clockCtx{Context: md}
	ctx, err := f.admit(call, send())
	if err != nil {
		t.Fatal(err)
	}
	if ctx != context.Context(call) {
		t.Errorf("admit on tap's context returned a context of its own (%T)", ctx)
	}
	if got := r.h(context.WithValue(ctx, struct{}{}, 1)).(named).name; got != "two" {
		t.Errorf("a context made from the call's goes to %q, want two", got)
	}

	ctx, err = f.admit(md, send())
	if err != nil {
		t.Fatal(err)
	}
	if got := r.h(ctx).(named).name; got != "two" {
		t.Errorf("a call admitted on a plain context goes to %q, want two", got)
	}
	if got := r.h(&clockCtx{Context: md}).(named).name; got != "one" {
		t.Errorf("a call not routed goes to %q, want the first agent", got)
	}
}
