package sysstat

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestParseCPU(t *testing.T) {
	t.Parallel()
	in := "cpu  100 5 50 800 20 3 2 0 7 0\ncpu0 50 2 25 400 10 1 1 0 0 0\nintr 1\n"
	got, err := parseCPU(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, cpuTimes{total: 980, idle: 820}, got, "guest columns left out")

	_, err = parseCPU(strings.NewReader("intr 1\n"))
	require.Error(t, err)
	_, err = parseCPU(strings.NewReader("cpu 1 x 3 4\n"))
	require.Error(t, err)
}

func TestParseMeminfo(t *testing.T) {
	t.Parallel()
	in := "MemTotal:       1000 kB\nMemFree:         100 kB\nMemAvailable:    250 kB\n"
	got, err := parseMeminfo(strings.NewReader(in))
	require.NoError(t, err)
	require.InDelta(t, 75.0, got, 1e-9)

	_, err = parseMeminfo(strings.NewReader("MemTotal: 1000 kB\n"))
	require.Error(t, err, "MemAvailable missing")
}

func TestCPUDelta(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	write := func(line string) {
		require.NoError(t, os.WriteFile(filepath.Join(proc, "stat"), []byte(line), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(proc, "meminfo"), []byte("MemTotal: 100 kB\nMemAvailable: 40 kB\n"), 0o644))
	write("cpu 100 0 0 900 0 0 0 0\n")
	s := &Sampler{procDir: proc, dir: t.TempDir()}
	r, err := s.Sample()
	require.NoError(t, err)
	require.Zero(t, r.CPUPct, "no previous reading yet")
	require.InDelta(t, 60.0, r.MemPct, 1e-9)

	write("cpu 130 0 0 970 0 0 0 0\n") // 30 busy of 100
	r, err = s.Sample()
	require.NoError(t, err)
	require.InDelta(t, 30.0, r.CPUPct, 1e-9)

	r, err = s.Sample() // no time passed: repeat the last figure
	require.NoError(t, err)
	require.InDelta(t, 30.0, r.CPUPct, 1e-9)
}

func TestSampleLiveHost(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	s := NewSampler(t.TempDir())
	for range 3 {
		r, err := s.Sample()
		require.NoError(t, err)
		for _, v := range []float64{r.CPUPct, r.MemPct, r.DiskPct} {
			require.GreaterOrEqual(t, v, 0.0)
			require.LessOrEqual(t, v, 100.0)
		}
		require.Positive(t, r.MemPct)
		require.Positive(t, r.DiskPct)
	}
}

func TestMissingProc(t *testing.T) {
	t.Parallel()
	s := &Sampler{procDir: filepath.Join(t.TempDir(), "nope"), dir: t.TempDir()}
	r, err := s.Sample()
	require.ErrorIs(t, err, ErrUnsupported)
	require.Zero(t, r.CPUPct)
	if runtime.GOOS == "linux" {
		require.Positive(t, r.DiskPct, "disk still measured")
	}
}
