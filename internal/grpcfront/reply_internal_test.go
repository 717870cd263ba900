package grpcfront

import (
	"runtime"
	"testing"
)

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
