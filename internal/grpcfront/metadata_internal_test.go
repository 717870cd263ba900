package grpcfront

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/metadata"
)

// params is what a2asrv.ServiceParams holds, as a map.
func params(p *a2asrv.ServiceParams) map[string][]string {
	out := map[string][]string{}
	for k, v := range p.List() {
		out[k] = v
	}
	return out
}

// The call context's service parameters are the call's metadata as
// a2agrpc makes them (NewServiceParams over FromIncomingContext's copy), for
// grpc-go's metadata, for metadata an interceptor put in its place with
// keys not in lower case, and for none; reading it copies nothing, and
// nothing the call does to its parameters reaches the metadata. Without the
// key learnt from FromIncomingContext (a grpc-go that looks it up another
// way), every call would copy the metadata again.
func TestServiceParamsAreTheCallsMetadataReadWithoutACopy(t *testing.T) {
	if incomingKey == nil {
		t.Fatal("the incoming metadata's context key was not learnt: incoming copies the metadata on every call")
	}
	grpcs := metadata.MD{":authority": {"127.0.0.1:1"}, "a2a-version": {"1.0"}, "user-agent": {"grpc-go/1.83.2"}, "x-two": {"a", "b"}}
	replaced := metadata.MD{"A2A-Version": {"1.0.1"}, "X-Mixed": {"c"}}
	base := metadata.NewIncomingContext(t.Context(), grpcs)
	for name, ctx := range map[string]context.Context{
		"grpc-go's":             context.WithValue(base, struct{}{}, 1),
		"an interceptor's":      metadata.NewIncomingContext(base, replaced),
		"none":                  t.Context(),
		"grpc-go's, under ours": &clockCtx{Context: base},
	} {
		var want map[string][]string
		if md, ok := metadata.FromIncomingContext(ctx); ok {
			want = params(a2asrv.NewServiceParams(md))
		} else {
			want = map[string][]string{}
		}
		_, cc := withCallContext(ctx)
		got := params(cc.ServiceParams())
		if !maps.EqualFunc(got, want, slices.Equal) {
			t.Errorf("%s metadata: service parameters %v, want %v", name, got, want)
		}
		if n := testing.AllocsPerRun(10, func() { incoming(ctx) }); n != 0 {
			t.Errorf("%s metadata: reading it made %v allocations, want 0", name, n)
		}
	}
	// The parameters are a copy: the metadata is not theirs to change.
	_, cc := withCallContext(base)
	if v, _ := cc.ServiceParams().Get("x-two"); len(v) == 2 {
		v[0] = "changed"
	}
	if grpcs["x-two"][0] != "a" {
		t.Errorf("changing the service parameters changed the call's metadata: %v", grpcs)
	}

	// first reads one value as ValueFromIncomingContext does.
	for _, c := range []struct {
		ctx       context.Context
		key, want string
	}{
		{base, "a2a-version", "1.0"},
		{base, "x-two", "a"},
		{base, "authorization", ""},
		{metadata.NewIncomingContext(base, replaced), "a2a-version", "1.0.1"},
		{metadata.NewIncomingContext(base, replaced), "x-mixed", "c"},
		{t.Context(), "a2a-version", ""},
	} {
		if got := first(c.ctx, c.key); got != c.want {
			t.Errorf("first(%s) = %q, want %q", c.key, got, c.want)
		}
		if v := metadata.ValueFromIncomingContext(c.ctx, c.key); (len(v) > 0 && v[0] != c.want) || (len(v) == 0 && c.want != "") {
			t.Errorf("ValueFromIncomingContext(%s) = %q, which first should match; want %q", c.key, v, c.want)
		}
	}
}
