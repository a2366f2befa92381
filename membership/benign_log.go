package membership

import (
	"context"
	"log/slog"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// endpointLost is what protoactor's endpoint writer logs, at ERROR, when
// the stream to a peer ends with an error.
const endpointLost = "EndpointWriter lost connection"

// benignEnds demotes to DEBUG the endpoint writer's "lost connection" when
// the connection was closed in order: by this member (gRPC code Canceled:
// the endpoint was stopped because the peer left, or this member is
// stopping), or by the peer's graceful stop (Unavailable after the peer's
// GOAWAY with NO_ERROR). Every orderly leave, a rolling restart's
// included, logged an ERROR per peer on each side. A peer that dies or
// cannot be reached sends no GOAWAY, and that stays an ERROR.
type benignEnds struct{ slog.Handler }

func (b benignEnds) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && r.Message == endpointLost && orderlyClose(r) {
		if !b.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return b.Handler.Handle(ctx, r)
}

func (b benignEnds) WithAttrs(as []slog.Attr) slog.Handler {
	return benignEnds{b.Handler.WithAttrs(as)}
}

func (b benignEnds) WithGroup(name string) slog.Handler {
	return benignEnds{b.Handler.WithGroup(name)}
}

// peerStopped is how gRPC words an Unavailable that follows the peer's
// GOAWAY without an error (its server's GracefulStop).
const peerStopped = "received prior goaway: code: NO_ERROR"

// orderlyClose reports whether r's error is an orderly close (above).
func orderlyClose(r slog.Record) bool {
	orderly := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "error" {
			return true
		}
		if err, ok := a.Value.Any().(error); ok {
			if st, ok := status.FromError(err); ok { // unwraps, too
				orderly = st.Code() == codes.Canceled ||
					st.Code() == codes.Unavailable && strings.Contains(st.Message(), peerStopped)
			}
		}
		return false
	})
	return orderly
}
