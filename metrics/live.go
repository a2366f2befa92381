package metrics

import "github.com/prometheus/client_golang/prometheus"

// LiveMetrics count the live view (screencasts) on this hub.
type LiveMetrics struct {
	Viewers    prometheus.Gauge       // paprika_live_viewers
	Sources    prometheus.Gauge       // paprika_live_sources
	Frames     *prometheus.CounterVec // paprika_live_frames_total{dir}: received (from workers), sent, acked (by viewers)
	InputsSent prometheus.Counter     // paprika_live_inputs_total
	Refused    *prometheus.CounterVec // paprika_live_refused_total{what}: message, input_rate, frame
}

// Frame directions of paprika_live_frames_total.
const (
	LiveFramesReceived = "received"
	LiveFramesSent     = "sent"
	LiveFramesAcked    = "acked"
)

func newLiveMetrics(reg *prometheus.Registry) *LiveMetrics {
	m := &LiveMetrics{
		Viewers: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paprika_live_viewers",
			Help: "Live-view sockets (GET /jobs/{id}/live, /sessions/{id}/live) open on this hub."}),
		Sources: prometheus.NewGauge(prometheus.GaugeOpts{Name: "paprika_live_sources",
			Help: "Screencast sockets of workers linked to this hub (one per watched lane)."}),
		Frames: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paprika_live_frames_total",
			Help: "Screencast frames on this hub: received from workers, sent to viewers, acked by viewers."}, []string{"dir"}),
		InputsSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "paprika_live_inputs_total",
			Help: "Mouse and key events of controlling viewers this hub passed on."}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paprika_live_refused_total",
			Help: "Live-view messages refused: a viewer's bad message or input over the rate, a worker's bad frame."}, []string{"what"}),
	}
	reg.MustRegister(m.Viewers, m.Sources, m.Frames, m.InputsSent, m.Refused)
	return m
}
