package persistence

// LaneHealth is one lane's browser health as its worker last reported it
// (heartbeat lane_health, health-aware placement): declared here, where the
// registry stores it, and used as the wire type by package messages.
type LaneHealth struct {
	// RSSMB is the resident memory of the lane's browser process tree in
	// MiB (0 while no browser runs).
	RSSMB int64 `json:"rss_mb"`
	// Crashes10m counts the lane's renderer crashes in the last 10 minutes.
	Crashes10m int `json:"crashes_10m"`
	// Restarts10m counts the lane's browser restarts in the last 10 minutes.
	Restarts10m int `json:"restarts_10m"`
}

// Why placement skips a worker or a lane for its health (GET /workers
// "skipped", the paprika_sched_health_skips_total reason label).
const (
	// HealthSkipShm: the worker's /dev/shm free is under
	// scheduler.min_shm_free_mb (the worker is skipped like a full disk).
	HealthSkipShm = "shm_low"
	// HealthSkipRSS: the lane's browser RSS is over scheduler.max_lane_rss_mb.
	HealthSkipRSS = "lane_rss"
	// HealthSkipCrashes: the lane's renderer crashes in 10 minutes reached
	// scheduler.max_lane_crashes_10m.
	HealthSkipCrashes = "lane_crashes"
	// HealthSkipRestarts: the lane's restarts in 10 minutes reached
	// scheduler.max_lane_restarts_10m.
	HealthSkipRestarts = "lane_restarts"
)

// HealthSkipReasons lists every health skip reason, for metrics series.
var HealthSkipReasons = []string{HealthSkipShm, HealthSkipRSS, HealthSkipCrashes, HealthSkipRestarts}
