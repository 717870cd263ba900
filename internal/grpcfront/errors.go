package grpcfront

import (
	"context"
	"errors"
	"log/slog"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/askpoint/askpoint/internal/engine"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// codeOf is the specification's table of A2A errors to gRPC status codes
// (section 5.4), with the JSON-RPC standard errors as Google's API design
// maps them. a2a-go's own mapping differs for three of them
// (UnsupportedOperation, PushNotificationNotSupported and
// VersionNotSupported, which it sends as FAILED_PRECONDITION); the
// specification's codes are sent, and askpoint's clients read both
// (grpcdial.DialOptions).
var codeOf = []struct {
	err  error
	code codes.Code
}{
	{a2a.ErrTaskNotFound, codes.NotFound},
	{a2a.ErrTaskNotCancelable, codes.FailedPrecondition},
	{a2a.ErrPushNotificationNotSupported, codes.Unimplemented},
	{a2a.ErrUnsupportedOperation, codes.Unimplemented},
	{a2a.ErrUnsupportedContentType, codes.InvalidArgument},
	{a2a.ErrInvalidAgentResponse, codes.Internal},
	{a2a.ErrExtendedCardNotConfigured, codes.FailedPrecondition},
	{a2a.ErrExtensionSupportRequired, codes.FailedPrecondition},
	{a2a.ErrVersionNotSupported, codes.Unimplemented},
	{a2a.ErrInvalidParams, codes.InvalidArgument},
	{a2a.ErrInvalidRequest, codes.InvalidArgument},
	{a2a.ErrParseError, codes.InvalidArgument},
	{a2a.ErrMethodNotFound, codes.Unimplemented},
	{a2a.ErrUnauthenticated, codes.Unauthenticated},
	{a2a.ErrUnauthorized, codes.PermissionDenied},
	{a2a.ErrInternalError, codes.Internal},
}

// toStatus turns a handler's error into the gRPC status the caller gets:
// the table's code, the error's own message and a google.rpc.ErrorInfo
// with the A2A reason and domain. An error that is already a status goes
// out as it is. The store unavailable for a moment (engine.IsUnavailable)
// is UNAVAILABLE, which gRPC clients know to send again. An A2A error is
// the engine's, which logged what it had to (once, with the cause); one
// that is no A2A error is an internal failure, logged here with its cause
// and answered without it.
func toStatus(log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "the call was canceled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "the call's deadline passed")
	}
	if engine.IsUnavailable(err) {
		return withInfo(codes.Unavailable, err.Error(), a2a.ErrInternalError)
	}
	for _, m := range codeOf {
		if errors.Is(err, m.err) {
			return withInfo(m.code, err.Error(), m.err)
		}
	}
	if log != nil {
		log.Error("gRPC call failed", slog.Any("err", err))
	}
	return withInfo(codes.Internal, "internal error: the server could not complete the call", a2a.ErrInternalError)
}

// withInfo is a status with code and msg and the ErrorInfo of sentinel.
func withInfo(code codes.Code, msg string, sentinel error) error {
	st := status.New(code, msg)
	d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: a2a.ErrorReason(sentinel), Domain: a2a.ProtocolDomain})
	if err != nil {
		return st.Err()
	}
	return d.Err()
}
