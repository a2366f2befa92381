package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paprika-hub/paprika/messages"
)

func TestHistogramQuantiles(t *testing.T) {
	t.Parallel()
	h := newHistogram()
	require.Zero(t, h.quantile(0.5))
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	within := func(want, got time.Duration) {
		t.Helper()
		require.InEpsilon(t, float64(want), float64(got), 0.025, "want ≈%s, got %s", want, got)
	}
	within(500*time.Millisecond, h.quantile(0.5))
	within(990*time.Millisecond, h.quantile(0.99))
	require.Equal(t, time.Second, h.quantile(1))
	require.Equal(t, time.Second, h.max)

	o := newHistogram()
	o.record(-time.Second) // a clock step counts as zero
	o.record(5 * time.Second)
	h.merge(o)
	require.EqualValues(t, 1002, h.n)
	require.Equal(t, 5*time.Second, h.max)
	require.LessOrEqual(t, h.quantile(0.0001), time.Microsecond, "the zero sample sits in the first bucket")
}

func TestParseProc(t *testing.T) {
	t.Parallel()
	stat := []byte("4242 (paprika (hub) x) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 75 0 0 20 0 12 0 100 1000000 5000 18446744073709551615\n")
	ticks, err := parseStatTicks(stat)
	require.NoError(t, err)
	require.EqualValues(t, 325, ticks)
	_, err = parseStatTicks([]byte("4242 paprika S 1"))
	require.Error(t, err)

	rss, err := parseStatusRSS([]byte("Name:\tpaprika\nVmPeak:\t  9000 kB\nVmRSS:\t   2048 kB\nThreads:\t9\n"))
	require.NoError(t, err)
	require.EqualValues(t, 2048<<10, rss)
	_, err = parseStatusRSS([]byte("Name:\tzombie\n"))
	require.Error(t, err)

	p, err := newProcProbe(os.Getpid())
	require.NoError(t, err)
	st, err := p.read()
	require.NoError(t, err)
	require.Positive(t, st.rssBytes)
	require.Positive(t, p.clockTicks)
}

func TestParseMachineStat(t *testing.T) {
	t.Parallel()
	st, err := parseMachineStat([]byte("cpu  100 5 50 1000 20 1 2 3 7 0\ncpu0 50 2 25 500 10 0 1 1 0 0\n"))
	require.NoError(t, err)
	require.EqualValues(t, 100+5+50+1+2+3, st.busy)
	require.EqualValues(t, 100+5+50+1000+20+1+2+3, st.total, "guest time is inside user: not added twice")
	_, err = parseMachineStat([]byte("intr 1 2 3\n"))
	require.Error(t, err)
	_, err = readMachine()
	require.NoError(t, err)
}

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	m, err := parseMetrics([]byte(`# HELP paprika_log_lines_stored_total Log lines written to the log store.
# TYPE paprika_log_lines_stored_total counter
paprika_log_lines_stored_total 12345
paprika_jobs_finished_total{reason="",status="succeeded"} 7
paprika_jobs_finished_total{reason="job_error",status="failed"} 2
paprika_hub_uptime_seconds 3.5e+01
garbage line here
`))
	require.ErrorContains(t, err, "line 7", "a malformed line fails the scrape")
	require.Equal(t, 12345.0, m[metricLinesStored])
	require.Equal(t, 9.0, m["paprika_jobs_finished_total"])
	require.Equal(t, 35.0, m["paprika_hub_uptime_seconds"])
	require.Zero(t, m[metricLogWrites], "an untouched counter reads 0")
}

func TestParseRedisInfo(t *testing.T) {
	t.Parallel()
	stats := parseInfo("# Stats\r\ntotal_connections_received:5\r\ntotal_commands_processed:987\r\n")
	require.Equal(t, "987", stats["total_commands_processed"])
	calls := parseCommandStats("# Commandstats\r\ncmdstat_rpush:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_publish:calls=4,usec=8,usec_per_call=2.00\r\ncmdstat_client|setname:calls=1,usec=1\r\n")
	require.Equal(t, map[string]int64{"rpush": 10, "publish": 4, "client|setname": 1}, calls)
}

// TestRenderedLineIsAValidFrame checks the hand-built job_log frame against
// the wire contract's decoder, and that followers can read its stamp.
func TestRenderedLineIsAValidFrame(t *testing.T) {
	t.Parallel()
	f := newFleet(&Options{Lanes: 1, LineBytes: 100}, nil)
	w := newSimWorker(f, "bench-1")
	j := &simJob{id: "j-1_x", attempt: 2, prefix: []byte(`{"type":"job_log","job_id":"j-1_x","attempt":2,"seq":`)}
	before := time.Now().UnixNano()
	b := w.renderLine(nil, j, 0)
	fr, err := messages.DecodeFrame(b)
	require.NoError(t, err, string(b))
	require.Equal(t, messages.TypeJobLog, fr.Type)
	require.Equal(t, "j-1_x", fr.JobID)
	require.Equal(t, 2, fr.Attempt)
	require.Zero(t, fr.Seq)
	require.GreaterOrEqual(t, len(fr.Line), 100)
	ns, ok := stampOf([]byte(fr.Line))
	require.True(t, ok)
	require.GreaterOrEqual(t, ns, before)

	fr, err = messages.DecodeFrame(w.renderLine(nil, j, 41))
	require.NoError(t, err)
	require.EqualValues(t, 41, fr.Seq)
	require.Contains(t, fr.Line, " seq=41")
	require.True(t, json.Valid(w.renderLine(nil, j, 7)))

	_, ok = stampOf([]byte("no stamp"))
	require.False(t, ok)
}

func TestOptionsDefaultsAndJobLines(t *testing.T) {
	t.Parallel()
	o := Options{}.withDefaults()
	require.NoError(t, o.validate())
	require.Equal(t, DefaultWorkers, o.Workers)
	require.Equal(t, DefaultRate, o.Rate)
	require.Equal(t, DefaultWarmup, o.Warmup)
	require.Equal(t, DefaultFollowers, o.Followers)
	require.Equal(t, "ws://127.0.0.1:8080/workers/bench-7/link", o.linkURL("bench-7"))
	// Enough lines to outlast start timeout + warmup + window.
	require.Equal(t, int(25*(60+3+30))+1, o.jobLines(o.perJobRate()))

	o = Options{HubURL: "https://hub.example/", Lanes: 4, Rate: 100, FlatOut: true, Warmup: -1, Followers: -1}.withDefaults()
	require.Zero(t, o.Warmup)
	require.Zero(t, o.Followers)
	require.Zero(t, o.perJobRate())
	require.Equal(t, MaxJobLines, o.jobLines(o.perJobRate()))
	require.Equal(t, "wss://hub.example/workers/w/link", o.linkURL("w"))
	o.FlatOut = false
	require.Equal(t, 25.0, o.perJobRate())
}

func TestForEachStopsAtFirstError(t *testing.T) {
	t.Parallel()
	items := make([]int, 100)
	for i := range items {
		items[i] = i
	}
	var calls atomic.Int64
	boom := errors.New("boom")
	err := forEach(context.Background(), items, 4, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)
	require.Less(t, calls.Load(), int64(100))

	calls.Store(0)
	require.NoError(t, forEach(context.Background(), items, 8, func(context.Context, int) error { calls.Add(1); return nil }))
	require.EqualValues(t, 100, calls.Load())
}
