package redisstore

import (
	"context"
	"log/slog"
	"sync/atomic"
)

// countingHandler counts records at Warn and above.
type countingHandler struct{ n *atomic.Int32 }

func newCountingLogger(n *atomic.Int32) *slog.Logger { return slog.New(countingHandler{n}) }

func (h countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h countingHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.n.Add(1)
	}
	return nil
}
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h countingHandler) WithGroup(string) slog.Handler      { return h }
