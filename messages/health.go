package messages

import (
	"fmt"
	"time"

	"github.com/paprika-hub/paprika/persistence"
)

// LaneHealth is one entry of a heartbeat's (or hello's) lane_health, indexed
// by lane: the lane's browser RSS and its renderer crashes and restarts in
// the last 10 minutes.
type LaneHealth = persistence.LaneHealth

// Bounds of the health a worker reports: generous for any real machine,
// tight enough that no figure overflows a sum or a display.
const (
	// MaxLaneRSSMB bounds a lane's rss_mb (16 TiB).
	MaxLaneRSSMB = 1 << 24
	// MaxHealthCount bounds crashes_10m and restarts_10m.
	MaxHealthCount = 1 << 20
	// MaxShmFreeMB bounds stats.shm_free_mb (1 PiB).
	MaxShmFreeMB = 1 << 30
	// HealthReportGap is the least time between two reports of a health
	// change (like lane_states' gap): a lane's memory moves all the time.
	HealthReportGap = 2 * time.Second
)

// checkHealth bounds lane_health and stats.shm_free_mb.
func checkHealth(lanes []LaneHealth, st *Stats) error {
	if len(lanes) > maxLanes {
		return fmt.Errorf("lane_health has %d entries, limit %d", len(lanes), maxLanes)
	}
	for i, h := range lanes {
		if h.RSSMB < 0 || h.RSSMB > MaxLaneRSSMB {
			return fmt.Errorf("lane_health[%d].rss_mb %d out of range 0..%d", i, h.RSSMB, MaxLaneRSSMB)
		}
		if h.Crashes10m < 0 || h.Crashes10m > MaxHealthCount {
			return fmt.Errorf("lane_health[%d].crashes_10m %d out of range 0..%d", i, h.Crashes10m, MaxHealthCount)
		}
		if h.Restarts10m < 0 || h.Restarts10m > MaxHealthCount {
			return fmt.Errorf("lane_health[%d].restarts_10m %d out of range 0..%d", i, h.Restarts10m, MaxHealthCount)
		}
	}
	if st != nil && st.ShmFreeMB != nil && (*st.ShmFreeMB < 0 || *st.ShmFreeMB > MaxShmFreeMB) {
		return fmt.Errorf("stats.shm_free_mb %d out of range 0..%d", *st.ShmFreeMB, MaxShmFreeMB)
	}
	return nil
}
