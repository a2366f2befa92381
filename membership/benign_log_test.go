package membership

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestBenignEndsDemotesOnlyOwnCloses(t *testing.T) {
	closing := status.Error(codes.Canceled, "grpc: the client connection is closing")
	cases := []struct {
		name    string
		min     slog.Level
		msg     string
		err     error
		want    string // the line's level, "" for no line
		wantMsg string
	}{
		{"own close, kept warnings", slog.LevelWarn, endpointLost, closing, "", ""},
		{"own close, wrapped", slog.LevelWarn, endpointLost, fmt.Errorf("recv: %w", closing), "", ""},
		{"own close, debug on", slog.LevelDebug, endpointLost, closing, "DEBUG", endpointLost},
		{"peer stopped", slog.LevelWarn, endpointLost, status.Error(codes.Unavailable, "closing transport due to: connection error: "+
			`desc = "error reading from server: EOF", received prior goaway: code: NO_ERROR, debug data: "graceful_stop"`), "", ""},
		{"peer gone", slog.LevelWarn, endpointLost, status.Error(codes.Unavailable, "connection refused"), "ERROR", endpointLost},
		{"peer gone, not gracefully", slog.LevelWarn, endpointLost, status.Error(codes.Unavailable,
			"received prior goaway: code: ENHANCE_YOUR_CALM"), "ERROR", endpointLost},
		{"not a gRPC error", slog.LevelWarn, endpointLost, fmt.Errorf("boom"), "ERROR", endpointLost},
		{"another message", slog.LevelWarn, "EndpointWriter got invalid connect response", closing, "ERROR", "invalid connect response"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			inner := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
			log := slog.New(benignEnds{minLevel{inner, c.min}}).With(slog.String("component", "protoactor"))
			log.Error(c.msg, slog.String("address", "127.0.0.1:1"), slog.Any("error", c.err))
			out := buf.String()
			if c.want == "" {
				if out != "" {
					t.Fatalf("want no line, got %q", out)
				}
				return
			}
			if !strings.Contains(out, "level="+c.want) || !strings.Contains(out, c.wantMsg) {
				t.Fatalf("want a %s line with %q, got %q", c.want, c.wantMsg, out)
			}
		})
	}
}
