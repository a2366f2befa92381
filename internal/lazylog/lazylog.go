// Package lazylog gives a short-lived actor its own logger without paying
// for it up front. slog's Logger.With formats the attributes into the
// handler's prefix at once — a clone of the handler and a buffer per call —
// and a hub makes one such logger for every job grain and every log stream
// it activates, thousands a second, while most of them never log a line
// (their lines are debug, the hub runs at info). A logger from With here
// keeps the attributes aside and formats them only when a line is written.
package lazylog

import (
	"context"
	"log/slog"
)

// With returns l with attrs added to every line it writes, as l.With
// would; the attributes are given to l's handler only when a line passes
// its level, so a logger that never writes costs one small allocation.
func With(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	if len(attrs) == 0 {
		return l
	}
	return slog.New(&handler{parent: l.Handler(), attrs: attrs})
}

// handler holds attributes back from parent until a record is handled.
type handler struct {
	parent slog.Handler
	attrs  []slog.Attr
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.parent.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.parent.WithAttrs(h.attrs).Handle(ctx, r)
}

// WithAttrs stays lazy: the held attributes come first, as they would.
func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	all := make([]slog.Attr, 0, len(h.attrs)+len(attrs))
	return &handler{parent: h.parent, attrs: append(append(all, h.attrs...), attrs...)}
}

// WithGroup puts the held attributes outside the group, where l.With put
// them.
func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return h.parent.WithAttrs(h.attrs).WithGroup(name)
}
