// Package live carries screencasts (the live view) across the cluster:
// the actors holding the sockets at either end of a lane's frames.
//
// A screencast has one source, on the hub the worker dialled (the
// worker's dedicated screencast socket), and any number of viewers, each
// on the hub holding a viewer's socket. Between them sits the lane's live
// grain (grains.KindLive), which fans frames out: source → grain →
// viewers, acknowledgements back. Every actor here owns its socket
// through a reader and a writer goroutine and never blocks its turn.
//
// Memory is bounded by acknowledgements rather than by buffers: the
// source's reader takes the worker's next frame only after the grain
// acknowledged the previous one, and the grain sends a viewer a frame
// only after the viewer acknowledged its last, so no queue holds more
// than one frame per lane or per viewer.
package live
