// Package link is the worker side of a hub: the upgrade of a worker-link
// request, the links actor that parents every WorkerConn and sends the
// workers elsewhere when the hub stops, and the WorkerConn, which owns one
// socket — one reader goroutine turning frames into messages (log lines
// straight to the log pipe), one writer draining a bounded queue — and
// forwards everything else to the grains.
package link
