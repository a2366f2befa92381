package miniostore_test

import (
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStreaming64MiB puts and gets a 64 MiB asset, of known and of unknown
// size, and checks the heap never grows by anything near 64 MiB: the bytes
// stream through.
//
// The heap is sampled every MiB while the bytes flow, and the collector
// runs at GOGC=10 meanwhile so that HeapAlloc stays close to what is live
// rather than to twice it. Expected: one 16 MiB part buffer (minio-go
// reads a part whole before sending it) plus small buffers. Bound: 40 MiB.
//
// Not parallel: it measures the whole process.
func TestStreaming64MiB(t *testing.T) {
	const (
		size  = 64 << 20
		bound = 40 << 20
	)
	s := setup(t)
	defer debug.SetGCPercent(debug.SetGCPercent(10))

	for _, tc := range []struct {
		name     string
		announce int64
	}{
		{"KnownSize", size},
		{"UnknownSize", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			src := func() io.Reader { return io.LimitReader(rand.NewChaCha8([32]byte{6, 4}), size) }
			want := sha256Of(t, src())

			m := newHeapMeter()
			require.NoError(t, s.Put(ctx, "job-1", "big.bin", "application/x-big", m.reader(src()), tc.announce))
			putPeak := m.peak()

			m = newHeapMeter()
			rc, info, err := s.Get(ctx, "job-1", "big.bin")
			require.NoError(t, err)
			got := sha256Of(t, m.reader(rc))
			require.NoError(t, rc.Close())
			getPeak := m.peak()

			require.EqualValues(t, size, info.Size)
			require.Equal(t, "application/x-big", info.ContentType)
			require.Equal(t, want, got, "content")
			t.Logf("heap growth: put peak %.1f MiB (allocated %.1f MiB in all), get peak %.1f MiB",
				mib(putPeak.growth), mib(putPeak.allocated), mib(getPeak.growth))
			require.Less(t, putPeak.growth, uint64(bound), "put: heap grew by %.1f MiB", mib(putPeak.growth))
			require.Less(t, getPeak.growth, uint64(bound), "get: heap grew by %.1f MiB", mib(getPeak.growth))
		})
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// heapMeter records the highest HeapAlloc seen since it was made.
type heapMeter struct {
	base, total, max uint64
	sinceSample      int
}

// heapPeak is what a heapMeter saw.
type heapPeak struct {
	growth    uint64 // highest HeapAlloc above the starting one
	allocated uint64 // bytes allocated in all (garbage included)
}

func newHeapMeter() *heapMeter {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &heapMeter{base: ms.HeapAlloc, total: ms.TotalAlloc, max: ms.HeapAlloc}
}

func (m *heapMeter) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m.max = max(m.max, ms.HeapAlloc)
}

// peak samples once more and reports.
func (m *heapMeter) peak() heapPeak {
	m.sample()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return heapPeak{growth: m.max - m.base, allocated: ms.TotalAlloc - m.total}
}

// reader samples the heap after every MiB read through it.
func (m *heapMeter) reader(r io.Reader) io.Reader { return &meteredReader{m: m, r: r} }

type meteredReader struct {
	m *heapMeter
	r io.Reader
}

func (mr *meteredReader) Read(p []byte) (int, error) {
	n, err := mr.r.Read(p)
	mr.m.sinceSample += n
	if mr.m.sinceSample >= 1<<20 {
		mr.m.sinceSample = 0
		mr.m.sample()
	}
	return n, err
}
