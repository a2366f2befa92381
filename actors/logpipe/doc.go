// Package logpipe carries the live logs of a hub's jobs from the worker
// sockets to the log store: a router that owns one LogStream per job with
// lines on this hub (batching: 50 lines or 100 ms, the done sentinel at
// once) and the one flusher that writes every stream's batches of a tick in
// one round trip. A line budget bounds what is held in memory, so a slow
// store slows the socket readers instead of growing buffers.
package logpipe
