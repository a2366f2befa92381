package membership

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"go.uber.org/zap/zapcore"
)

// slogCore is a zap core that writes to a slog logger: the etcd client logs
// through zap, and would otherwise print JSON of its own to stderr, outside
// the hub's format and level filter.
type slogCore struct {
	log    *slog.Logger
	fields []zapcore.Field
}

func zapLevel(l zapcore.Level) slog.Level {
	switch {
	case l >= zapcore.ErrorLevel:
		return slog.LevelError
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

// Enabled asks the slog handler, so its level filter decides.
func (c slogCore) Enabled(l zapcore.Level) bool {
	return c.log.Enabled(context.Background(), zapLevel(l))
}

// With keeps fields for every later record.
func (c slogCore) With(fields []zapcore.Field) zapcore.Core {
	return slogCore{log: c.log, fields: append(slices.Clip(c.fields), fields...)}
}

// Check adds this core when the level is enabled.
func (c slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write turns the fields into slog attributes, sorted by key so that one
// record always reads the same.
func (c slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	attrs := make([]slog.Attr, 0, len(enc.Fields)+1)
	for k, v := range enc.Fields {
		attrs = append(attrs, slog.Any(k, v))
	}
	slices.SortFunc(attrs, func(a, b slog.Attr) int { return strings.Compare(a.Key, b.Key) })
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	c.log.LogAttrs(context.Background(), zapLevel(e.Level), e.Message, attrs...)
	return nil
}

// Sync has nothing to flush: slog handlers write at once.
func (c slogCore) Sync() error { return nil }
