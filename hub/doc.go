// Package hub assembles one hub process: it opens the stores named by the
// config (embedded when none are), starts the cluster member and the actors,
// serves the HTTP API and the worker links, and stops all of it in order.
package hub
