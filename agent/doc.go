// Package agent is the Paprika worker agent, on which package worker (the
// public library behind `paprika worker` and custom job types) is built.
//
// An Agent owns one link to a hub at a time (a WebSocket to
// GET {hub}/workers/{id}/link, see API.md "Worker link"), a pool of lanes
// that run jobs through a Driver, and an outbox that keeps every frame of a
// job until the hub acknowledges the job's final frame with job_ack.
//
// What it owns and why:
//
//   - The worker id. It is derived from the LAN IP (ShortID, falling back to
//     LongID when the hub answers hello with the error code id_taken) unless
//     Config.ID overrides it, so the id survives restarts and self-updates.
//   - The link: one reader goroutine, one writer goroutine with a bounded
//     control queue, ping/pong keepalive, heartbeats with real host readings
//     (package sysstat). A lost link is redialled with exponential backoff
//     and jitter, rotating through Config.HubURLs.
//   - What the hub knows of the lanes' addresses: hello carries them as
//     they are; when a LaneWatcher driver's addresses change (a browser
//     started, restarted or exited) a heartbeat carries the new list
//     within laneReportDelay, bursts coalesced (lane_report.go).
//   - The lanes: never more than Config.Lanes jobs at once; an assign_job
//     with no free lane is answered with job_failed reason "rejected".
//   - The sessions (session.go): session_command "open" reserves a lane
//     like a job (it counts toward in_flight) and opens a Session of a
//     Driver that implements SessionDriver; its commands run one at a
//     time, in order; "close", an idle session and the agent's stop free
//     the lane.
//   - Asset uploads (UploadAsset): PUT {hub}/jobs/{id}/assets/{name} to the
//     hub linked last, retried with backoff on network errors and 5xx.
//   - What runs a job: the driver's Run, or Config.JobRunner when set
//     (package worker dispatches modes to its handlers through it; hello
//     declares them from Config.Modes). A runner whose job ignores its
//     context returns an AbandonedError: the attempt is reported, and its
//     lane stays taken until the job's code returns (job_runner.go).
//   - The jobs: they run under the agent, not under the link, so they keep
//     running across a disconnect. Their frames (job_started, job_log,
//     job_done/job_failed) are retained and re-sent in order on every new
//     link until job_ack arrives; the hub de-duplicates log lines by seq.
//
// Shutdown order (Run, when its context ends): stop taking jobs and
// sessions → close the open sessions → wait for running jobs up to
// Config.StopTimeout, then cancel the rest → wait up to Config.FlushTimeout
// for the hub to acknowledge every kept frame → close the socket with a
// normal close frame.
package agent
