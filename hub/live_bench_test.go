// The race detector's cost would be the figure: like the gateway's
// benchmarks, this one runs without it.

//go:build !race

package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkLiveViewers measures the live view with 1, 2 and 4 viewers of
// one session's animated page (a repaint every 30 ms), interleaved over
// rounds in one run: the frame rate each viewer sees (it acknowledges at
// once) and the CPU of this process — hub and worker, Chromium not
// included — per second of screencast, with its ratio to one viewer.
// Run with -benchtime=1x: each run is its rounds.
func BenchmarkLiveViewers(b *testing.B) {
	const rounds, window = 5, 3 * time.Second
	page := serveLivePage(b)
	h, err := New(testConfig(b), testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Stop(context.Background()) })
	a := startLiveAgent(b, h.URL(), "wbench", 1)
	for deadline := time.Now().Add(30 * time.Second); ; {
		ws, _ := h.Workers(b.Context())
		if len(ws) == 1 && ws[0].Alive {
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("no worker")
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, body := doTB(b, "POST", h.URL()+"/sessions", `{"idle_timeout_s":600}`)
	if st != http.StatusCreated {
		b.Fatalf("session: %d %s", st, body)
	}
	var sess struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(body, &sess); err != nil {
		b.Fatal(err)
	}
	id := sess.ID
	if st, body := doTB(b, "POST", h.URL()+"/sessions/"+id+"/commands", `{"op":"navigate","url":"`+page.URL+`"}`); st != http.StatusOK {
		b.Fatalf("navigate: %d %s", st, body)
	}
	url := liveLiveSessionURL(h, id, "")
	counts := []int{1, 2, 4}
	fps := map[int][]float64{}
	cpu := map[int][]float64{}
	perFrame := map[int][]float64{} // CPU µs per frame delivered to a viewer
	for i := 0; i < b.N; i++ {
		for r := 0; r < rounds; r++ {
			for _, n := range counts {
				f, c := liveRound(b, url, n, window)
				fps[n] = append(fps[n], f)
				cpu[n] = append(cpu[n], c)
				if f > 0 {
					perFrame[n] = append(perFrame[n], c/(f*float64(n))*1e6)
				}
			}
		}
	}
	for deadline := time.Now().Add(10 * time.Second); a.Screencasts() != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if a.Screencasts() != 0 {
		b.Errorf("%d screencasts run after the last viewer left", a.Screencasts())
	}
	f1, c1, p1 := median(fps[1]), median(cpu[1]), median(perFrame[1])
	for _, n := range counts {
		f, c, p := median(fps[n]), median(cpu[n]), median(perFrame[n])
		b.Logf("%d viewer(s): %.1f frames/s per viewer (%.2f× one viewer's), process CPU %.1f%% of a core (%.2f×), %.0f µs per viewer-frame (%.2f×)",
			n, f, f/f1, c*100, c/c1, p, p/p1)
		b.ReportMetric(p, fmt.Sprintf("cpu-µs/viewer-frame@%d", n))
		b.ReportMetric(f, fmt.Sprintf("fps/viewer@%d", n))
		b.ReportMetric(c*100, fmt.Sprintf("cpu%%@%d", n))
	}
}

// liveRound opens n acknowledging viewers, waits for frames to flow,
// then counts frames and process CPU over window.
func liveRound(b *testing.B, url string, n int, window time.Duration) (fpsPerViewer, cpuShare float64) {
	var frames atomic.Int64
	var counting atomic.Bool
	var wg sync.WaitGroup
	conns := make([]*websocket.Conn, n)
	started := make(chan struct{}, n)
	for i := range conns {
		ws, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			b.Fatal(err)
		}
		conns[i] = ws
		wg.Go(func() {
			first := true
			for {
				_, msg, err := ws.ReadMessage()
				if err != nil {
					return
				}
				var m struct {
					Type string `json:"type"`
					Seq  int64  `json:"seq"`
				}
				if json.Unmarshal(msg, &m) != nil || m.Type != "frame" {
					continue
				}
				seq := m.Seq
				if first {
					first = false
					started <- struct{}{}
				}
				if counting.Load() {
					frames.Add(1)
				}
				if ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"type":"ack","seq":%d}`, seq)) != nil {
					return
				}
			}
		})
	}
	for range n {
		select {
		case <-started:
		case <-time.After(20 * time.Second):
			b.Fatal("no frame")
		}
	}
	time.Sleep(300 * time.Millisecond)
	c0, t0 := processCPU(), time.Now()
	counting.Store(true)
	time.Sleep(window)
	counting.Store(false)
	el := time.Since(t0)
	c := processCPU() - c0
	for _, ws := range conns {
		_ = ws.Close()
	}
	wg.Wait()
	time.Sleep(500 * time.Millisecond) // the screencast stops between rounds
	return float64(frames.Load()) / float64(n) / el.Seconds(), c.Seconds() / el.Seconds()
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
