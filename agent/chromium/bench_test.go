package chromium

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/paprika-hub/paprika/messages"
)

// discardUpload is an uploader that keeps nothing (benchmarks run
// thousands of jobs).
func discardUpload(_ context.Context, _, _, _ string, r io.Reader, _ int64) error {
	_, err := io.Copy(io.Discard, r)
	return err
}

// BenchmarkFetch measures fetch jobs per second of a local page (with its
// page.html and screenshot.png) with every lane busy, and the memory of the
// lanes' Chromium processes: idle (started, no page), with a loaded page
// open, and after the jobs (pages closed). Run it with
//
//	go test -run '^$' -bench BenchmarkFetch -benchtime 200x ./agent/chromium/
func BenchmarkFetch(b *testing.B) {
	s := newSite(b)
	for _, lanes := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			d, _ := newDriver(b, lanes, func(c *Config) { c.Upload = discardUpload })
			ctx := context.Background()
			var wg sync.WaitGroup
			for _, l := range d.lanes {
				wg.Go(func() {
					if _, err := l.ensure(ctx, func(string) {}); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			idleRSS, idlePSS := laneMemory(d)

			// A loaded page on every lane, as during a job.
			var tabs []*tab
			for _, l := range d.lanes {
				t, err := l.openTab(ctx, l.browser(), nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := t.runStep(ctx, step{Op: messages.OpNavigate, URL: s.URL + "/static"}, time.Minute); err != nil {
					b.Fatal(err)
				}
				tabs = append(tabs, t)
			}
			pageRSS, pagePSS := laneMemory(d)
			for _, t := range tabs {
				t.close()
			}

			var next atomic.Int64
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime(d)
			for lane := range lanes {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						r := runJob(b, d, lane, "bench", "fetch", map[string]any{"url": s.URL + "/static"}, 0)
						if r.err != nil {
							b.Error(r.err)
							return
						}
					}
				})
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), cpuTime(d)-cpu0
			b.StopTimer()
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/job")
			afterRSS, afterPSS := laneMemory(d)
			b.ReportMetric(idleRSS, "MB-rss/lane-idle")
			b.ReportMetric(idlePSS, "MB-pss/lane-idle")
			b.ReportMetric(pageRSS, "MB-rss/lane-page")
			b.ReportMetric(pagePSS, "MB-pss/lane-page")
			b.ReportMetric(afterRSS, "MB-rss/lane-after")
			b.ReportMetric(afterPSS, "MB-pss/lane-after")
		})
	}
}

// BenchmarkLaneModel compares the memory of the two ways to isolate lanes
// (doc.go): a Chromium process per lane, or one Chromium with a
// BrowserContext per lane. Each lane holds a loaded page. Metrics are the
// totals over all Chromium processes and their share per lane.
//
//	go test -run '^$' -bench BenchmarkLaneModel -benchtime 1x ./agent/chromium/
func BenchmarkLaneModel(b *testing.B) {
	s := newSite(b)
	for _, model := range []string{"process", "context"} {
		for _, lanes := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/lanes=%d", model, lanes), func(b *testing.B) {
				n := lanes
				if model == "context" {
					n = 1
				}
				d, _ := newDriver(b, n, func(c *Config) { c.Upload = discardUpload })
				ctx := context.Background()
				var roots []int
				for _, l := range d.lanes {
					bp, err := l.ensure(ctx, func(string) {})
					if err != nil {
						b.Fatal(err)
					}
					roots = append(roots, bp.pid)
				}
				for i := range lanes {
					l := d.lanes[i%len(d.lanes)]
					t, err := l.openTab(ctx, l.browser(), nil)
					if err != nil {
						b.Fatal(err)
					}
					defer t.close()
					if _, err := t.runStep(ctx, step{Op: messages.OpNavigate, URL: s.URL + "/static"}, time.Minute); err != nil {
						b.Fatal(err)
					}
				}
				time.Sleep(time.Second) // let the pages settle
				var rss, pss int64
				for b.Loop() {
					var pids []int
					for _, r := range roots {
						pids = append(pids, processTree(r)...)
					}
					rss, pss = memoryKB(pids)
				}
				b.ReportMetric(float64(rss)/1024, "MB-rss")
				b.ReportMetric(float64(pss)/1024, "MB-pss")
				b.ReportMetric(float64(rss)/1024/float64(lanes), "MB-rss/lane")
				b.ReportMetric(float64(pss)/1024/float64(lanes), "MB-pss/lane")
			})
		}
	}
}

// laneMemory is the memory of the lanes' Chromium processes per lane, in
// MB: RSS sums each process's resident set (shared pages counted in every
// process), PSS divides shared pages among their users.
func laneMemory(d *Driver) (rss, pss float64) {
	time.Sleep(500 * time.Millisecond) // let the processes settle
	var pids []int
	for _, l := range d.lanes {
		if bp := l.browser(); bp != nil {
			pids = append(pids, processTree(bp.pid)...)
		}
	}
	r, p := memoryKB(pids)
	n := float64(len(d.lanes))
	return float64(r) / 1024 / n, float64(p) / 1024 / n
}

// cpuTime is the CPU time used so far by the lanes' Chromium processes
// (with their helpers that exited and were reaped, e.g. the renderers of
// closed pages) and by this test process: the machine may be shared, so
// the machine-wide figure would count other people's work.
func cpuTime(d *Driver) time.Duration {
	var ticks int64
	for _, l := range d.lanes {
		bp := l.browser()
		if bp == nil {
			continue
		}
		for _, pid := range processTree(bp.pid) {
			stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				continue
			}
			s := string(stat)
			f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
			for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime (fields 14-17)
				n, _ := strconv.ParseInt(f[i], 10, 64)
				ticks += n
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return time.Duration(ticks)*10*time.Millisecond + self // USER_HZ is 100 on Linux
}
