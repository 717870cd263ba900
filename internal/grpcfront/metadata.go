package grpcfront

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"
)

// A call's incoming metadata is read where grpc-go keeps it, not through
// metadata.FromIncomingContext, which copies the whole map (every key and
// every value) on each call: about 0.5 KB a call, which a2asrv's
// NewServiceParams then copies again. The map is the one the context holds
// (grpc-go's, or one an interceptor put there with NewIncomingContext),
// read and never written. See docs/decisions/0340.

// incomingKey is the context key metadata.FromIncomingContext looks the
// incoming metadata up with, learnt once by calling it on a context that
// notes the key it is asked for; nil if it asked for none.
var incomingKey = func() any {
	r := keyRecorder{Context: context.Background()}
	metadata.FromIncomingContext(&r)
	return r.key
}()

// keyRecorder is an empty context that notes the first key it is asked
// for.
type keyRecorder struct {
	context.Context
	key any
}

func (r *keyRecorder) Value(key any) any {
	if r.key == nil {
		r.key = key
	}
	return nil
}

// incoming is the call's incoming metadata as ctx holds it, not copied: not
// to be written. Its keys are as they were put there (grpc-go's are lower
// case). ok is false when ctx holds none. Where the learnt key finds no
// metadata.MD (none learnt, or a grpc-go that keeps something else under
// it) it is FromIncomingContext's copy.
func incoming(ctx context.Context) (metadata.MD, bool) {
	if incomingKey != nil {
		if md, ok := ctx.Value(incomingKey).(metadata.MD); ok {
			return md, true
		}
	}
	return metadata.FromIncomingContext(ctx)
}

// first is the call's first metadata value for key (lower case), matched
// without regard to case as metadata.ValueFromIncomingContext matches it,
// and read without copying.
func first(ctx context.Context, key string) string {
	md, ok := incoming(ctx)
	if !ok {
		return ""
	}
	v, ok := md[key]
	if !ok {
		for k, kv := range md {
			if strings.EqualFold(k, key) {
				v = kv
				break
			}
		}
	}
	if len(v) > 0 {
		return v[0]
	}
	return ""
}
