// Package cluster starts a hub as a protoactor cluster member — even a lone
// hub is a one-member cluster, so adding hubs changes membership, not code
// paths — and holds the membership providers. It contains protoactor's
// panicking start-up (a taken port, a provider error) and turns it into an
// error for the caller.
package membership
