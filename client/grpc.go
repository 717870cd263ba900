package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// GRPCTransport is the a2a-go client option for the gRPC binding: a2a-go's
// own gRPC transport (a2agrpc) over a connection to the interface's URL
// (a gRPC target, host:port), with TLS when secure (use it when the card
// came over https) and in plain text otherwise, and with
// [GRPCDialOptions]' reading of statuses. extra dial options come last.
func GRPCTransport(secure bool, extra ...grpc.DialOption) a2aclient.FactoryOption {
	creds := insecure.NewCredentials()
	if secure {
		creds = credentials.NewTLS(nil)
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, GRPCDialOptions()...)
	return a2agrpc.WithGRPCTransport(append(opts, extra...)...)
}

// GRPCDialOptions make an a2a-go gRPC client read what A2A servers send:
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
func GRPCDialOptions() []grpc.DialOption {
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

// bearerToken sends an Authorization service parameter (a header on the
// HTTP bindings, metadata on gRPC) with every call to an interface on the
// host the agent was dialled at, and to no other: a card may name
// interfaces anywhere, and a token is for the origin it was given for.
type bearerToken struct {
	token string
	host  string // host:port of the URL dialled, the port written out
}

func (b bearerToken) Before(ctx context.Context, req *a2aclient.Request) (context.Context, any, error) {
	if hostPort(req.BaseURL) == b.host {
		req.ServiceParams["Authorization"] = []string{"Bearer " + b.token}
	}
	return ctx, nil, nil
}

// hostPort is the host:port an interface URL names, lower case, the
// scheme's default port written out; a gRPC URL may be host:port alone.
func hostPort(raw string) string {
	if !strings.Contains(raw, "://") {
		return strings.ToLower(raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return strings.ToLower(net.JoinHostPort(host, port))
}

func (bearerToken) After(context.Context, *a2aclient.Response) error { return nil }

// BearerToken is a call interceptor that sends token as the caller's bearer
// token (a header on the HTTP bindings, metadata on gRPC), only to
// interfaces on the host of agentURL.
func BearerToken(token, agentURL string) a2aclient.CallInterceptor {
	return bearerToken{token: token, host: hostPort(agentURL)}
}
