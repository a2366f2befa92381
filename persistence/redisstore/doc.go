// Package redisstore holds the Redis implementations of the coordination
// contracts: the LogStore (live job logs), the WorkerRegistry (the
// fleet-wide worker view), the HubRegistry (hub heartbeats) and the
// SessionStore (interactive sessions, so they outlive their hub) and the
// ApprovalStore (auth.worker_approval: approved worker ids). All
// share one *redis.Client and one key prefix (WithPrefix, default
// "paprika:"), so several deployments or tests can share a Redis without
// touching each other's keys.
//
// Key layout (<p> is the prefix):
//
//	<p>log:<job>             list    the job's log lines, index = line number
//	<p>log:<job>:done        string  "1" once the last batch was written
//	<p>logch:<job>           channel one message per written batch (see below)
//	<p>worker:<id>           string  worker record (JSON, Hub left empty), PX ttl
//	<p>worker:<id>:owner     string  id of the hub holding the socket, PX ttl
//	<p>workers               zset    worker id → last_seen (Unix ms)
//	<p>workerid:<id>         string  LAN IP bound to the worker id (no expiry)
//	<p>hub:<id>              string  hub record (JSON), PX ttl: the liveness key
//	<p>hubs                  zset    hub id → time of its last beat (Unix ms)
//	<p>hubs:info             hash    hub id → last beat's record (JSON)
//	<p>session:<id>          string  session record (JSON), PX ttl set by the hub
//	<p>sessions              zset    session ids, all scored 0 (so in id order): List's index
//	<p>approved:<id>         string  time the worker was approved (RFC 3339, no expiry)
//
// Logs and marker expire after the retention (WithRetention, default 24 h),
// refreshed by every Write.
//
// # Round trips
//
// LogStore.Write sends every batch of the call in one pipeline — per batch
// one EVALSHA of a short Lua script that does one RPUSH of the lines not yet
// stored at their index, the SET of the done marker on the last batch, one
// PUBLISH, one PEXPIRE — so one Write is one round trip whatever the number
// of jobs (hub-scaling.ja.txt: one RPUSH and one PUBLISH per line was the
// old hub's bottleneck). The PUBLISH comes after the RPUSH and the SET:
// whatever a follower hears of is already in the list. Appending at the
// batch's index (not blindly) makes Write idempotent: go-redis and the
// hub's flusher retry writes, and after a worker moves hubs two hubs may
// write one job's log; neither duplicates a line.
//
// Read is one pipeline (LRANGE + EXISTS), Len one LLEN. SessionStore
// Get is one GET; Put and Delete are one MULTI/EXEC each (SET PX + ZADD,
// DEL + ZREM); List is two round trips (ZRANGEBYLEX from the cursor, then
// MGET), plus a prune of expired ids. ApprovalStore's operations are one
// command each (SET, DEL, EXISTS). Registry writes are one MULTI/EXEC
// pipeline each; List is two round trips (the index, then the records),
// plus a rare third to prune expired entries.
//
// # Live logs
//
// A PUBLISH payload is a compact binary envelope (log_codec.go): the
// batch's From index, its done flag and its lines, length-prefixed so lines
// may hold any byte. The writer (the LogStream actor) provides From, so a
// follower can drop the lines it already read from the list.
//
// Each Subscribe opens its own Pub/Sub connection (go-redis PubSub), waited
// on until Redis confirms the subscription, so "subscribe, then read the
// backlog" has no gap. One connection per follower is fine for followers
// (a browser tab, an SDK tail); the hub's hot path is Write, which uses the
// client's pool. A subscription ends — its channel closes, Err says why —
// when its consumer falls WithSubscriberBuffer batches behind, when Redis
// drops the connection (client-output-buffer-limit pubsub, restart, network),
// when a health-check PING goes unanswered, or when its context ends. It
// never skips a batch while staying open: go-redis would silently
// reconnect and resubscribe, losing what was published meanwhile, so a
// second subscription confirmation on the stream ends the subscription
// too. Closing is the signal to resume by index with Read.
//
// # Client and errors
//
// Connect opens the shared client from a redis:// URL. Redis 7 or later is
// needed (ClaimID uses SET NX GET).
//
// Errors are wrapped with the operation and the ids involved. Failures to
// reach Redis (dial, I/O, pool timeouts, LOADING, MASTERDOWN, READONLY, OOM,
// …) wrap persistence.ErrUnavailable; a context that ended wraps its error.
// Every command runs under the caller's context: its deadline bounds the
// socket I/O, and go-redis's read and write timeouts bound the rest.
package redisstore
