// Package api is the hub's HTTP interface (API.md, "HTTP API"): routing,
// authentication, input validation and error mapping. It talks to the hub
// through the small Backend interface and holds no state of its own.
package api
