package lazylog_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paprika-hub/paprika/internal/lazylog"
)

func textLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// Every shape of use writes what slog's own With writes.
func TestWithWritesWhatSlogWithWrites(t *testing.T) {
	cases := map[string]func(l *slog.Logger, with func(*slog.Logger, ...slog.Attr) *slog.Logger){
		"one attr": func(l *slog.Logger, with func(*slog.Logger, ...slog.Attr) *slog.Logger) {
			with(l, slog.String("job_id", "j1")).Info("claimed", slog.Int("attempt", 2))
		},
		"chained With": func(l *slog.Logger, with func(*slog.Logger, ...slog.Attr) *slog.Logger) {
			with(l.With("hub_id", "h1"), slog.String("job_id", "j1")).With("worker_id", "w1").Warn("lost")
		},
		"group after": func(l *slog.Logger, with func(*slog.Logger, ...slog.Attr) *slog.Logger) {
			with(l, slog.String("job_id", "j1")).WithGroup("g").Info("x", slog.Int("n", 1))
		},
		"group before": func(l *slog.Logger, with func(*slog.Logger, ...slog.Attr) *slog.Logger) {
			with(l.WithGroup("g"), slog.String("job_id", "j1")).Info("x", slog.Int("n", 1))
		},
		"no attrs": func(l *slog.Logger, with func(*slog.Logger, ...slog.Attr) *slog.Logger) {
			with(l).Info("plain")
		},
	}
	slogWith := func(l *slog.Logger, attrs ...slog.Attr) *slog.Logger {
		args := make([]any, len(attrs))
		for i, a := range attrs {
			args[i] = a
		}
		return l.With(args...)
	}
	for name, use := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got bytes.Buffer
			use(textLogger(&want, slog.LevelInfo), slogWith)
			use(textLogger(&got, slog.LevelInfo), lazylog.With)
			assert.NotEmpty(t, want.String())
			assert.Equal(t, want.String(), got.String())
		})
	}
}

// A line below the level writes nothing and leaves the attributes unformatted.
func TestWithKeepsLevels(t *testing.T) {
	var buf bytes.Buffer
	l := lazylog.With(textLogger(&buf, slog.LevelInfo), slog.String("job_id", "j1"))
	l.Debug("hidden")
	assert.Empty(t, buf.String())
	l.Info("shown")
	assert.True(t, strings.Contains(buf.String(), "job_id=j1"), buf.String())
}

// BenchmarkWith is one activation's logger that never writes (a job grain
// at info level): slog's With against this one.
func BenchmarkWith(b *testing.B) {
	l := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil)).With("hub_id", "hub-0")
	b.Run("slog", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			l.With(slog.String("job_id", "01JB4Y2Z3X5V6W7Q8R9S0T1U2V")).Debug("x")
		}
	})
	b.Run("lazy", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			lazylog.With(l, slog.String("job_id", "01JB4Y2Z3X5V6W7Q8R9S0T1U2V")).Debug("x")
		}
	})
}
