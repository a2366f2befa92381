// Package tunnel carries CDP WebSockets across the cluster: the browser
// gateway's hop between the hub holding a client's socket and the hub
// holding the worker's tunnel socket.
//
// A tunnel has two ends, one actor each, on the same hub or on two: the
// client end (the Puppeteer, Playwright or chromedp socket) and the worker
// end (the worker's dedicated tunnel socket, which the worker splices to
// the lane's DevTools socket). Each end owns its WebSocket through two
// goroutines: a reader that cuts each WebSocket message into TunnelData
// pieces of at most ChunkBytes and sends them to the peer end, and a
// writer that writes the pieces the peer sent to the socket, message by
// message, streaming (a 20 MB screenshot is never held whole).
//
// Flow control is by credit, per direction: a reader may have at most
// Window credit bytes sent and not yet written by the peer's writer; the
// writer returns credit (TunnelCredit) as it writes. A client that reads
// nothing therefore stops the lane's bytes after one window, end to end
// (the worker's socket, then the lane's, back up through TCP), and each
// end's memory is bounded by the window. A peer that sends past the
// window breaks the protocol and the tunnel is closed (1008).
//
// The actor's turn never blocks: it hands pieces to the writer through a
// channel whose room the window guarantees, and wakes the reader when
// credit comes. Each end watches the other, so when the peer's hub dies
// the socket closes at once with 1011 and a reason naming what went away.
package tunnel
