// Package supervise is what every actor of a hub lives by: the restart
// strategy of the hub's parents, the middleware that turns a panic into an
// error reply and a restart, fault injection, and the timers an actor
// incarnation owns (stopped when it stops or restarts, since protoactor's
// timers outlive their actor).
package supervise
