// Package grpcdial dials A2A agents over gRPC as well as over HTTP: it adds
// the gRPC binding to what package client dials, for the callers that want
// it. Package client itself speaks JSON-RPC and HTTP+JSON only, so that a
// caller that does not use gRPC does not link it.
//
//	c, err := grpcdial.Dial(ctx, agentURL, client.DialOptions{Token: token})
//	res, err := client.Run(ctx, c, msg, client.WithResolvers(...))
//
// Transport is the binding on its own, for a client built from a card with
// a2aclient.NewFromCard; DialOptions make any a2a-go gRPC client read the
// statuses A2A servers send.
package grpcdial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/askpoint/askpoint/client"
)

// Dial is [client.DialWith] with the gRPC binding too: it fetches the agent
// card at agentURL and returns an a2a-go client over whichever of the
// card's bindings comes first (JSON-RPC, HTTP+JSON or gRPC), or the first
// of o.Preferred the card offers. The gRPC connection uses TLS when
// agentURL is https and plain text otherwise, and carries o.Token as
// metadata; extra dial options come last.
func Dial(ctx context.Context, agentURL string, o client.DialOptions, extra ...grpc.DialOption) (*a2aclient.Client, error) {
	u, err := url.Parse(agentURL)
	secure := err == nil && u.Scheme == "https"
	o.Transports = append(slices.Clip(o.Transports), Transport(secure, extra...))
	return client.DialWith(ctx, agentURL, o)
}

// Transport is the a2a-go client option for the gRPC binding: a2a-go's
// own gRPC transport (a2agrpc) over a connection to the interface's URL
// (a gRPC target, host:port), with TLS when secure (use it when the card
// came over https) and in plain text otherwise, and with [DialOptions]'
// reading of statuses. extra dial options come last.
func Transport(secure bool, extra ...grpc.DialOption) a2aclient.FactoryOption {
	creds := insecure.NewCredentials()
	if secure {
		creds = credentials.NewTLS(nil)
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, DialOptions()...)
	return a2agrpc.WithGRPCTransport(append(opts, extra...)...)
}

// DialOptions make an a2a-go gRPC client read what A2A servers send:
//
//   - The specification sends UnsupportedOperation, PushNotificationNotSupported
//     and VersionNotSupported as UNIMPLEMENTED; a2a-go v2.4.0's client knows
//     them only as FAILED_PRECONDITION and would report an internal error.
//     Each is handed to it with the code it knows, so errors.Is finds the
//     A2A error.
//   - A status that carries no A2A ErrorInfo did not come from the agent
//     (the connection dropped, the server is stopping): it reaches the
//     caller as a plain error, not as an A2A error, so that a caller
//     retries it as it retries a dropped HTTP connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return readStatus(invoker(ctx, method, req, reply, cc, opts...))
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			cs, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, readStatus(err)
			}
			return statusStream{cs}, nil
		}),
	}
}

type statusStream struct{ grpc.ClientStream }

func (s statusStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil || errors.Is(err, io.EOF) {
		return err
	}
	return readStatus(err)
}

// a2aGoCode is the code a2a-go's client maps an ErrorInfo reason from,
// where it differs from the specification's.
var a2aGoCode = map[string]codes.Code{
	a2a.ErrorReason(a2a.ErrUnsupportedOperation):         codes.FailedPrecondition,
	a2a.ErrorReason(a2a.ErrPushNotificationNotSupported): codes.FailedPrecondition,
	a2a.ErrorReason(a2a.ErrVersionNotSupported):          codes.FailedPrecondition,
	a2a.ErrorReason(a2a.ErrInvalidRequest):               codes.InvalidArgument,
}

func readStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	var info *errdetails.ErrorInfo
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == a2a.ProtocolDomain {
			info = ei
			break
		}
	}
	if info == nil {
		switch st.Code() {
		case codes.Canceled:
			return fmt.Errorf("grpc: %s: %w", st.Message(), context.Canceled)
		case codes.DeadlineExceeded:
			return fmt.Errorf("grpc: %s: %w", st.Message(), context.DeadlineExceeded)
		}
		return &transportError{code: st.Code(), msg: st.Message()}
	}
	if c, ok := a2aGoCode[info.GetReason()]; ok && c != st.Code() {
		p := st.Proto()
		p.Code = int32(c)
		return status.FromProto(p).Err()
	}
	return err
}

// transportError is a gRPC failure that is not the agent's answer. It
// deliberately has no GRPCStatus method: a2a-go passes it on as it is.
type transportError struct {
	code codes.Code
	msg  string
}

func (e *transportError) Error() string { return fmt.Sprintf("grpc %s: %s", e.code, e.msg) }
