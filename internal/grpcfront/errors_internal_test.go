package grpcfront

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/askpoint/askpoint/internal/engine"
)

// The store unavailable for a moment is UNAVAILABLE, which gRPC clients
// send again; an A2A error is the engine's, logged by it (once), so the
// front logs only an error that is no A2A error.
func TestToStatusMapsUnavailableAndLogsOnlyWhatTheEngineDidNot(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	for _, c := range []struct {
		name   string
		err    error
		code   codes.Code
		logged bool
	}{
		{"the store unavailable", a2a.NewError(a2a.ErrInternalError, engine.UnavailableMessage), codes.Unavailable, false},
		{"an internal error the engine logged", a2a.NewError(a2a.ErrInternalError, "internal error: the server could not complete the request (the cause is in its log)"), codes.Internal, false},
		{"no A2A error", errors.New("boom"), codes.Internal, true},
	} {
		buf.Reset()
		if got := status.Code(toStatus(log, c.err)); got != c.code {
			t.Errorf("%s: %v, want %v", c.name, got, c.code)
		}
		if logged := strings.Contains(buf.String(), "gRPC call failed"); logged != c.logged {
			t.Errorf("%s: logged %v, want %v:\n%s", c.name, logged, c.logged, buf.String())
		}
	}
}
