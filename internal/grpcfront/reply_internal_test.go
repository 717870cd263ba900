package grpcfront

import (
	"maps"
	"runtime"
	"slices"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"google.golang.org/grpc/metadata"
)

// The call's service parameters hold the call's copy of its metadata
// instead of a second copy, and read as NewServiceParams's of the same
// metadata: every key, in any case, with its values. On a2a-go v2.4.0 the
// parameters are the one map the front relies on; a new SDK whose type is
// not fails the first check, and the front then makes them with
// NewServiceParams (the second check holds either way).
func TestServiceParamsReadAsTheSDKsOfTheSameMetadata(t *testing.T) {
	if !paramsHoldOneMap {
		t.Error("a2asrv.ServiceParams is no longer one map[string][]string named kv: the call's metadata is copied twice again (serviceParams falls back to NewServiceParams); see docs/decisions/0260")
	}
	md := metadata.Pairs("a2a-version", "1.0", "a2a-extensions", "https://a.example/x", "a2a-extensions", "https://a.example/y",
		"authorization", "Bearer t", "x-trace-bin", "\x00\x01")
	got, want := serviceParams(md.Copy()), a2asrv.NewServiceParams(md)
	for _, key := range []string{"a2a-version", "A2A-Extensions", "authorization", "x-trace-bin", "absent"} {
		g, gok := got.Get(key)
		w, wok := want.Get(key)
		if gok != wok || !slices.Equal(g, w) {
			t.Errorf("Get(%q) = %q, %v; NewServiceParams's %q, %v", key, g, gok, w, wok)
		}
	}
	if g, w := maps.Collect(got.List()), maps.Collect(want.List()); !maps.EqualFunc(g, w, slices.Equal) {
		t.Errorf("List() = %v; NewServiceParams's %v", g, w)
	}
	// With (the SDK's way of adding parameters) leaves the call's map as it was.
	kept := md.Copy()
	_ = serviceParams(kept).With(map[string][]string{"Added": {"v"}})
	if _, ok := kept["added"]; ok || len(kept) != len(md) {
		t.Errorf("With changed the call's metadata: %v", kept)
	}
}

// A reply's buffers are kept across garbage collections, which empty a
// sync.Pool, up to keptBytes each: a larger one is not kept past two.
func TestReplyBuffersOutliveAGarbageCollection(t *testing.T) {
	var p bufferPool
	b := p.Get(100)
	p.Put(b)
	runtime.GC()
	runtime.GC()
	if got := p.Get(10); got != b || len(*got) != 10 {
		t.Errorf("after a GC, Get gave %p (len %d), not the buffer put back (%p)", got, len(*got), b)
	}
	big := p.Get(keptBytes + 1)
	p.Put(big)
	runtime.GC()
	runtime.GC()
	if got := p.Get(keptBytes + 1); got == big {
		t.Error("a buffer larger than keptBytes was kept across garbage collections")
	}
	if got := p.Get(5000); len(*got) != 5000 {
		t.Errorf("Get(5000) gave %d bytes", len(*got))
	}
}
