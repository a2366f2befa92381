// Package e2e holds the end-to-end tests: they build the paprika binary,
// start real hub and worker processes on 127.0.0.1 ports, kill them, and
// assert the invariants — every job final, none run twice, no log line lost.
package e2e
